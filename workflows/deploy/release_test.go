package deploy

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/temco/temco/internal/core/lifecycle"
	"github.com/temco/temco/internal/core/rollout"
	"github.com/temco/temco/workflows/localfirst"
)

// Runs started under release 1 retried finish only as a local activity: replaying one
// with localfirst's switch to a regular activity would schedule an activity its history
// does not have.
func TestFinishOfAStoreThatKeepsRefusingFollowsTheRunsRelease(t *testing.T) {
	failures := localfirst.Attempts // then the store answers
	for name, c := range map[string]struct {
		release workflow.Version
		local   []bool // per attempt, whether it ran locally
	}{
		"release 1": {releaseGate, slices.Repeat([]bool{true}, failures+1)},
		"release 2": {releaseLocalFirst, append(slices.Repeat([]bool{true}, localfirst.Attempts), false)},
	} {
		t.Run(name, func(t *testing.T) {
			var local []bool
			err := run(t, newFakes(), Instantiate, func(env *testsuite.TestWorkflowEnvironment) {
				env.OnGetVersion(changeRelease, workflow.DefaultVersion, releaseLatest).Return(c.release)
				env.OnActivity(lifecycle.FinishOperation.Name(), mock.Anything, mock.Anything).Return(
					func(ctx context.Context, _ lifecycle.FinishInput) error {
						local = append(local, activity.GetInfo(ctx).IsLocalActivity)
						if len(local) <= failures {
							return errors.New("store unavailable")
						}
						return nil
					})
			})
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(local, c.local) {
				t.Errorf("finish attempts (local?) %v, want %v", local, c.local)
			}
		})
	}
}

// From release 6 an instantiate renders the charts that read .Capabilities for its
// clusters once prepared (after the controllers' commit); runs of earlier releases do not.
// From release 9 it does only when RenderApps answered that some chart reads them.
func TestRenderVariantsFollowsTheRunsRelease(t *testing.T) {
	for name, c := range map[string]struct {
		release workflow.Version
		reading int
		want    int
	}{
		"release 5": {releaseStages, 1, 0}, "release 6": {releaseVariants, 1, 1},
		"release 8, no chart reads": {releaseArtifacts, 0, 1},
		"release 9, no chart reads": {releaseRendersRead, 0, 0}, "release 9, a chart reads": {releaseRendersRead, 1, 1},
	} {
		t.Run(name, func(t *testing.T) {
			f := newFakes()
			f.reading = c.reading
			f.plan.Controllers = []lifecycle.Controller{{Name: "gac", Intent: "i"}}
			err := run(t, f, Instantiate, func(env *testsuite.TestWorkflowEnvironment) {
				env.OnGetVersion(changeRelease, workflow.DefaultVersion, releaseLatest).Return(c.release)
			})
			if err != nil {
				t.Fatal(err)
			}
			if f.variants != c.want {
				t.Errorf("RenderVariants ran %d times, want %d", f.variants, c.want)
			}
		})
	}
}

// From release 10 a cluster whose apply was given to its agent counts once AwaitAgent,
// which the api completes asynchronously with the agent's report, ends: here the agent
// reports a failed object, so the instantiate fails. Runs of earlier releases count the
// cluster as the apply answered.
func TestAnAgentClustersApplyCountsWhenItsAgentReports(t *testing.T) {
	for name, c := range map[string]struct {
		release workflow.Version
		awaits  int
		status  string
	}{
		"release 9":  {releaseRendersRead, 0, lifecycle.StatusInstantiated},
		"release 10": {releaseAgents, 1, lifecycle.StatusInstantiateFailed},
	} {
		t.Run(name, func(t *testing.T) {
			f := newFakes()
			wait := lifecycle.AgentWait{Cluster: "cp+c2", Item: "cp+c2 i1", Gen: 7}
			f.apply = func(cluster string, _ int32) (lifecycle.ClusterResult, error) {
				if cluster == "cp+c2" {
					return lifecycle.ClusterResult{Awaiting: &wait}, nil
				}
				return lifecycle.ClusterResult{Done: 3}, nil
			}
			var awaited []lifecycle.AgentWait
			err := run(t, f, Instantiate, func(env *testsuite.TestWorkflowEnvironment) {
				env.OnGetVersion(changeRelease, workflow.DefaultVersion, releaseLatest).Return(c.release)
				lifecycle.Register(env, lifecycle.AwaitAgent, func(ctx context.Context, in lifecycle.AgentWait) (lifecycle.ClusterResult, error) {
					awaited = append(awaited, in)
					token := activity.GetInfo(ctx).TaskToken
					env.RegisterDelayedCallback(func() {
						if err := env.CompleteActivity(token, lifecycle.ClusterResult{Done: 2, Failed: 1}, nil); err != nil {
							t.Error(err)
						}
					}, time.Minute)
					return lifecycle.ClusterResult{}, activity.ErrResultPending
				})
			})
			if failed := c.status == lifecycle.StatusInstantiateFailed; (err != nil) != failed || failed && !strings.Contains(err.Error(), "1 resources failed") {
				t.Fatalf("workflow error %v, want one only when the agent reported a failed object", err)
			}
			wait.Context, wait.Offline = opInput.ContextID, rollout.Offline{Policy: rollout.OfflineWait, After: rollout.Duration(rollout.DefaultOfflineAfter)}
			if len(awaited) != c.awaits || c.awaits > 0 && awaited[0] != wait {
				t.Errorf("AwaitAgent ran for %+v, want %d times for %+v", awaited, c.awaits, wait)
			}
			if fin := f.finish(t); fin.Status != c.status {
				t.Errorf("finished %s, want %s", fin.Status, c.status)
			}
		})
	}
}

// A stop ends an operation waiting for an agent that never reports: the wait is
// cancelled without waiting for it (nothing runs on a worker meanwhile), and the
// operation records that it stopped.
func TestAStopEndsTheWaitForAnAgent(t *testing.T) {
	f := newFakes()
	f.apply = func(cluster string, _ int32) (lifecycle.ClusterResult, error) {
		return lifecycle.ClusterResult{Awaiting: &lifecycle.AgentWait{Cluster: cluster, Item: cluster + " i1", Gen: 1}}, nil
	}
	waits := 0
	err := run(t, f, Instantiate, func(env *testsuite.TestWorkflowEnvironment) {
		lifecycle.Register(env, lifecycle.AwaitAgent, func(context.Context, lifecycle.AgentWait) (lifecycle.ClusterResult, error) {
			waits++
			return lifecycle.ClusterResult{}, activity.ErrResultPending // the agent never reports
		})
		env.RegisterDelayedCallback(func() { env.SignalWorkflow(lifecycle.SignalStop, nil) }, 5*time.Minute)
	})
	if err != nil {
		t.Fatal(err)
	}
	if waits != 2 { // one per cluster, each still in its first attempt
		t.Errorf("AwaitAgent ran %d times, want 2", waits)
	}
	if fin := f.finish(t); fin.Status != lifecycle.StatusInstantiateStopped || !fin.Stopped {
		t.Errorf("finished %+v", fin)
	}
}

// From release 11 a batch's group activity lists and counts the batch; runs of earlier
// releases list it with ListBatch first and count it with CountBatch at the end.
func TestABatchIsListedByItsGroupFollowingTheRunsRelease(t *testing.T) {
	for name, c := range map[string]struct {
		release         workflow.Version
		lists, counts   int
		groups, batches int
	}{
		"release 10": {releaseAgents, 2, 2, 2, 2},
		"release 11": {releaseGroupLists, 0, 0, 2, 2},
	} {
		t.Run(name, func(t *testing.T) {
			f := newFakes()
			f.plan = lifecycle.Plan{Apps: 1, Clusters: 4, Batches: 2}
			started := map[string]int{}
			count := countStarted(started, nil)
			err := run(t, f, Instantiate, func(env *testsuite.TestWorkflowEnvironment) {
				env.OnGetVersion(changeRelease, workflow.DefaultVersion, releaseLatest).Return(c.release)
				count(env)
			})
			if err != nil {
				t.Fatal(err)
			}
			if started[lifecycle.ListBatch.Name()] != c.lists || started[lifecycle.CountBatch.Name()] != c.counts ||
				started[lifecycle.ApplyGroup.Name()] != c.groups || len(f.counted) != c.batches {
				t.Errorf("activities started %v, batches counted %v", started, f.counted)
			}
		})
	}
}

// From release 12 a rollout's gates read with Gate set (an applied object Ready once it
// exists is not read again); its bakes read everything, as every read of earlier runs did.
func TestARolloutsGatesTakeWhatIsReadyOnceAppliedFollowingTheRunsRelease(t *testing.T) {
	for name, c := range map[string]struct {
		release workflow.Version
		gate    bool
	}{
		"release 11": {releaseGroupLists, false},
		"release 12": {releaseGateApplied, true},
	} {
		t.Run(name, func(t *testing.T) {
			f := stages(t, rollout.Spec{Stages: []rollout.Stage{
				ring("a", func(s *rollout.Stage) { s.MinSuccessTime = rollout.Duration(time.Minute) }), ring("b", nil), ring("c", nil)}})
			f.gated = map[string][]bool{}
			err := run(t, f, Instantiate, func(env *testsuite.TestWorkflowEnvironment) {
				env.OnGetVersion(changeRelease, workflow.DefaultVersion, releaseLatest).Return(c.release)
				(&recorder{}).register(env)
			})
			if err != nil {
				t.Fatal(err)
			}
			// Stage a's gate, then its bake's reads; the other stages' gates.
			baked := f.gated["cp+a1"]
			if len(baked) < 3 || baked[0] != c.gate || slices.Contains(baked[1:], true) {
				t.Errorf("stage a's reads gated %v, want %v then false", baked, c.gate)
			}
			for _, k := range []string{"cp+b1", "cp+b2", "cp+c1"} {
				if g := f.gated[k]; len(g) == 0 || slices.Contains(g, !c.gate) {
					t.Errorf("%s's reads gated %v, want %v", k, g, c.gate)
				}
			}
		})
	}
}

// From release 13 up to inlineBatches batches run in the operation's own workflow; more,
// and every fan-out of earlier runs, go to child workflows. Either way every cluster is
// applied once and every batch counted.
func TestFewBatchesRunInlineFollowingTheRunsRelease(t *testing.T) {
	for name, c := range map[string]struct {
		release  workflow.Version
		batches  int
		children int
	}{
		"release 12, 3 batches": {releaseGateApplied, 3, 3},
		"release 13, 3 batches": {releaseInlineBatches, 3, 0},
		"release 13, 9 batches": {releaseInlineBatches, inlineBatches + 1, inlineBatches + 1},
	} {
		t.Run(name, func(t *testing.T) {
			f := newFakes()
			f.plan = lifecycle.Plan{Apps: 1, Clusters: 2 * c.batches, Batches: c.batches}
			f.clusters = func(b int) []string { return []string{fmt.Sprintf("cp+b%d-1", b), fmt.Sprintf("cp+b%d-2", b)} }
			children := 0
			err := run(t, f, Instantiate, func(env *testsuite.TestWorkflowEnvironment) {
				env.OnGetVersion(changeRelease, workflow.DefaultVersion, releaseLatest).Return(c.release)
				env.SetOnChildWorkflowStartedListener(func(info *workflow.Info, _ workflow.Context, _ converter.EncodedValues) {
					if info.WorkflowType.Name == lifecycle.WorkflowApplyBatch {
						children++
					}
				})
			})
			if err != nil {
				t.Fatal(err)
			}
			if children != c.children || len(f.applied) != 2*c.batches || len(f.counted) != c.batches {
				t.Errorf("%d batch children, applied %v, batches counted %v", children, f.applied, f.counted)
			}
			for k, n := range f.applied {
				if n != 1 {
					t.Errorf("%s applied %d times", k, n)
				}
			}
			if fin := f.finish(t); fin.Status != lifecycle.StatusInstantiated {
				t.Errorf("finished %+v", fin)
			}
		})
	}
}
