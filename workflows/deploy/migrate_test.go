package deploy

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"github.com/temco/temco/contract"
	"github.com/temco/temco/internal/core/lifecycle"
)

// The target's new context and the origin's running one.
const (
	targetCtx = "42"
	originCtx = "7"
)

var migrateInput = lifecycle.MigrateInput{
	OpInput: lifecycle.OpInput{Target: lifecycle.Target{Project: "p", CompositeApp: "ca", Version: "v2", DIG: "d2"},
		ContextID: targetCtx, Previous: originCtx},
	Origin: lifecycle.Target{Project: "p", CompositeApp: "ca", Version: "v1", DIG: "d"},
}

// migrateRun is what a Migrate run did, beside what f records.
type migrateRun struct {
	err      error
	finished []lifecycle.MigrateFinish
	applies  []string // "<context> over <previous> on <cluster>", in order
}

// runMigrate runs Migrate with f's activities; applyErr (optional) answers ApplyCluster
// for a context and cluster.
func runMigrate(t *testing.T, f *fakes, applyErr func(in lifecycle.ClusterInput) (lifecycle.ClusterResult, error),
	setup func(env *testsuite.TestWorkflowEnvironment)) *migrateRun {
	t.Helper()
	r := &migrateRun{}
	env := newEnv()
	f.register(env)
	lifecycle.RegisterNoResult(env, lifecycle.FinishMigrate, func(_ context.Context, in lifecycle.MigrateFinish) error {
		r.finished = append(r.finished, in)
		return nil
	})
	f.onApply = func(_ context.Context, in lifecycle.ClusterInput) (lifecycle.ClusterResult, error) {
		f.mu.Lock()
		r.applies = append(r.applies, in.ContextID+" over "+in.Previous+" on "+in.Cluster)
		f.applied[in.Cluster]++
		f.mu.Unlock()
		if applyErr != nil {
			return applyErr(in)
		}
		return lifecycle.ClusterResult{Done: 3}, nil
	}
	if setup != nil {
		setup(env)
	}
	env.ExecuteWorkflow(Migrate, migrateInput)
	if !env.IsWorkflowCompleted() {
		t.Fatal("workflow did not complete")
	}
	r.err = env.GetWorkflowError()
	return r
}

func (r *migrateRun) finish(t *testing.T) lifecycle.MigrateFinish {
	t.Helper()
	if len(r.finished) != 1 {
		t.Fatalf("FinishMigrate ran %d times, want once: %+v", len(r.finished), r.finished)
	}
	fin := r.finished[0]
	if fin.DIG != migrateInput.Target || fin.Origin != migrateInput.Origin || fin.ContextID != targetCtx || fin.OriginContext != originCtx {
		t.Errorf("FinishMigrate names %+v", fin.MigrateBegin)
	}
	return fin
}

// prunes lists "<context> for <next> on <cluster>" of every PruneCluster call.
func prunes(f *fakes) []string {
	var out []string
	for _, p := range f.pruned {
		out = append(out, p.ContextID+" for "+p.Next+" on "+p.Cluster)
	}
	slices.Sort(out)
	return out
}

// The target's context is built from the target DIG and applied over the origin's; what
// only the origin has goes; the controllers hear it finished; both DIGs are recorded.
func TestMigrateMovesTheOriginsObjectsToTheTarget(t *testing.T) {
	f := newFakes()
	f.plan.Controllers = []lifecycle.Controller{{Name: "gac", Type: "action", Intent: "g"}}
	var inputs []contract.Input
	f.control = func(in contract.Input) error {
		f.mu.Lock()
		inputs = append(inputs, in)
		f.mu.Unlock()
		return nil
	}
	r := runMigrate(t, f, nil, nil)
	if r.err != nil {
		t.Fatal(r.err)
	}
	slices.Sort(r.applies)
	if want := []string{"42 over 7 on cp+c1", "42 over 7 on cp+c2"}; !slices.Equal(r.applies, want) {
		t.Errorf("applies %v, want %v", r.applies, want)
	}
	if want := []string{"7 for 42 on cp+c1", "7 for 42 on cp+c2"}; !slices.Equal(prunes(f), want) {
		t.Errorf("prunes %v, want %v", prunes(f), want)
	}
	if strings.Join(f.ran, ",") != "gac,commit,gac finished" {
		t.Errorf("controllers ran %v", f.ran)
	}
	if len(inputs) == 0 || inputs[0].CompositeAppVersion != "v2" || inputs[0].DeploymentIntentGroup != "d2" ||
		inputs[0].ContextID != targetCtx || inputs[0].PreviousContextID != originCtx || inputs[0].Operation != lifecycle.OpMigrate {
		t.Errorf("controller inputs %+v", inputs)
	}
	if fin := r.finish(t); fin.Outcome != lifecycle.MigrateDone || fin.Error != "" {
		t.Errorf("finished %+v", fin)
	}
}

// rollbackWant is what a rollback does on the two clusters: the origin applied again over
// the target, then what only the target has deleted.
var (
	restoreApplies = []string{"7 over 42 on cp+c1", "7 over 42 on cp+c2"}
	withdrawPrunes = []string{"42 for 7 on cp+c1", "42 for 7 on cp+c2"}
)

// An object a cluster rejects fails the target's apply: the origin's context is applied
// again over the target's and what only the target has is deleted; nothing of the origin
// is pruned; the target is recorded rolled back, with the reason.
func TestAFailedApplyIsRolledBack(t *testing.T) {
	f := newFakes()
	r := runMigrate(t, f, func(in lifecycle.ClusterInput) (lifecycle.ClusterResult, error) {
		if in.ContextID == targetCtx && in.Cluster == "cp+c2" {
			return lifecycle.ClusterResult{Done: 2, Failed: 1}, nil
		}
		return lifecycle.ClusterResult{Done: 3}, nil
	}, nil)
	var appErr *temporal.ApplicationError
	if !errors.As(r.err, &appErr) || appErr.Type() != lifecycle.ErrApplyFailed || !strings.Contains(appErr.Message(), "migrate failed: 1 resources failed to apply; rolled back") {
		t.Fatalf("workflow error %v, want the apply's failure, rolled back", r.err)
	}
	if got := r.applies[2:]; len(r.applies) != 4 || !slices.Equal(slices.Sorted(slices.Values(got)), restoreApplies) {
		t.Errorf("applies %v, want the target's then %v", r.applies, restoreApplies)
	}
	if !slices.Equal(prunes(f), withdrawPrunes) {
		t.Errorf("prunes %v, want only %v", prunes(f), withdrawPrunes)
	}
	if fin := r.finish(t); fin.Outcome != lifecycle.MigrateRolledBack || fin.Error != "migrate failed: 1 resources failed to apply; rolled back" {
		t.Errorf("finished %+v", fin)
	}
}

// Objects of the origin that cannot be deleted fail the migrate too: rolled back.
func TestAFailedPruneOfTheOriginIsRolledBack(t *testing.T) {
	f := newFakes()
	pruneFails := true
	f.onPrune = func(_ context.Context, in lifecycle.ClusterInput) (lifecycle.ClusterResult, error) {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.pruned = append(f.pruned, in)
		if in.ContextID == originCtx && pruneFails {
			pruneFails = false
			return lifecycle.ClusterResult{Failed: 1}, nil
		}
		return lifecycle.ClusterResult{Done: 1}, nil
	}
	r := runMigrate(t, f, nil, nil)
	if r.err == nil || !strings.Contains(r.err.Error(), "1 objects only the origin has could not be deleted; rolled back") {
		t.Fatalf("workflow error %v", r.err)
	}
	if len(r.applies) != 4 {
		t.Errorf("applies %v: want the target's, then the origin's again", r.applies)
	}
	if fin := r.finish(t); fin.Outcome != lifecycle.MigrateRolledBack {
		t.Errorf("finished %+v", fin)
	}
}

// A target that cannot be rendered fails before any cluster is touched: nothing to roll
// back, the target recorded as rolled back with the reason.
func TestAMigrateThatFailsBeforeTheApplyTouchesNoCluster(t *testing.T) {
	f := newFakes()
	f.render = func() error {
		return temporal.NewNonRetryableApplicationError(`app "web": chart has no templates`, lifecycle.ErrInvalidInput, nil)
	}
	r := runMigrate(t, f, nil, nil)
	if r.err == nil || !strings.Contains(r.err.Error(), "chart has no templates; rolled back") {
		t.Fatalf("workflow error %v", r.err)
	}
	if len(r.applies) != 0 || len(f.pruned) != 0 {
		t.Errorf("applies %v, prunes %v", r.applies, prunes(f))
	}
	if fin := r.finish(t); fin.Outcome != lifecycle.MigrateRolledBack || !strings.Contains(fin.Error, "chart has no templates") {
		t.Errorf("finished %+v", fin)
	}
}

// A stop ends the target's apply (a cluster retried forever here) and rolls back; the
// workflow succeeds, as a stopped operation does.
func TestAStopRollsBack(t *testing.T) {
	f := newFakes()
	r := runMigrate(t, f, func(in lifecycle.ClusterInput) (lifecycle.ClusterResult, error) {
		if in.ContextID == targetCtx && in.Cluster == "cp+c2" {
			return lifecycle.ClusterResult{}, errors.New("dial tcp: connection refused")
		}
		return lifecycle.ClusterResult{Done: 3}, nil
	}, func(env *testsuite.TestWorkflowEnvironment) {
		env.RegisterDelayedCallback(func() { env.SignalWorkflow(lifecycle.SignalStop, nil) }, 30*time.Second)
	})
	if r.err != nil {
		t.Fatal(r.err)
	}
	if !slices.Equal(prunes(f), withdrawPrunes) {
		t.Errorf("prunes %v, want %v", prunes(f), withdrawPrunes)
	}
	if fin := r.finish(t); fin.Outcome != lifecycle.MigrateRolledBack || fin.Error != "migrate stopped; rolled back" {
		t.Errorf("finished %+v", fin)
	}
}

// A second stop abandons the rollback: the target is recorded stopped.
func TestASecondStopAbandonsTheRollback(t *testing.T) {
	f := newFakes()
	r := runMigrate(t, f, func(in lifecycle.ClusterInput) (lifecycle.ClusterResult, error) {
		if in.Cluster == "cp+c2" { // unreachable for both contexts
			return lifecycle.ClusterResult{}, errors.New("dial tcp: connection refused")
		}
		return lifecycle.ClusterResult{Done: 3}, nil
	}, func(env *testsuite.TestWorkflowEnvironment) {
		env.RegisterDelayedCallback(func() { env.SignalWorkflow(lifecycle.SignalStop, nil) }, 30*time.Second)
		env.RegisterDelayedCallback(func() { env.SignalWorkflow(lifecycle.SignalStop, nil) }, 60*time.Second)
	})
	if r.err != nil {
		t.Fatal(r.err)
	}
	if len(f.pruned) != 0 {
		t.Errorf("prunes %v after the rollback was stopped", prunes(f))
	}
	if fin := r.finish(t); fin.Outcome != lifecycle.MigrateStopped || fin.Error != "migrate stopped; its rollback was stopped" {
		t.Errorf("finished %+v", fin)
	}
}
