package api

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/temco/temco/internal/core/lifecycle"
	"github.com/temco/temco/internal/core/model"
	"github.com/temco/temco/internal/core/store"
	"github.com/temco/temco/internal/dev/testenv"
)

// operations records the operations the API starts, in place of Temporal.
type operations struct {
	started  []string // "<op> <target>"
	contexts []string // each one's context ("" for a terminate's current one)
}

func (o *operations) Operate(_ context.Context, t lifecycle.Target, req lifecycle.OpRequest) (lifecycle.OpAccepted, error) {
	o.started = append(o.started, req.Op+" "+t.ID())
	o.contexts = append(o.contexts, req.ContextID)
	return lifecycle.OpAccepted{WorkflowID: "wf", ContextID: req.ContextID}, nil
}

func (o *operations) Stop(context.Context, lifecycle.Target) (lifecycle.OpAccepted, error) {
	return lifecycle.OpAccepted{}, nil
}

func (o *operations) ReadClusters(context.Context, lifecycle.Target, lifecycle.ReadInput) error {
	return nil
}
func (o *operations) Progress(context.Context, *lifecycle.RunningOp) (lifecycle.Progress, error) {
	return lifecycle.Progress{}, nil
}
func (o *operations) Command(context.Context, lifecycle.Target, string, string, lifecycle.RolloutCommand) (lifecycle.RolloutStatus, error) {
	return lifecycle.RolloutStatus{}, nil
}
func (o *operations) Running(context.Context, lifecycle.Target, string, string) (*lifecycle.RunningOp, error) {
	return nil, nil
}

// Parts of a DIG may be created in any order, as in EMCO; instantiate then names every
// part still missing in one 409 and starts nothing, and starts once all are there.
func TestInstantiateNamesEveryMissingPart(t *testing.T) {
	ops := &operations{}
	c := newClient(t, func(s *Server) { s.Ops = ops })
	tree(t, c)
	c.do("POST", pDIG+"/intents", res("i1", map[string]any{"intent": map[string]string{
		"genericPlacementIntent": "gpix", "gac": "g", "nope": "n"}})).must(t, 201)
	c.do("POST", pDIG+"/approve", nil).must(t, 202)
	m := c.do("POST", pDIG+"/instantiate", nil).must(t, http.StatusConflict).message(t)
	for _, want := range []string{`generic placement intent "gpix" does not exist`, `app "app2" has no profile in composite profile "cprof"`,
		`names controller "nope", which is not registered`, `names action controller "gac", which temco does not implement yet`} {
		if !strings.Contains(m, want) {
			t.Errorf("message %q does not say %q", m, want)
		}
	}
	c.do("PUT", pDIG+"/intents/i1", res("i1", map[string]any{"intent": map[string]string{"genericPlacementIntent": "gpi1", "gac": "g"}})).must(t, 200)
	c.do("POST", pDIG+"/approve", nil).must(t, 202)
	m = c.do("POST", pDIG+"/instantiate", nil).must(t, http.StatusConflict).message(t)
	if !strings.Contains(m, `app "app1" has no app intent in generic placement intent "gpi1"`) {
		t.Errorf("message %q", m)
	}
	// An external controller serves gac; every app gets a profile and a placement.
	c.do("PUT", "/controllers/gac", res("gac", map[string]any{"type": "action", "priority": 1, "taskQueue": "gac"})).must(t, 200)
	c.multipart("POST", pCA+"/composite-profiles/cprof/profiles", res("prof2", map[string]any{"app": "app2"}), testenv.Profile("replicas: 1\n")).must(t, 201)
	for _, app := range []string{"app1", "app2"} {
		c.do("POST", pGPI+"/app-intents", res(app, appIntentSpec(app))).must(t, 201)
	}
	c.do("POST", pDIG+"/approve", nil).must(t, 202)
	c.do("POST", pDIG+"/instantiate", nil).must(t, http.StatusAccepted)
	if len(ops.started) != 1 || ops.started[0] != "instantiate "+pDIG {
		t.Fatalf("operations started: %v", ops.started)
	}
}

// A part of a DIG is said missing only when the store says it is absent (issue 64: a
// registered controller was said not to be). A controller whose create has not committed
// is said to be so, with when that create began; one the store fails to read answers 503
// naming it; neither is "not registered", and nothing starts.
func TestInstantiateSaysWhatItSawOfEachPart(t *testing.T) {
	ops := &operations{}
	c := newClient(t, func(s *Server) { s.Ops = ops })
	tree(t, c)
	c.multipart("POST", pCA+"/composite-profiles/cprof/profiles", res("prof2", map[string]any{"app": "app2"}), testenv.Profile("replicas: 1\n")).must(t, 201)
	for _, app := range []string{"app1", "app2"} {
		c.do("POST", pGPI+"/app-intents", res(app, appIntentSpec(app))).must(t, 201)
	}
	resources := c.store.Database().Collection("resources")
	since := time.Now().UTC().Truncate(time.Second)
	pending := &store.Doc{ID: "/controllers/pend", Kind: model.KindController, Name: "pend",
		Body: `{"metadata":{"name":"pend"},"spec":{"type":"action"}}`, PendingSince: &since}
	if _, err := resources.InsertOne(context.Background(), pending); err != nil {
		t.Fatal(err)
	}
	c.do("POST", pDIG+"/intents", res("i1", map[string]any{"intent": map[string]string{"genericPlacementIntent": "gpi1", "pend": "x"}})).must(t, 201)
	c.do("POST", pDIG+"/approve", nil).must(t, 202)
	m := c.do("POST", pDIG+"/instantiate", nil).must(t, http.StatusConflict).message(t)
	want := `intent "i1" names controller "pend", which is not committed yet: its create began at ` + since.Format(time.RFC3339)
	if !strings.Contains(m, want) || strings.Contains(m, "not registered") {
		t.Errorf("message %q does not say %q alone", m, want)
	}

	// A stored document the store cannot decode: its read fails.
	if _, err := resources.InsertOne(context.Background(), bson.D{{Key: "_id", Value: "/controllers/broken"}, {Key: "parent", Value: ""},
		{Key: "kind", Value: model.KindController}, {Key: "name", Value: "broken"}, {Key: "body", Value: 42}}); err != nil {
		t.Fatal(err)
	}
	c.do("PUT", pDIG+"/intents/i1", res("i1", map[string]any{"intent": map[string]string{"genericPlacementIntent": "gpi1", "broken": "x"}})).must(t, 200)
	c.do("POST", pDIG+"/approve", nil).must(t, 202)
	rec := httptest.NewRecorder()
	req := httptest.NewRequest("POST", "/v2"+pDIG+"/instantiate", nil)
	req.Header.Set(ClientHeader, "api-test")
	c.h.ServeHTTP(rec, req)
	var body struct{ Message string }
	_ = json.Unmarshal(rec.Body.Bytes(), &body)
	if rec.Code != http.StatusServiceUnavailable || !strings.Contains(body.Message, `reading controller "broken" failed`) ||
		strings.Contains(body.Message, "not registered") {
		t.Errorf("instantiate answered %d %q, want 503 saying the controller could not be read", rec.Code, rec.Body)
	}
	if len(ops.started) != 0 {
		t.Fatalf("operations started: %v", ops.started)
	}
}

// A GitOps cluster is registered with whatever file its client sends (EMCO's send a
// placeholder) and a known gitOpsType; an instantiate that could place an app on it is
// refused, naming what is missing, until its sync objects give the repository's access.
// An admin logical cloud may reference it, and so may a standard one on a fluxcd cluster.
func TestInstantiateChecksGitOpsClusters(t *testing.T) {
	ops := &operations{}
	c := newClient(t, func(s *Server) { s.Ops = ops })
	tree(t, c)
	bad := res("g0", map[string]any{"gitOps": map[string]string{"gitOpsType": "azureArc", "gitOpsReferenceObject": "r"}})
	m := c.multipart("POST", "/cluster-providers/cp1/clusters", bad, []byte("x")).must(t, 400).message(t)
	if !strings.Contains(m, `gitOpsType "azureArc" is not supported`) {
		t.Errorf("message %q", m)
	}
	gitops := res("g1", map[string]any{"gitOps": map[string]string{"gitOpsType": "fluxv2", "gitOpsReferenceObject": "r", "gitOpsResourceObject": "o"}})
	c.multipart("POST", "/cluster-providers/cp1/clusters", gitops, []byte("placeholder: not a kubeconfig\n")).must(t, 201)
	c.do("POST", "/cluster-providers/cp1/clusters/g1/labels", map[string]string{"clusterLabel": "edge"}).must(t, 201)
	c.do("POST", pDIG+"/intents", res("i1", map[string]any{"intent": map[string]string{"genericPlacementIntent": "gpi1"}})).must(t, 201)
	c.multipart("POST", pCA+"/composite-profiles/cprof/profiles", res("prof2", map[string]any{"app": "app2"}), testenv.Profile("replicas: 1\n")).must(t, 201)
	c.do("POST", pGPI+"/app-intents", res("a1", appIntentSpec("app1"))).must(t, 201)
	c.do("POST", pGPI+"/app-intents", res("a2", map[string]any{"app": "app2", "intent": map[string]any{
		"allOf": []any{map[string]any{"clusterProvider": "cp1", "clusterLabel": "edge"}}}})).must(t, 201)
	c.do("POST", pDIG+"/approve", nil).must(t, 202)
	m = c.do("POST", pDIG+"/instantiate", nil).must(t, http.StatusConflict).message(t)
	for _, want := range []string{`app intent "a2" may place app "app2" on GitOps cluster cp1+g1: its gitOpsReferenceObject "r" is not a cluster sync object`,
		`its gitOpsResourceObject "o" is not a cluster sync object`} {
		if !strings.Contains(m, want) {
			t.Errorf("message %q lacks %q", m, want)
		}
	}
	sync := "/cluster-providers/cp1/cluster-sync-objects"
	c.do("POST", sync, res("r", map[string]any{"kv": []any{map[string]string{"url": "http://git/r.git"}, map[string]string{"gitToken": "t0k"}}})).must(t, 201)
	c.do("POST", sync, res("o", map[string]any{"kv": []any{map[string]string{"timeOut": "soon"}}})).must(t, 201)
	m = c.do("POST", pDIG+"/instantiate", nil).must(t, http.StatusConflict).message(t)
	for _, want := range []string{`its gitOpsReferenceObject "r" lacks userName, repoName, branch`, `its gitOpsResourceObject "o": timeOut "soon" is not a positive number of seconds`} {
		if !strings.Contains(m, want) {
			t.Errorf("message %q lacks %q", m, want)
		}
	}
	if len(ops.started) != 0 {
		t.Fatalf("operations started: %v", ops.started)
	}
	c.do("PUT", sync+"/r", res("r", map[string]any{"kv": []any{map[string]string{"url": "http://git/r.git"}, map[string]string{"gitToken": "********"},
		map[string]string{"userName": "u"}, map[string]string{"repoName": "r"}, map[string]string{"branch": "main"}}})).must(t, 200)
	c.do("PUT", sync+"/o", res("o", map[string]any{"kv": []any{map[string]string{"timeOut": "30"}}})).must(t, 200)
	c.do("POST", pDIG+"/instantiate", nil).must(t, http.StatusAccepted)

	// Logical clouds: an admin one may reference it; a standard one too on a fluxcd or
	// anthos cluster whose sync objects are complete, not on an azureArcV2 one.
	c.do("POST", pP+"/logical-clouds/lc1/cluster-references", res("g1", map[string]any{"clusterProvider": "cp1", "cluster": "g1"})).must(t, 201)
	c.do("POST", pP+"/logical-clouds/lc1/instantiate", nil).must(t, http.StatusAccepted)
	for name, typ := range map[string]string{"g2": "azureArcV2", "g3": "anthos"} {
		c.multipart("POST", "/cluster-providers/cp1/clusters", res(name, map[string]any{"gitOps": map[string]string{
			"gitOpsType": typ, "gitOpsReferenceObject": "r", "gitOpsResourceObject": "o"}}), []byte("x")).must(t, 201)
		c.do("POST", pP+"/logical-clouds/lc2/cluster-references", res(name, map[string]any{"clusterProvider": "cp1", "cluster": name})).must(t, 201)
	}
	m = c.do("POST", pP+"/logical-clouds/lc2/instantiate", nil).must(t, http.StatusConflict).message(t)
	for _, want := range []string{`cluster reference "g2" names GitOps cluster cp1+g2: standard and privileged logical clouds are set up only on fluxcd and anthos GitOps clusters; on azureArcV2`,
		"Flux configuration made through Azure's REST API (which temco does not call)"} {
		if !strings.Contains(m, want) {
			t.Errorf("message %q lacks %q", m, want)
		}
	}
	if strings.Contains(m, "g3") {
		t.Errorf("the anthos cluster refused: %q", m)
	}
	for _, name := range []string{"g2", "g3"} {
		c.do("DELETE", pP+"/logical-clouds/lc2/cluster-references/"+name, nil).must(t, 204)
	}
	c.do("POST", pP+"/logical-clouds/lc2/cluster-references", res("g1", map[string]any{"clusterProvider": "cp1", "cluster": "g1"})).must(t, 201)
	c.do("PUT", sync+"/r", res("r", map[string]any{"kv": []any{map[string]string{"url": "http://git/r.git"}}})).must(t, 200)
	m = c.do("POST", pP+"/logical-clouds/lc2/instantiate", nil).must(t, http.StatusConflict).message(t)
	if want := `cluster reference "g1" names GitOps cluster cp1+g1: its gitOpsReferenceObject "r" lacks`; !strings.Contains(m, want) {
		t.Errorf("message %q lacks %q", m, want)
	}
	c.do("PUT", sync+"/r", res("r", map[string]any{"kv": []any{map[string]string{"url": "http://git/r.git"}, map[string]string{"gitToken": "t0k"},
		map[string]string{"userName": "u"}, map[string]string{"repoName": "r"}, map[string]string{"branch": "main"}}})).must(t, 200)
	c.do("POST", pP+"/logical-clouds/lc2/instantiate", nil).must(t, http.StatusAccepted)
}

// A DIG's missing parts are named in the order they were read: apps, logical cloud,
// composite profile, placement intent, each app's profile, app intent and dependencies,
// then the controllers by name (one that runs needs a task queue or to be built in).
func TestDIGPartsMissing(t *testing.T) {
	ready := func() *digParts {
		return &digParts{spec: model.DIGSpec{CompositeProfile: "cp", LogicalCloud: "lc"}, ca: pCA,
			apps:     []appPart{{name: "a"}, {name: "b", deps: []string{"a"}}},
			profiles: map[string]bool{"a": true, "b": true}, gpi: "gpi", placed: map[string]bool{"a": true, "b": true},
			controllers: map[string]controllerPart{
				"hpa": {intent: "i1", spec: model.ControllerSpec{Type: model.ControllerPlacement}},
				"ext": {intent: "i2", spec: model.ControllerSpec{Type: model.ControllerAction, TaskQueue: "ext"}},
				"rs":  {intent: "i3", spec: model.ControllerSpec{Type: "other"}},
			}}
	}
	builtin := func(name, _ string) bool { return name == "hpa" }
	for _, tc := range []struct {
		name   string
		change func(*digParts)
		want   []string
	}{
		{"ready", func(*digParts) {}, nil},
		{"no apps", func(p *digParts) { p.apps = nil }, []string{`composite app ` + describe(pCA) + ` has no apps`}},
		{"parts absent", func(p *digParts) {
			p.cloudWhy, p.profiles, p.profileWhy, p.placed, p.placedWhy = "does not exist", nil, "does not exist", nil, "is not committed yet"
		}, []string{`logical cloud "lc" does not exist`, `composite profile "cp" does not exist`,
			`generic placement intent "gpi" is not committed yet`}},
		{"no placement intent", func(p *digParts) { p.gpi, p.placed = "", nil },
			[]string{`no intents of the DIG name a ` + model.GenericPlacementIntentKey}},
		{"apps without parts", func(p *digParts) {
			p.profiles, p.placed = map[string]bool{"b": true}, map[string]bool{"a": true}
			p.apps[0].deps = []string{"x", "b"}
		}, []string{`app "a" has no profile in composite profile "cp"`, `app "a" depends on app "x", which is not in the composite app`,
			`app "b" has no app intent in generic placement intent "gpi"`}},
		{"controllers", func(p *digParts) {
			p.controllers["nope"] = controllerPart{intent: "i4", why: "is not registered"}
			p.controllers["gac"] = controllerPart{intent: "i5", spec: model.ControllerSpec{Type: model.ControllerAction}}
		}, []string{`intent "i5" names action controller "gac", which temco does not implement` + emcoHint("gac", ""),
			`intent "i4" names controller "nope", which is not registered`}},
	} {
		p := ready()
		tc.change(p)
		if got := p.missing(builtin); strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
			t.Errorf("%s: missing\n%s\nwant\n%s", tc.name, strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
		}
	}
}
