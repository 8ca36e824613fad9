package flow

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/temco/temco/activities/cluster"
	"github.com/temco/temco/internal/core/lifecycle"
)

var dig = lifecycle.Target{Project: "p", CompositeApp: "ca", Version: "v1", DIG: "d"}

// fakes are the activities of one test: a context of batches of two clusters each.
type fakes struct {
	mu       sync.Mutex
	plan     DriftPlan
	detect   func(cluster string, attempt int32) (lifecycle.ClusterResult, error)
	checked  []lifecycle.ClusterInput
	recorded []DriftRecordInput
	listed   []int
}

func newFakes(batches int, correct bool) *fakes {
	return &fakes{
		plan: DriftPlan{ContextID: "42", Batches: batches, Correct: correct},
		detect: func(string, int32) (lifecycle.ClusterResult, error) {
			return lifecycle.ClusterResult{Done: 3}, nil
		},
	}
}

func (f *fakes) run(t *testing.T) (*testsuite.TestWorkflowEnvironment, DriftResult, error) {
	t.Helper()
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	env.RegisterWorkflowWithOptions(Drift, workflow.RegisterOptions{Name: WorkflowDrift})
	env.RegisterWorkflowWithOptions(DriftBatch, workflow.RegisterOptions{Name: WorkflowDriftBatch})
	reg := func(name string, fn any) { env.RegisterActivityWithOptions(fn, activity.RegisterOptions{Name: name}) }
	lifecycle.Register(env, PlanDriftCheck, func(_ context.Context, in DriftInput) (DriftPlan, error) {
		if in.DIG != dig {
			return DriftPlan{}, errors.New("another DIG")
		}
		return f.plan, nil
	})
	lifecycle.Register(env, DriftBatchClusters, func(_ context.Context, in lifecycle.BatchInput) ([]string, error) {
		f.mu.Lock()
		f.listed = append(f.listed, in.Batch)
		f.mu.Unlock()
		return []string{"cp+c" + string(rune('a'+2*in.Batch)), "cp+c" + string(rune('a'+2*in.Batch+1))}, nil
	})
	detect := func(ctx context.Context, in lifecycle.ClusterInput) (lifecycle.ClusterResult, error) {
		f.mu.Lock()
		f.checked = append(f.checked, in)
		f.mu.Unlock()
		n := activity.GetInfo(ctx).Attempt
		if in.After != nil { // left its group: attempts go on from the group's
			n += in.After.Attempts
		}
		return f.detect(in.Cluster, n)
	}
	lifecycle.Register(env, DetectDrift, detect)
	lifecycle.Register(env, DetectDriftGroup, func(ctx context.Context, in lifecycle.GroupInput) (lifecycle.GroupResult, error) {
		return cluster.RunGroup(ctx, in, detect)
	})
	lifecycle.RegisterNoResult(env, RecordDriftCheck, func(_ context.Context, in DriftRecordInput) error {
		f.mu.Lock()
		f.recorded = append(f.recorded, in)
		f.mu.Unlock()
		return nil
	})
	// Operations' activities a drift check must never run.
	for _, name := range []string{lifecycle.ListBatch.Name(), lifecycle.CountBatch.Name(), lifecycle.ApplyCluster.Name()} {
		reg(name, func(context.Context, lifecycle.BatchInput) error { t.Errorf("%s called", name); return nil })
	}
	env.ExecuteWorkflow(Drift, DriftInput{DIG: dig})
	if !env.IsWorkflowCompleted() {
		t.Fatal("the drift check did not complete")
	}
	var res DriftResult
	err := env.GetWorkflowError()
	if err == nil {
		err = env.GetWorkflowResult(&res)
	}
	return env, res, err
}

// A DIG that is not Instantiated (or runs an operation) is not checked: the plan says
// why, and no cluster is touched and nothing recorded.
func TestADIGNotInstantiatedIsSkipped(t *testing.T) {
	f := newFakes(1, false)
	f.plan = DriftPlan{Skip: "the DIG is Approved, not Instantiated"}
	_, res, err := f.run(t)
	if err != nil || res.Skipped != f.plan.Skip {
		t.Fatalf("result %+v, error %v", res, err)
	}
	if len(f.checked) > 0 || len(f.recorded) > 0 || len(f.listed) > 0 {
		t.Errorf("checked %d clusters, recorded %d summaries, listed %v", len(f.checked), len(f.recorded), f.listed)
	}
}

// Every cluster of every batch is checked (batches of more than one as DriftBatch
// children) with the check's id and the correctDrift option, and the summary is recorded
// once with the summed counts.
func TestEveryClusterIsCheckedWithCorrectDrift(t *testing.T) {
	for _, batches := range []int{1, 3} {
		f := newFakes(batches, true)
		_, res, err := f.run(t)
		if err != nil {
			t.Fatalf("%d batches: %v", batches, err)
		}
		if len(f.checked) != 2*batches || res.Result.Clusters != 2*batches || res.Result.Done != 6*batches || res.ContextID != "42" {
			t.Errorf("%d batches: %d clusters checked, result %+v", batches, len(f.checked), res)
		}
		for _, in := range f.checked {
			if in.ContextID != "42" || in.Drift == nil || !in.Drift.Correct || in.Drift.ID == "" {
				t.Errorf("%d batches: DetectDrift input %+v (drift %+v)", batches, in, in.Drift)
			}
		}
		if len(f.recorded) != 1 || f.recorded[0].Check.ID != f.checked[0].Drift.ID || f.recorded[0].Result != res.Result ||
			f.recorded[0].Error != "" || !f.recorded[0].Check.Correct {
			t.Errorf("%d batches: recorded %+v", batches, f.recorded)
		}
		slices.Sort(f.listed)
		if want := []int{0, 1, 2}[:batches]; !slices.Equal(f.listed, want) {
			t.Errorf("%d batches: listed %v, want %v", batches, f.listed, want)
		}
	}
}

// A cluster whose check keeps failing (the store, say: an unreachable cluster is recorded
// by the activity itself) fails the check after a few attempts, but the other clusters are
// checked all the same and the summary is recorded with the error, counting every cluster
// checked (the failed one's batch ran inline: a batch child's counts were lost with it).
func TestAClusterFailingDoesNotFailTheOthers(t *testing.T) {
	f := newFakes(2, false)
	attempts := 0
	f.detect = func(cluster string, attempt int32) (lifecycle.ClusterResult, error) {
		if cluster == "cp+cb" {
			attempts++
			return lifecycle.ClusterResult{}, temporal.NewApplicationError("store down", "Unavailable")
		}
		return lifecycle.ClusterResult{Done: 2, Failed: 1}, nil
	}
	_, res, err := f.run(t)
	if err == nil {
		t.Fatalf("a failed cluster check ended with no error: %+v", res)
	}
	ok := 0
	for _, in := range f.checked {
		if in.Cluster != "cp+cb" {
			ok++
		}
	}
	if ok != 3 || attempts != 3 {
		t.Errorf("other clusters checked %d times (want 3), the failing one %d (want 3 attempts)", ok, attempts)
	}
	if len(f.recorded) != 1 || f.recorded[0].Error == "" || f.recorded[0].Result.Failed != 3 {
		t.Errorf("recorded %+v", f.recorded)
	}
}
