package api

import (
	"context"
	"fmt"
	"strings"
	"testing"

	temco "github.com/temco/temco/client"
	"github.com/temco/temco/internal/core/appctx"
	"github.com/temco/temco/internal/core/lifecycle"
)

// runningOps is liveReads with, once running is set, an update running on every context.
type runningOps struct {
	*liveReads
	running bool
}

func (o *runningOps) Running(context.Context, lifecycle.Target, string, string) (*lifecycle.RunningOp, error) {
	if !o.running {
		return nil, nil
	}
	return &lifecycle.RunningOp{WorkflowID: "wf-1", RunID: "run-1"}, nil
}

func (*runningOps) Progress(context.Context, *lifecycle.RunningOp) (lifecycle.Progress, error) {
	return lifecycle.Progress{Op: lifecycle.OpUpdate, Phase: "apply", ClustersDone: 1, ClustersTotal: 2}, nil
}

// A DIG's state says what the dashboard says of it above its clusters, in the client's
// type: before an instantiate its state alone; then its revision, context, operation and
// counts; with clusters=true its clusters by state, all and by app, as the dashboard's
// state filter counts them.
func TestDIGStateIsTheDashboardsHeader(t *testing.T) {
	reads := &liveReads{}
	ops := &runningOps{liveReads: reads}
	c := newClient(t, func(s *Server) { reads.contexts = s.Contexts; s.Ops = ops })
	tree(t, c)
	c.multipart("POST", "/cluster-providers/cp1/clusters", res("c2", nil), []byte(testKubeconfig)).must(t, 201)

	var none temco.DIGState
	c.do("GET", pDIG+"/state", nil).must(t, 200).json(t, &none)
	if none.State != lifecycle.StateCreated || none.ContextID != "" || none.Running() || none.Clusters != 0 || none.Name != "dig1" {
		t.Fatalf("before an instantiate: %+v", none)
	}

	refs := res3("", "", "")
	obj := func(r appctx.Ref, kind, name string) appctx.Object {
		return appctx.Object{Ref: r, Manifest: manifest("v1", kind, name, nil)}
	}
	instantiated(t, c, reads, pDIG, "ctx-1", map[string][]appctx.Object{
		"app1": {obj(refs[0].Ref, "Deployment", "web"), obj(refs[1].Ref, "Service", "web"), obj(refs[2].Ref, "ConfigMap", "web-cfg")},
		"app2": {obj(refs[2].Ref, "ConfigMap", "web-cfg")},
	}, []*appctx.ClusterApp{
		{App: "app1", Cluster: "cp1+c1", Resources: res3("Applied", "Applied", "Applied")},
		{App: "app2", Cluster: "cp1+c1", Resources: res3("Applied")},
		{App: "app1", Cluster: "cp1+c2", Resources: res3("Applied", "Failed", "Pending")},
	})

	var st temco.DIGState
	c.do("GET", pDIG+"/state", nil).must(t, 200).json(t, &st)
	var v dashboardView
	c.do("GET", pDIG+"/dashboard?limit=1&state=Failed", nil).must(t, 200).json(t, &v)
	if st.State != v.State || st.Revision != 1 || st.ContextID != "ctx-1" || st.ContextStatus != lifecycle.StatusInstantiated ||
		fmt.Sprint(st.Apps) != "[app1 app2]" || fmt.Sprint(st.Objects) != fmt.Sprint(v.Objects) || st.Clusters != 2 || st.Operation != nil || st.Running() {
		t.Errorf("state %+v, dashboard %+v", st, v)
	}
	if st.ClusterStates != nil || st.AppClusterStates != nil {
		t.Errorf("clusters counted unasked: %v %v", st.ClusterStates, st.AppClusterStates)
	}
	if len(st.History) != 3 || st.History[2].State != lifecycle.StateInstantiated || st.History[2].ContextID != "ctx-1" ||
		len(st.Revisions) != 1 || st.Revisions[0].ContextID != "ctx-1" || st.Revisions[0].State != lifecycle.StateInstantiated {
		t.Errorf("history %+v, revisions %+v", st.History, st.Revisions)
	}

	c.do("GET", pDIG+"/state?clusters=true", nil).must(t, 200).json(t, &st)
	if fmt.Sprint(st.ClusterStates) != fmt.Sprint(v.States) || fmt.Sprint(st.AppClusterStates) != fmt.Sprint(v.AppStates) ||
		st.ClusterStates["Failed"] != 1 || st.ClusterStates["Applied"] != 1 {
		t.Errorf("clusters by state %v by app %v; the dashboard's %v %v", st.ClusterStates, st.AppClusterStates, v.States, v.AppStates)
	}

	ops.running = true
	c.do("GET", pDIG+"/state", nil).must(t, 200).json(t, &st)
	if op := st.Operation; op == nil || op.WorkflowID != "wf-1" || op.Op != lifecycle.OpUpdate || op.ClustersDone != 1 || !st.Running() {
		t.Errorf("running: %+v", op)
	}

	for query, want := range map[string]string{
		"?clusters=yes": `clusters="yes" is invalid`,
		"?limit=1":      `unknown query parameter "limit"`,
	} {
		if m := c.do("GET", pDIG+"/state"+query, nil).must(t, 400).message(t); !strings.Contains(m, want) {
			t.Errorf("%s: %q does not say %q", query, m, want)
		}
	}
	c.do("GET", pCA+"/deployment-intent-groups/nope/state", nil).must(t, 404)
}
