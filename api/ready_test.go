package api

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/temco/temco/internal/lifecycle"
	"github.com/temco/temco/internal/testenv"
)

// operations records the operations the API starts, in place of Temporal.
type operations struct{ started []string }

func (o *operations) Operate(_ context.Context, t lifecycle.Target, req lifecycle.OpRequest) (lifecycle.OpAccepted, error) {
	o.started = append(o.started, req.Op+" "+t.ID())
	return lifecycle.OpAccepted{WorkflowID: "wf", ContextID: req.ContextID}, nil
}

func (o *operations) Stop(context.Context, lifecycle.Target) (lifecycle.OpAccepted, error) {
	return lifecycle.OpAccepted{}, nil
}

func (o *operations) ReadClusters(context.Context, lifecycle.Target, string, bool) error { return nil }
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

// A GitOps cluster is registered with whatever file its client sends (EMCO's send a
// placeholder); an instantiate that could place an app on it is refused before
// anything is applied.
func TestInstantiateRefusesGitOpsClusters(t *testing.T) {
	ops := &operations{}
	c := newClient(t, func(s *Server) { s.Ops = ops })
	tree(t, c)
	gitops := res("g1", map[string]any{"gitOps": map[string]string{"gitOpsType": "fluxcd", "gitOpsReferenceObject": "r", "gitOpsResourceObject": "o"}})
	c.multipart("POST", "/cluster-providers/cp1/clusters", gitops, []byte("placeholder: not a kubeconfig\n")).must(t, 201)
	c.do("POST", "/cluster-providers/cp1/clusters/g1/labels", map[string]string{"clusterLabel": "edge"}).must(t, 201)
	c.do("POST", pDIG+"/intents", res("i1", map[string]any{"intent": map[string]string{"genericPlacementIntent": "gpi1"}})).must(t, 201)
	c.multipart("POST", pCA+"/composite-profiles/cprof/profiles", res("prof2", map[string]any{"app": "app2"}), testenv.Profile("replicas: 1\n")).must(t, 201)
	c.do("POST", pGPI+"/app-intents", res("a1", appIntentSpec("app1"))).must(t, 201)
	c.do("POST", pGPI+"/app-intents", res("a2", map[string]any{"app": "app2", "intent": map[string]any{
		"allOf": []any{map[string]any{"clusterProvider": "cp1", "clusterLabel": "edge"}}}})).must(t, 201)
	c.do("POST", pDIG+"/approve", nil).must(t, 202)
	m := c.do("POST", pDIG+"/instantiate", nil).must(t, http.StatusConflict).message(t)
	if !strings.Contains(m, `app intent "a2" may place app "app2" on cluster cp1+g1, which is reached through GitOps`) {
		t.Errorf("message %q", m)
	}
	// A logical cloud over it is refused too.
	c.do("POST", pP+"/logical-clouds/lc1/cluster-references", res("g1", map[string]any{"clusterProvider": "cp1", "cluster": "g1"})).must(t, 201)
	m = c.do("POST", pP+"/logical-clouds/lc1/instantiate", nil).must(t, http.StatusConflict).message(t)
	if !strings.Contains(m, "cp1+g1, which is reached through GitOps") {
		t.Errorf("message %q", m)
	}
	if len(ops.started) != 0 {
		t.Fatalf("operations started: %v", ops.started)
	}
}
