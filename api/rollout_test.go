package api

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/temco/temco/cmd/temco/emcoctl"
	"github.com/temco/temco/internal/core/lifecycle"
)

const pRollout = pDIG + "/rollout-strategies"

// ringsSpec is the spec of the emcoctl example in rollout.yaml below, with a failure budget.
func ringsSpec() map[string]any {
	return map[string]any{
		"stages": []any{
			map[string]any{"name": "canary", "clusters": []string{"c1"}, "before": []any{map[string]any{"type": "approval"}},
				"progressDeadline": "5m"},
			map[string]any{"name": "rest", "maxConcurrency": "50%", "maxFailures": 1},
		},
		"rollback": "auto",
	}
}

func TestRolloutStrategyResource(t *testing.T) {
	c, srv, ops := lifecycleClient(t)

	created := c.do("POST", pRollout, res("rings", ringsSpec())).must(t, http.StatusCreated)
	// Stored as the API reads it: durations as Go writes them, shares as "N%", counts as numbers.
	want := `{"metadata":{"name":"rings","description":"d-rings","userData1":"","userData2":""},"spec":{"stages":[` +
		`{"name":"canary","clusters":["c1"],"progressDeadline":"5m0s","before":[{"type":"approval"}]},` +
		`{"name":"rest","maxConcurrency":"50%","maxFailures":1}],"rollback":"auto"}}`
	if string(created.body) != want {
		t.Errorf("created\n%s\nwant\n%s", created.body, want)
	}
	if r := c.do("GET", pRollout+"/rings", nil).must(t, http.StatusOK); string(r.body) != want {
		t.Errorf("GET answered %s", r.body)
	}
	if r := c.do("GET", pRollout, nil).must(t, http.StatusOK); string(r.body) != "["+want+"]" {
		t.Errorf("list answered %s", r.body)
	}

	// One strategy per DIG: a second one is refused, by POST or PUT, naming the first.
	second := `deployment intent group "dig1" already has rollout strategy "rings": a deployment intent group has one rollout strategy at most; replace it (PUT) or delete it first`
	refused(t, c.do("POST", pRollout, res("other", ringsSpec())), second)
	refused(t, c.do("PUT", pRollout+"/other", res("other", ringsSpec())), second)
	if m := c.do("POST", pRollout, res("rings", ringsSpec())).must(t, http.StatusConflict).message(t); !strings.Contains(m, "already exists") {
		t.Errorf("duplicate message %q", m)
	}

	// Replaced, with unknown fields ignored as in every other resource.
	changed := `{"metadata":{"name":"rings","colour":"red"},"spec":{"stages":[{"name":"all","sortByLabel":"ring","maxUnavailable":"10%",` +
		`"minSuccessTime":"90s","after":[{"type":"wait","duration":"1h"}],` +
		`"window":{"cron":"0 22 * * 1-5","duration":"6h","timeZone":"Europe/Paris"},"surge":3}],"rollback":"manual","extra":true}}`
	c.do("PUT", pRollout+"/rings", changed).must(t, http.StatusOK)
	wantChanged := `{"metadata":{"name":"rings","description":"","userData1":"","userData2":""},"spec":{"stages":[{"name":"all","sortByLabel":"ring","maxUnavailable":"10%",` +
		`"minSuccessTime":"1m30s","after":[{"type":"wait","duration":"1h0m0s"}],` +
		`"window":{"cron":"0 22 * * 1-5","duration":"6h0m0s","timeZone":"Europe/Paris"}}],"rollback":"manual"}}`
	if r := c.do("GET", pRollout+"/rings", nil).must(t, http.StatusOK); string(r.body) != wantChanged {
		t.Errorf("after PUT\n%s\nwant\n%s", r.body, wantChanged)
	}
	c.do("PUT", pRollout+"/rings", res("other", ringsSpec())).must(t, http.StatusBadRequest)

	// The DIG must exist; so must the item.
	orphan := pCA + "/deployment-intent-groups/nope/rollout-strategies"
	for _, r := range []response{c.do("POST", orphan, res("rings", ringsSpec())), c.do("GET", orphan, nil),
		c.do("PUT", orphan+"/rings", res("rings", ringsSpec()))} {
		if m := r.must(t, http.StatusNotFound).message(t); !strings.Contains(m, `deployment intent group "nope"`) {
			t.Errorf("missing DIG: message %q", m)
		}
	}
	c.do("GET", orphan+"/rings", nil).must(t, http.StatusNotFound)
	c.do("GET", pRollout+"/nope", nil).must(t, http.StatusNotFound)
	c.do("DELETE", pRollout+"/nope", nil).must(t, http.StatusNotFound)

	// The strategy is the DIG's child: the DIG is not deleted before it.
	c.do("DELETE", pGPI, nil).must(t, http.StatusNoContent)
	if m := c.do("DELETE", pDIG, nil).must(t, http.StatusConflict).message(t); m !=
		`deployment intent group "dig1" cannot be deleted: delete its rollout strategy "rings" first` {
		t.Errorf("DIG delete message %q", m)
	}

	// Changed in any state of the DIG, without withdrawing its approval: how it rolls out
	// is not what it deploys.
	c.do("POST", pDIG+"/approve", nil).must(t, http.StatusAccepted)
	c.do("PUT", pRollout+"/rings", res("rings", ringsSpec())).must(t, http.StatusOK)
	if got := stateOf(t, srv, pDIG).Current(); got != lifecycle.StateApproved {
		t.Errorf("state after changing the strategy of an approved DIG: %s, want Approved", got)
	}
	record(t, srv, pDIG, lifecycle.StateInstantiated, "ctx-1", lifecycle.StatusInstantiating)
	c.do("PUT", pRollout+"/rings", res("rings", ringsSpec())).must(t, http.StatusOK)
	c.do("DELETE", pRollout+"/rings", nil).must(t, http.StatusNoContent)
	c.do("GET", pRollout+"/rings", nil).must(t, http.StatusNotFound)
	c.do("POST", pRollout, res("rings2", ringsSpec())).must(t, http.StatusCreated)
	if got := stateOf(t, srv, pDIG).Current(); got != lifecycle.StateInstantiated {
		t.Errorf("state after changing the strategy of an instantiated DIG: %s", got)
	}
	if len(ops.started) != 0 {
		t.Errorf("operations started: %v", ops.started)
	}
}

func TestRolloutStrategyRefusesInvalidSpecs(t *testing.T) {
	c := newClient(t)
	tree(t, c)
	stage := func(kv ...any) map[string]any {
		st := map[string]any{"name": "s"}
		for i := 0; i+1 < len(kv); i += 2 {
			st[kv[i].(string)] = kv[i+1]
		}
		return st
	}
	spec := func(stages ...map[string]any) map[string]any {
		return map[string]any{"stages": stages}
	}
	for _, tc := range []struct {
		spec any
		want string
	}{
		{map[string]any{}, "spec.stages: a rollout strategy needs at least one stage"},
		{spec(stage(), stage("name", "b", "maxConcurrency", 0)), "spec.stages[1]: maxConcurrency: 0 is below 1"},
		{spec(stage("maxFailures", "120%")), "spec.stages[0]: maxFailures: 120% is above 100%"},
		{spec(stage(), stage()), `spec.stages[1]: stage name "s" is used twice`},
		{spec(stage("name", "Canary")), `spec.stages[0]: name "Canary": a stage name is 1 to 63 lower-case letters, digits and '-'`},
		{map[string]any{"stages": []any{stage()}, "rollback": "sometimes"}, `spec.rollback: "sometimes" is neither "auto" nor "manual"`},
		{spec(stage("before", []any{map[string]any{"type": "wait"}})), "spec.stages[0]: before[0]: a wait needs a positive duration"},
		{spec(stage("window", map[string]any{"cron": "0 22 * * *", "duration": "1h", "timeZone": "Mars/Olympus"})),
			`spec.stages[0]: window: timeZone "Mars/Olympus" is not a known time zone (an IANA name such as Europe/Paris)`},
		{spec(stage("window", map[string]any{"cron": "every night", "duration": "1h"})),
			`spec.stages[0]: window: cron "every night": expected exactly 5 fields, found 2: [every night]`},
		// Values that are not of their type are refused while reading the body, naming the field.
		{spec(stage(), stage("name", "b", "progressDeadline", "5 minutes")),
			`request body is not valid JSON: spec.stages[1]: progressDeadline: "5 minutes" is not a duration (such as "90s" or "10m")`},
		{spec(stage("maxConcurrency", "half")),
			`request body is not valid JSON: spec.stages[0]: maxConcurrency: "half" is not a count or a percentage such as "25%"`},
		{map[string]any{"stages": "all"}, `request body is not valid JSON: field "spec.stages" must be []rollout.Stage, not string`},
	} {
		r := c.do("POST", pRollout, res("bad", tc.spec)).must(t, http.StatusBadRequest)
		if m := r.message(t); m != tc.want {
			t.Errorf("spec %v:\nmessage %q\nwant    %q", tc.spec, m, tc.want)
		}
	}
	var all []any
	c.do("GET", pRollout, nil).must(t, http.StatusOK).json(t, &all)
	if len(all) != 0 {
		t.Errorf("invalid specs were stored: %v", all)
	}
}

// `temco apply -f` creates the strategy from an emcoctl file and `temco delete -f`
// removes it: emcoctl addresses it by its anchor like any other resource.
func TestRolloutStrategyFromEmcoctlFiles(t *testing.T) {
	c := newClient(t)
	tree(t, c)
	api := httptest.NewServer(c.h)
	t.Cleanup(api.Close)
	file := filepath.Join(t.TempDir(), "rollout.yaml")
	if err := os.WriteFile(file, []byte(`version: emco/v2
resourceContext:
  anchor: projects/p1/composite-apps/ca/v1/deployment-intent-groups/dig1/rollout-strategies
metadata:
  name: rings
spec:
  stages:
  - name: canary
    clusters: [c1]
    before: [{type: approval}]
    progressDeadline: 5m
  - name: rest
    maxConcurrency: "50%"
  rollback: auto
`), 0o600); err != nil {
		t.Fatal(err)
	}
	docs, err := emcoctl.Load([]string{file}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	run := &emcoctl.Runner{API: api.URL, Out: &out, HTTP: api.Client(), Timeout: 10 * time.Second}
	ctx := context.Background()

	if err := run.Apply(ctx, docs); err != nil {
		t.Fatalf("apply: %v\n%s", err, out.String())
	}
	want := `{"metadata":{"name":"rings","description":"","userData1":"","userData2":""},"spec":{"stages":[` +
		`{"name":"canary","clusters":["c1"],"progressDeadline":"5m0s","before":[{"type":"approval"}]},` +
		`{"name":"rest","maxConcurrency":"50%"}],"rollback":"auto"}}`
	if r := c.do("GET", pRollout+"/rings", nil).must(t, http.StatusOK); string(r.body) != want {
		t.Errorf("applied\n%s\nwant\n%s", r.body, want)
	}
	if err := run.Update(ctx, docs); err != nil {
		t.Fatalf("update: %v\n%s", err, out.String())
	}
	if err := run.Delete(ctx, docs); err != nil {
		t.Fatalf("delete: %v\n%s", err, out.String())
	}
	c.do("GET", pRollout+"/rings", nil).must(t, http.StatusNotFound)
	anchor := "projects/p1/composite-apps/ca/v1/deployment-intent-groups/dig1/rollout-strategies"
	if got, want := out.String(), "1 "+anchor+": POST /v2/"+anchor+" 201\n"+
		"1 "+anchor+": PUT /v2/"+anchor+"/rings 200\n"+
		"1 "+anchor+": DELETE /v2/"+anchor+"/rings 204\n"; got != want {
		t.Errorf("output\n%s\nwant\n%s", got, want)
	}
}

// The OpenAPI document describes the strategy as it is written: durations as strings,
// shares as a count or a "N%" string; docs/rollout.md's example validates against it.
func TestRolloutStrategyInOpenAPI(t *testing.T) {
	c := newClient(t)
	doc, err := openapi3.NewLoader().LoadFromData(c.do("GET", "/openapi.yaml", nil).must(t, http.StatusOK).body)
	if err != nil {
		t.Fatal(err)
	}
	path := "/v2/projects/{project}/composite-apps/{compositeApp}/{version}/deployment-intent-groups/{deploymentIntentGroup}/rollout-strategies"
	coll, item := doc.Paths.Find(path), doc.Paths.Find(path+"/{rolloutStrategy}")
	if coll == nil || item == nil || coll.Post == nil || coll.Get == nil || item.Get == nil || item.Put == nil || item.Delete == nil {
		t.Fatalf("rollout strategy routes missing from the document")
	}
	schema := coll.Post.RequestBody.Value.Content.Get("application/json").Schema.Value
	stage := schema.Properties["spec"].Value.Properties["stages"].Value.Items.Value
	if typ := stage.Properties["progressDeadline"].Value.Type; !typ.Is("string") {
		t.Errorf("progressDeadline is %v, want a string", typ)
	}
	if one := stage.Properties["maxConcurrency"].Value.OneOf; len(one) != 2 || !one[0].Value.Type.Is("integer") || !one[1].Value.Type.Is("string") {
		t.Errorf("maxConcurrency is not an integer or a string")
	}
	valid := func(spec map[string]any) error {
		var body any
		data, _ := json.Marshal(res("rings", spec))
		_ = json.Unmarshal(data, &body)
		return schema.VisitJSON(body)
	}
	if err := valid(ringsSpec()); err != nil {
		t.Errorf("docs/rollout.md's example does not match the schema: %v", err)
	}
	for _, bad := range []map[string]any{
		{"stages": []any{map[string]any{"name": "a", "maxConcurrency": true}}},
		{"stages": []any{map[string]any{"name": "a", "maxFailures": "half"}}},
		{"stages": []any{map[string]any{"name": "a", "progressDeadline": 600}}},
	} {
		if valid(bad) == nil {
			t.Errorf("%v matches the schema", bad)
		}
	}
}
