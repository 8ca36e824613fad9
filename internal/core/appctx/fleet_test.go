package appctx

import (
	"context"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/temco/temco/internal/core/lifecycle"
)

// The fleet's read of many contexts: headers, clusters by their worst object and objects
// by status, from counted batches and from the documents of those not counted, and the
// last drift check; a context that does not exist is left out.
func TestFleetCountsClustersAndObjectsOfManyContexts(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	place(t, s) // ctx1: 6 clusters in 3 batches, 2 apps of 2 objects each
	rollout := &lifecycle.RolloutStatus{State: lifecycle.RolloutRunning, Stages: []lifecycle.StageStatus{{Name: "canary", State: lifecycle.StageWaitingForApproval}}}
	if err := s.Create(ctx, &Context{ID: "ctx1", DIG: "/d1", Revision: 2, Status: lifecycle.StatusUpdating, Rollout: rollout}); err != nil {
		t.Fatal(err)
	}
	if err := s.Create(ctx, &Context{ID: "ctx2", DIG: "/d2", Revision: 1, Status: lifecycle.StatusInstantiateFailed, Error: "boom"}); err != nil {
		t.Fatal(err)
	}
	// Batch 0: c0 Applied, c1 one object Failed; counted. Batch 1: c2 Retrying, running.
	// Batch 2: never started (Pending).
	for _, b := range []int{0, 1} {
		if _, err := s.StartBatch(ctx, "ctx1", b); err != nil {
			t.Fatal(err)
		}
	}
	apply(t, s, "p+c0", lifecycle.ResApplied)
	apply(t, s, "p+c1", lifecycle.ResApplied)
	cas, err := s.ClusterApps(ctx, "ctx1", "p+c1")
	if err != nil {
		t.Fatal(err)
	}
	cas[0].Resources[1].Status = lifecycle.ResFailed
	if err := s.SaveClusters(ctx, "ctx1", cas); err != nil {
		t.Fatal(err)
	}
	apply(t, s, "p+c2", lifecycle.ResRetrying)
	if err := s.CountBatch(ctx, "ctx1", 0); err != nil {
		t.Fatal(err)
	}
	if err := s.PutClusterDrift(ctx, &ClusterDrift{Context: "ctx1", Cluster: "p+c0", Check: "chk", Checked: time.Now(),
		Objects: []DriftObject{{App: "a", Ref: Ref{Kind: "ConfigMap", Name: "x"}}, {App: "a", Ref: Ref{Kind: "Service", Name: "y"}, Missing: true}}}); err != nil {
		t.Fatal(err)
	}
	if err := s.SummarizeDrift(ctx, &DriftSummary{Context: "ctx1", Check: "chk", Finished: time.Now()}); err != nil {
		t.Fatal(err)
	}

	got, err := s.Fleet(ctx, []string{"ctx1", "ctx2", "nope"})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got["nope"] != nil {
		t.Fatalf("fleet of 3 ids, 2 of them contexts: %v", got)
	}
	f := got["ctx1"]
	if f.Status != lifecycle.StatusUpdating || f.Revision != 2 || f.Clusters != 6 || f.Rollout == nil || f.Rollout.Stages[0].State != lifecycle.StageWaitingForApproval {
		t.Errorf("ctx1: %+v", f)
	}
	wantStates := map[string]int{lifecycle.ResApplied: 1, lifecycle.ResFailed: 1, lifecycle.ResRetrying: 1, lifecycle.ResPending: 3}
	if !maps.Equal(f.States, wantStates) {
		t.Errorf("clusters by state %v, want %v", f.States, wantStates)
	}
	wantObjects := map[string]int{lifecycle.ResApplied: 7, lifecycle.ResFailed: 1, lifecycle.ResRetrying: 4, lifecycle.ResPending: 12}
	if !maps.Equal(f.Objects, wantObjects) {
		t.Errorf("objects by status %v, want %v", f.Objects, wantObjects)
	}
	if f.Drift == nil || f.Drift.Drifted != 2 || f.Drift.Missing != 1 || f.Drift.DriftedClusters != nil {
		t.Errorf("drift %+v: want the summary without its cluster list", f.Drift)
	}
	if f := got["ctx2"]; f.Status != lifecycle.StatusInstantiateFailed || f.Error != "boom" || f.Clusters != 0 || f.Drift != nil {
		t.Errorf("ctx2: %+v", f)
	}
	if got, err := s.Fleet(ctx, nil); err != nil || len(got) != 0 {
		t.Errorf("fleet of none: %v, %v", got, err)
	}
}

// What the fleet's queries read becomes one entry per header: its drift check attached,
// counted batches summed, the clusters of batches without counts (or without states,
// counted before they were) left to count from their documents; what has no header is
// left out.
func TestFleetReadGroupsByContext(t *testing.T) {
	r := &fleetRead{
		headers: []fleetHeader{{ID: "c1", Status: lifecycle.StatusInstantiated, Revision: 3}, {ID: "c2", Status: lifecycle.StatusInstantiating}},
		batches: []batchDoc{
			{Context: "c1", Clusters: []string{"p+a", "p+b"}, Counts: map[string]map[string]int{"app": {lifecycle.ResApplied: 3, lifecycle.ResFailed: 1}},
				States: map[string]int{lifecycle.ResApplied: 1, lifecycle.ResFailed: 1}},
			{Context: "c1", Clusters: []string{"p+c"}, Counts: map[string]map[string]int{"app": {lifecycle.ResApplied: 2}}, States: map[string]int{lifecycle.ResApplied: 1}},
			{Context: "c2", Clusters: []string{"p+a"}},
			{Context: "c2", Clusters: []string{"p+b"}, Counts: map[string]map[string]int{"app": {lifecycle.ResApplied: 2}}},
			{Context: "gone", Clusters: []string{"p+a"}},
		},
		drifts: []DriftSummary{{Context: "c2", Drifted: 4}, {Context: "gone", Drifted: 1}},
	}
	out, uncounted := r.fleet()
	if len(out) != 2 {
		t.Fatalf("fleet %v, want c1 and c2", out)
	}
	c1, c2 := out["c1"], out["c2"]
	if c1.Revision != 3 || c1.Clusters != 3 || c1.Drift != nil ||
		!maps.Equal(c1.Objects, map[string]int{lifecycle.ResApplied: 5, lifecycle.ResFailed: 1}) ||
		!maps.Equal(c1.States, map[string]int{lifecycle.ResApplied: 2, lifecycle.ResFailed: 1}) {
		t.Errorf("c1: %+v", c1)
	}
	if c2.Clusters != 2 || c2.Drift == nil || c2.Drift.Drifted != 4 || len(c2.Objects) != 0 || len(c2.States) != 0 {
		t.Errorf("c2: %+v", c2)
	}
	if len(uncounted) != 1 || strings.Join(uncounted["c2"], ",") != "p+a,p+b" {
		t.Errorf("uncounted %v, want c2's two clusters", uncounted)
	}
}
