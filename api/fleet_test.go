package api

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/temco/temco/internal/core/appctx"
	"github.com/temco/temco/internal/core/digstate"
	"github.com/temco/temco/internal/core/lifecycle"
)

// fleetOps is liveReads with one running operation: its workflow and progress.
type fleetOps struct {
	liveReads
	asked int
}

func (o *fleetOps) Running(_ context.Context, t lifecycle.Target, status, ctxID string) (*lifecycle.RunningOp, error) {
	if status != lifecycle.StatusUpdating {
		return nil, nil
	}
	return &lifecycle.RunningOp{WorkflowID: "wf-" + ctxID}, nil
}

func (o *fleetOps) Progress(context.Context, *lifecycle.RunningOp) (lifecycle.Progress, error) {
	o.asked++
	return lifecycle.Progress{Op: lifecycle.OpUpdate, Phase: "applying", ClustersDone: 1, ClustersTotal: 4}, nil
}

func (f fleetAnswer) names() []string {
	var out []string
	for _, d := range f.DIGs {
		out = append(out, d.Name)
	}
	return out
}

// fleetOf stores three DIGs of p1: dig1 instantiated on c1 (applied) and c2 (retrying),
// dig2 created, dig3 updating with a rollout whose canary waits for an approval.
func fleetOf(t *testing.T, c *client, ops *fleetOps) {
	t.Helper()
	tree(t, c)
	c.multipart("POST", "/cluster-providers/cp1/clusters", res("c2", nil), []byte(testKubeconfig)).must(t, 201)
	for _, name := range []string{"dig2", "dig3"} {
		c.do("POST", pCA+"/deployment-intent-groups", res(name, digSpec())).must(t, 201)
	}
	instantiated(t, c, &ops.liveReads, pDIG, "ctx-1", map[string][]appctx.Object{"app1": {}}, []*appctx.ClusterApp{
		{App: "app1", Cluster: "cp1+c1", Resources: res3("Applied", "Applied", "Applied")},
		{App: "app1", Cluster: "cp1+c2", Resources: res3("Applied", "Retrying", "Pending")},
	})
	dig3 := pCA + "/deployment-intent-groups/dig3"
	ctx := context.Background()
	if _, err := digstate.Change(ctx, c.store, dig3, func(lifecycle.StateInfo) ([]lifecycle.Action, error) {
		return []lifecycle.Action{{State: lifecycle.StateInstantiated, ContextID: "ctx-3", Revision: 2, TimeStamp: time.Now().UTC()}}, nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := ops.contexts.Create(ctx, &appctx.Context{ID: "ctx-3", DIG: dig3, Revision: 2, Op: lifecycle.OpUpdate, Status: lifecycle.StatusUpdating,
		Rollout: &lifecycle.RolloutStatus{State: lifecycle.RolloutRunning, Stages: []lifecycle.StageStatus{
			{Name: "canary", State: lifecycle.StageWaitingForApproval, Clusters: 1}, {Name: "rest", State: lifecycle.StagePending, Clusters: 3}}}}); err != nil {
		t.Fatal(err)
	}
}

// The fleet: every DIG with its state, counts, running operation, rollout and what needs
// an operator; totals over them; filters, sorting and pages.
func TestFleetShowsEveryDIGAndWhatNeedsAttention(t *testing.T) {
	ops := &fleetOps{}
	c := newClient(t, func(s *Server) { ops.contexts = s.Contexts; s.Ops = ops })
	fleetOf(t, c, ops)

	var f fleetAnswer
	c.do("GET", "/fleet", nil).must(t, 200).json(t, &f)
	if !slices.Equal(f.names(), []string{"dig1", "dig2", "dig3"}) || f.Matched != 3 || f.Limit != fleetLimit {
		t.Fatalf("fleet: %+v", f)
	}
	s := f.Summary
	if s.DIGs != 3 || s.States[lifecycle.StateInstantiated] != 2 || s.States[lifecycle.StateCreated] != 1 || s.Running != 1 ||
		s.ApprovalsWaiting != 1 || s.Retrying != 1 || s.Attention != 2 || s.Placements["Applied"] != 1 || s.Placements["Retrying"] != 1 {
		t.Errorf("summary %+v", s)
	}
	d1, d2, d3 := f.DIGs[0], f.DIGs[1], f.DIGs[2]
	if d1.Project != "p1" || d1.CompositeApp != "ca" || d1.CompositeAppVersion != "v1" || d1.State != lifecycle.StateInstantiated ||
		d1.Revision != 1 || d1.Clusters != 2 || d1.States["Retrying"] != 1 || d1.Objects["Applied"] != 4 || d1.Operation != nil ||
		!slices.Equal(d1.Attention, []string{"1 cluster retrying"}) {
		t.Errorf("dig1: %+v", d1)
	}
	if d2.State != lifecycle.StateCreated || d2.Clusters != 0 || len(d2.Attention) != 0 || d2.Operation != nil {
		t.Errorf("dig2: %+v", d2)
	}
	if o := d3.Operation; o == nil || o.Op != lifecycle.OpUpdate || o.WorkflowID != "wf-ctx-3" || o.ClustersDone != 1 || o.ClustersTotal != 4 || o.ProgressError != "" {
		t.Errorf("dig3's operation: %+v", d3.Operation)
	}
	if r := d3.Rollout; r == nil || r.Stage != "canary" || r.Waiting != "approval" || r.Stages != 2 || r.Done != 0 ||
		!slices.Equal(d3.Attention, []string{"stage canary waits for an approval"}) {
		t.Errorf("dig3's rollout %+v, attention %q", d3.Rollout, d3.Attention)
	}

	for query, want := range map[string][]string{
		"?attention=true":       {"dig1", "dig3"},
		"?state=Created":        {"dig2"},
		"?q=DIG3":               {"dig3"},
		"?q=p1/ca/v1/dig":       {"dig1", "dig2", "dig3"},
		"?limit=1&offset=1":     {"dig2"},
		"?offset=9":             nil,
		"?sort=state":           {"dig2", "dig1", "dig3"},
		"?project=p1&sort=name": {"dig1", "dig2", "dig3"},
		"?project=p9":           nil,
		"?state=Terminated":     nil,
		"?attention=false&q=d2": nil,
	} {
		c.do("GET", "/fleet"+query, nil).must(t, 200).json(t, &f)
		if !slices.Equal(f.names(), want) {
			t.Errorf("%s: %q, want %q", query, f.names(), want)
		}
	}
	c.do("GET", "/fleet?sort=updated", nil).must(t, 200).json(t, &f)
	if f.DIGs[0].Name != "dig3" || f.DIGs[2].Name != "dig2" { // dig3 changed now, dig1 in 2026-01, dig2 never
		t.Errorf("newest first: %q", f.names())
	}
	c.do("GET", "/fleet?project=p9", nil).must(t, 200).json(t, &f)
	if f.Summary.DIGs != 0 || f.DIGs == nil {
		t.Errorf("a project with no DIGs: %+v", f)
	}

	for query, want := range map[string]string{
		"?limit=0":                        `limit="0" is invalid`,
		"?limit=1001":                     `limit="1001" is invalid`,
		"?offset=x":                       `offset="x" is invalid`,
		"?state=Sleeping":                 `state="Sleeping" is invalid`,
		"?attention=yes":                  `attention="yes" is invalid`,
		"?sort=size":                      `sort="size" is invalid`,
		"?project=a%20b":                  `project "a b" is invalid`,
		"?page=2":                         `unknown query parameter "page"`,
		"?q=" + strings.Repeat("x", 1100): "q is longer than",
	} {
		if m := c.do("GET", "/fleet"+query, nil).must(t, 400).message(t); !strings.Contains(m, want) {
			t.Errorf("%.40s: %q does not say %q", query, m, want)
		}
	}
}

// A tenant's fleet is its projects' DIGs alone.
func TestFleetOfATenant(t *testing.T) {
	iss := newIssuer(t)
	c := authClient(t, iss)
	admin := c.as(iss.Token("root", []string{"admin"}, nil))
	tree(t, admin)
	admin.do("POST", "/projects", res("p2", nil)).must(t, http.StatusCreated)
	admin.do("POST", "/projects/p2/composite-apps", res("ca", map[string]any{"compositeAppVersion": "v1"})).must(t, 201)
	admin.do("POST", "/projects/p2/composite-apps/ca/v1/deployment-intent-groups", res("other", map[string]any{"compositeProfile": "prof", "version": "1", "logicalCloud": "lc"})).must(t, 201)

	var f fleetAnswer
	admin.do("GET", "/fleet", nil).must(t, 200).json(t, &f)
	if !slices.Equal(f.names(), []string{"dig1", "other"}) {
		t.Errorf("the admin's fleet: %q", f.names())
	}
	alice := c.as(iss.Token("alice", []string{"project:p1"}, nil))
	alice.do("GET", "/fleet", nil).must(t, 200).json(t, &f)
	if !slices.Equal(f.names(), []string{"dig1"}) || f.Summary.DIGs != 1 {
		t.Errorf("alice's fleet: %q, summary %+v", f.names(), f.Summary)
	}
	if m := alice.do("GET", "/fleet?project=p2", nil).must(t, http.StatusForbidden).message(t); m != `project "p2" is not granted to "alice"` {
		t.Errorf("alice asking for p2: %q", m)
	}
	nobody := c.as(iss.Token("nobody", []string{"project:p9"}, nil))
	nobody.do("GET", "/fleet", nil).must(t, 200).json(t, &f)
	if len(f.DIGs) != 0 || f.Summary.DIGs != 0 {
		t.Errorf("a tenant of no existing project sees %q", f.names())
	}
	c.do("GET", "/fleet", nil).must(t, http.StatusUnauthorized)
}

// A live read of every cluster (status=ready) leaves its counts on the fleet's home until
// the next one; a read of some clusters leaves them as they were, and neither is a change.
func TestFleetShowsTheLastReadOfEveryCluster(t *testing.T) {
	ops := &fleetOps{}
	c := newClient(t, func(s *Server) { ops.contexts = s.Contexts; s.Ops = ops })
	fleetOf(t, c, ops)
	var f fleetAnswer
	c.do("GET", "/fleet", nil).must(t, 200).json(t, &f)
	if d1 := f.DIGs[0]; d1.Ready != nil || len(f.Summary.ReadyPlacements) != 0 {
		t.Fatalf("dig1 before any read: %+v, summary %+v", d1.Ready, f.Summary.ReadyPlacements)
	}
	updated := f.DIGs[0].Updated

	ready := appctx.Live{State: appctx.LivePresent, Ready: true}
	ops.live = map[string][]appctx.Live{
		"app1/cp1+c1": {ready, ready, ready},
		"app1/cp1+c2": {ready, {State: appctx.LivePresent}, {State: appctx.LiveNotPresent}},
	}
	c.do("GET", pDIG+"/status?status=ready&output=summary", nil).must(t, 200)
	f = fleetAnswer{} // decoding into the last answer would merge its maps
	c.do("GET", "/fleet", nil).must(t, 200).json(t, &f)
	d1 := f.DIGs[0]
	if r := d1.Ready; r == nil || r.Clusters[readyReady] != 1 || r.Clusters[readyNotReady] != 1 || len(r.Clusters) != 2 ||
		r.Objects[readyReady] != 4 || r.Objects[readyNotReady] != 1 || r.Objects[readyNotPresent] != 1 || time.Since(r.Read) > time.Minute {
		t.Fatalf("dig1's readiness: %+v", d1.Ready)
	}
	if !slices.Contains(d1.Attention, "1 cluster not ready at the last read") || f.Summary.ReadyPlacements[readyNotReady] != 1 ||
		f.Summary.ReadyPlacements[readyReady] != 1 {
		t.Errorf("attention %q, summary %+v", d1.Attention, f.Summary.ReadyPlacements)
	}
	// While an operation runs, clusters not ready yet are its progress, not a need.
	if err := ops.contexts.SaveReadiness(context.Background(), "ctx-3", appctx.Readiness{Clusters: map[string]int{readyNotReady: 2}, Read: time.Now()}); err != nil {
		t.Fatal(err)
	}
	f = fleetAnswer{}
	c.do("GET", "/fleet", nil).must(t, 200).json(t, &f)
	if d3 := f.DIGs[2]; d3.Ready == nil || d3.Ready.Clusters[readyNotReady] != 2 || slices.ContainsFunc(d3.Attention, func(s string) bool { return strings.Contains(s, "not ready") }) {
		t.Errorf("dig3, updating: ready %+v, attention %q", d3.Ready, d3.Attention)
	}
	if d1.Updated == nil || updated == nil || !d1.Updated.Equal(*updated) {
		t.Errorf("a read changed the DIG's last change: %v, was %v", d1.Updated, updated)
	}

	// One cluster read again, now all ready: the counts stay those of the full read.
	ops.live["app1/cp1+c2"] = []appctx.Live{ready, ready, ready}
	c.do("GET", pDIG+"/status?status=ready&cluster=cp1%2Bc2", nil).must(t, 200)
	f = fleetAnswer{}
	c.do("GET", "/fleet", nil).must(t, 200).json(t, &f)
	if r := f.DIGs[0].Ready; r == nil || r.Clusters[readyNotReady] != 1 {
		t.Errorf("a read of one cluster changed the counts: %+v", r)
	}
	c.do("GET", pDIG+"/status?status=ready", nil).must(t, 200)
	f = fleetAnswer{}
	c.do("GET", "/fleet", nil).must(t, 200).json(t, &f)
	if r := f.DIGs[0].Ready; r == nil || r.Clusters[readyReady] != 2 || len(r.Clusters) != 1 || slices.ContainsFunc(f.DIGs[0].Attention, func(s string) bool { return strings.Contains(s, "not ready") }) {
		t.Errorf("after a read of every cluster, all ready: %+v, attention %q", r, f.DIGs[0].Attention)
	}
}
