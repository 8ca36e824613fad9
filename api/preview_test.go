package api_test

// The route of features/preview, served by the api (export_features_test.go).

import (
	"context"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/temco/temco/api"
	"github.com/temco/temco/features/preview"
	"github.com/temco/temco/features/preview/flow"
	"github.com/temco/temco/internal/core/lifecycle"
	"github.com/temco/temco/starter"
)

// previews records the previews the API asks for and answers them as told.
type previews struct {
	asked  []flow.PreviewInput
	answer func(ctx context.Context, in flow.PreviewInput) (flow.RolloutPreview, error)
}

func (p *previews) Preview(ctx context.Context, in flow.PreviewInput) (flow.RolloutPreview, error) {
	p.asked = append(p.asked, in)
	return p.answer(ctx, in)
}

// previewClient serves the preview route over p, waiting wait for a preview (0: its
// default).
func previewClient(t *testing.T, wait time.Duration) (*api.FeatureClient, *previews) {
	p := &previews{answer: func(_ context.Context, in flow.PreviewInput) (flow.RolloutPreview, error) {
		return flow.RolloutPreview{Op: lifecycle.OpInstantiate, Revision: 1, Limit: in.Limit,
			Stages: []flow.PreviewStage{{Name: flow.PreviewAllStage, Clusters: []flow.ClusterPreview{{Cluster: "cp1+c1",
				Added: []string{"Deployment/default/app1"}, Changed: []string{}, Removed: []string{}}}}}}, nil
	}}
	return api.NewFeatureClient(t, preview.Routes{Previewer: p, Wait: wait}.Extension()), p
}

// A preview needs a DIG that could run an operation, complete; it answers what the
// previewer answered, and records nothing in the DIG's history.
func TestPreviewAnswersForADIGThatCouldRunAnOperation(t *testing.T) {
	c, p := previewClient(t, 0)
	m := c.Do("POST", pDIG+"/rollout-preview", nil).Must(t, http.StatusConflict).Message(t)
	if want := digName + " is Created: a rollout preview shows its next instantiate (when it is Approved or Terminated) or update (when it is Instantiated)"; m != want {
		t.Errorf("message %q\nwant    %q", m, want)
	}
	c.Do("POST", pDIG+"/approve", nil).Must(t, 202)
	m = c.Do("POST", pDIG+"/rollout-preview", nil).Must(t, http.StatusConflict).Message(t)
	if !strings.Contains(m, "cannot be instantiated yet") || !strings.Contains(m, `app "app2" has no profile`) {
		t.Errorf("message %q does not name the missing parts", m)
	}
	if len(p.asked) != 0 {
		t.Fatalf("previews started: %+v", p.asked)
	}
	c.Complete(t)
	c.Do("POST", pDIG+"/approve", nil).Must(t, 202)
	before := c.StateOf(t, pDIG)
	var out flow.RolloutPreview
	c.Do("POST", pDIG+"/rollout-preview", nil).Must(t, http.StatusOK).JSON(t, &out)
	if out.Op != lifecycle.OpInstantiate || len(out.Stages) != 1 || out.Stages[0].Clusters[0].Added[0] != "Deployment/default/app1" {
		t.Errorf("answer %+v", out)
	}
	if len(p.asked) != 1 {
		t.Fatalf("previews asked: %+v", p.asked)
	}
	in := p.asked[0]
	if in.DIG.ID() != pDIG || in.ContextID == "" || in.Revision != 0 || in.Limit != preview.DefaultLimit {
		t.Errorf("preview input %+v", in)
	}
	if after := c.StateOf(t, pDIG); !slices.Equal(after.Actions, before.Actions) {
		t.Errorf("history changed: %+v, was %+v", after.Actions, before.Actions)
	}
	if len(c.Started()) != 0 {
		t.Errorf("operations started: %v", c.Started())
	}
}

// limit bounds the clusters detailed per stage: 0 to 500; anything else is a 400.
func TestPreviewLimit(t *testing.T) {
	c, p := previewClient(t, 0)
	c.Complete(t)
	c.Do("POST", pDIG+"/approve", nil).Must(t, 202)
	for _, bad := range []string{"abc", "-1", "501", "2.5", ""} {
		m := c.Do("POST", pDIG+"/rollout-preview?limit="+bad, nil).Must(t, http.StatusBadRequest).Message(t)
		if !strings.Contains(m, "is not a number of clusters from 0 to 500") {
			t.Errorf("limit=%s: message %q", bad, m)
		}
	}
	for _, good := range []int{0, 7, 500} {
		c.Do("POST", pDIG+"/rollout-preview?limit="+strconv.Itoa(good), nil).Must(t, http.StatusOK)
		if got := p.asked[len(p.asked)-1].Limit; got != good {
			t.Errorf("limit=%d asked for %d", good, got)
		}
	}
}

// With a revision in its body, a preview shows a rollback to it: the revision must be one
// of the current instance's.
func TestPreviewOfARollback(t *testing.T) {
	c, p := previewClient(t, 0)
	c.Complete(t)
	c.Do("POST", pDIG+"/approve", nil).Must(t, 202)
	m := c.Do("POST", pDIG+"/rollout-preview", map[string]any{"revision": 1}).Must(t, http.StatusConflict).Message(t)
	if want := digName + " is Approved: rollback needs one of [Instantiated]"; m != want {
		t.Errorf("message %q\nwant    %q", m, want)
	}
	c.Record(t, pDIG, lifecycle.StateInstantiated, "41", lifecycle.StatusInstantiated)
	m = c.Do("POST", pDIG+"/rollout-preview", map[string]any{"revision": 5}).Must(t, http.StatusBadRequest).Message(t)
	if want := digName + " has no revision 5 in its current instance (revisions 1 to 1)"; m != want {
		t.Errorf("message %q\nwant    %q", m, want)
	}
	c.Do("POST", pDIG+"/rollout-preview", `{"revision": "x"}`).Must(t, http.StatusBadRequest)
	c.Do("POST", pDIG+"/rollout-preview", map[string]any{"revision": 1}).Must(t, http.StatusOK)
	c.Do("POST", pDIG+"/rollout-preview", map[string]any{"spec": map[string]any{"revision": "1"}}).Must(t, http.StatusOK)
	c.Do("POST", pDIG+"/rollout-preview", "{}").Must(t, http.StatusOK)
	var revs []int64
	for _, in := range p.asked {
		revs = append(revs, in.Revision)
	}
	if !slices.Equal(revs, []int64{1, 1, 0}) {
		t.Errorf("revisions asked %v, want [1 1 0]", revs)
	}
}

// What the preview's workflow refuses is a 409 with its reason; a preview that could not
// finish, or not in time, is a 503 to retry.
func TestPreviewErrors(t *testing.T) {
	c, p := previewClient(t, 50*time.Millisecond)
	c.Complete(t)
	c.Do("POST", pDIG+"/approve", nil).Must(t, 202)
	p.answer = func(context.Context, flow.PreviewInput) (flow.RolloutPreview, error) {
		return flow.RolloutPreview{}, &starter.Refused{Message: `rollout strategy "rings": no stage selects cluster(s) cp1+c1`}
	}
	m := c.Do("POST", pDIG+"/rollout-preview", nil).Must(t, http.StatusConflict).Message(t)
	if m != `rollout strategy "rings": no stage selects cluster(s) cp1+c1` {
		t.Errorf("message %q", m)
	}
	unavailable := func(want string) {
		t.Helper()
		rec := c.Serve(httptest.NewRequest("POST", "/v2"+pDIG+"/rollout-preview", nil))
		if rec.Code != http.StatusServiceUnavailable || rec.Header().Get("Retry-After") == "" || !strings.Contains(rec.Body.String(), want) {
			t.Errorf("answer %d %q (Retry-After %q), want 503 saying %q", rec.Code, rec.Body, rec.Header().Get("Retry-After"), want)
		}
	}
	p.answer = func(context.Context, flow.PreviewInput) (flow.RolloutPreview, error) {
		return flow.RolloutPreview{}, &flow.PreviewFailed{Message: "activity StartToClose timeout"}
	}
	unavailable("could not finish: activity StartToClose timeout; retry")
	p.answer = func(ctx context.Context, _ flow.PreviewInput) (flow.RolloutPreview, error) {
		<-ctx.Done()
		return flow.RolloutPreview{}, ctx.Err()
	}
	unavailable("did not finish within 50ms; retry")
}

// The OpenAPI document describes the preview: an optional body, the limit, the answer.
func TestPreviewIsDocumented(t *testing.T) {
	c, _ := previewClient(t, 0)
	doc, err := openapi3.NewLoader().LoadFromData(c.Do("GET", "/openapi.yaml", nil).Must(t, http.StatusOK).Body())
	if err != nil {
		t.Fatal(err)
	}
	item := doc.Paths.Find("/v2/projects/{project}/composite-apps/{compositeApp}/{version}/deployment-intent-groups/{deploymentIntentGroup}/rollout-preview")
	if item == nil || item.Post == nil {
		t.Fatal("POST .../rollout-preview is not documented")
	}
	op := item.Post
	if op.RequestBody == nil || op.RequestBody.Value.Required {
		t.Error("the body is not documented as optional")
	}
	if op.Parameters.GetByInAndName("query", "limit") == nil || !strings.Contains(op.Description, "limit (0 to 500, default 100)") {
		t.Errorf("the limit is not documented: %q", op.Description)
	}
	ok := op.Responses.Value("200")
	if ok == nil {
		t.Fatal("no 200 answer documented")
	}
	schema := ok.Value.Content.Get("application/json").Schema.Value
	stage := schema.Properties["stages"].Value.Items.Value
	cluster := stage.Properties["clusters"].Value.Items.Value
	for _, p := range []string{"added", "changed", "removed", "unchanged", "dropped"} {
		if cluster.Properties[p] == nil {
			t.Errorf("a cluster's %q is not documented", p)
		}
	}
	for _, p := range []string{"clusters", "changing", "added", "changed", "removed"} {
		if stage.Properties["counts"].Value.Properties[p] == nil {
			t.Errorf("a stage's counts.%s is not documented", p)
		}
	}
}

// Switched off (--disable-features preview), the route is still there: a preview the
// DIG could have answers 503 saying so, once the request and the DIG are checked as when
// it is on.
func TestPreviewSwitchedOffAnswersSo(t *testing.T) {
	c := api.NewFeatureClient(t, preview.Routes{}.Extension())
	c.Do("POST", pDIG+"/rollout-preview?limit=x", nil).Must(t, http.StatusBadRequest)
	c.Do("POST", pDIG+"/rollout-preview", nil).Must(t, http.StatusConflict)
	c.Complete(t)
	c.Do("POST", pDIG+"/approve", nil).Must(t, 202)
	rec := c.Serve(httptest.NewRequest("POST", "/v2"+pDIG+"/rollout-preview", nil))
	if want := "this temco runs no rollout previews: feature preview is switched off (--disable-features)"; rec.Code != http.StatusServiceUnavailable || !strings.Contains(rec.Body.String(), want) {
		t.Errorf("preview: %d %s, want 503 saying %q", rec.Code, rec.Body, want)
	}
}
