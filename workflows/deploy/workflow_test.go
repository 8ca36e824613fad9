package deploy

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/temco/temco/activities/cluster"
	"github.com/temco/temco/contract"
	"github.com/temco/temco/internal/core/artifact"
	"github.com/temco/temco/internal/core/lifecycle"
)

var opInput = lifecycle.OpInput{Target: lifecycle.Target{Project: "p", CompositeApp: "ca", Version: "v1", DIG: "d"}, ContextID: "42"}

// fakes are the activities of one test run; each field may be overridden per test.
type fakes struct {
	mu       sync.Mutex
	finished []lifecycle.FinishInput
	applied  map[string]int // cluster -> ApplyCluster calls
	deleted  map[string]int
	batches  []int
	ran      []string // controllers, in invocation order
	pruned   []lifecycle.ClusterInput
	copied   []lifecycle.CopyInput
	listed   int                 // ListBatch calls
	variants int                 // RenderVariants calls
	reading  int                 // RenderApps' answer: apps whose charts read .Capabilities
	counted  []int               // batches CountBatch stored counts for
	previous map[string]string   // cluster -> Previous seen by ApplyCluster
	deletedC map[string][]string // context -> clusters deleted

	render func() error
	place  func() error
	// artifacts is what ResolveArtifacts answers (nil: no app's chart comes by
	// reference); fetched the apps FetchArtifact was called for.
	artifacts func() ([]artifact.Resolved, error)
	fetched   []string
	rendered  int
	pin       bool // ResolveArtifacts says the DIG pins its images
	pinned    int  // PinImages calls
	control   func(contract.Input) error
	asks      func(contract.Input) []contract.Workflow     // what a controller call asks to run
	read      func(round int) lifecycle.ClusterResult      // ReadCluster's answer per call
	readOf    func(cluster string) lifecycle.ClusterResult // ... or per cluster, when set
	reads     int
	gated     map[string][]bool // cluster -> each read's ClusterInput.Gate
	plan      lifecycle.Plan
	hooked    lifecycle.Hooked // ContextControllers' answer
	apply     func(cluster string, attempt int32) (lifecycle.ClusterResult, error)
	// onApply and onPrune replace the apply and prune fakes whole (alone and in groups).
	onApply, onPrune func(context.Context, lifecycle.ClusterInput) (lifecycle.ClusterResult, error)
	clusters         func(batch int) []string
	listErr          func(call int) error // the call-th listing's error (nil: none)
}

func newFakes() *fakes {
	return &fakes{
		applied: map[string]int{}, deleted: map[string]int{}, previous: map[string]string{}, deletedC: map[string][]string{},
		reading: 1,
		render:  func() error { return nil },
		place:   func() error { return nil },
		control: func(contract.Input) error { return nil },
		plan:    lifecycle.Plan{Apps: 1, Clusters: 2, Batches: 1},
		apply: func(string, int32) (lifecycle.ClusterResult, error) {
			return lifecycle.ClusterResult{Done: 3}, nil
		},
		clusters: func(int) []string { return []string{"cp+c1", "cp+c2"} },
	}
}

func (f *fakes) register(env *testsuite.TestWorkflowEnvironment) {
	env.RegisterWorkflowWithOptions(ApplyBatch, workflow.RegisterOptions{Name: lifecycle.WorkflowApplyBatch})
	env.RegisterWorkflowWithOptions(DeleteBatch, workflow.RegisterOptions{Name: lifecycle.WorkflowDeleteBatch})
	env.RegisterWorkflowWithOptions(PruneBatch, workflow.RegisterOptions{Name: lifecycle.WorkflowPruneBatch})
	env.RegisterWorkflowWithOptions(ReadBatch, workflow.RegisterOptions{Name: lifecycle.WorkflowReadBatch})
	lifecycle.Register(env, lifecycle.ResolveArtifacts, func(context.Context, lifecycle.ContextRef) (lifecycle.ArtifactPlan, error) {
		if f.artifacts == nil {
			return lifecycle.ArtifactPlan{}, nil
		}
		fetch, err := f.artifacts()
		return lifecycle.ArtifactPlan{Fetch: fetch, PinImages: f.pin}, err
	})
	lifecycle.RegisterNoResult(env, lifecycle.PinImages, func(context.Context, lifecycle.ContextRef) error {
		f.mu.Lock()
		f.pinned++
		f.mu.Unlock()
		return nil
	})
	lifecycle.RegisterNoResult(env, lifecycle.FetchArtifact, func(_ context.Context, in lifecycle.FetchInput) error {
		f.mu.Lock()
		f.fetched = append(f.fetched, in.Artifact.App)
		f.mu.Unlock()
		return nil
	})
	lifecycle.Register(env, lifecycle.RenderApps, func(context.Context, lifecycle.ContextRef) (int, error) {
		f.mu.Lock()
		f.rendered++
		f.mu.Unlock()
		return f.reading, f.render()
	})
	lifecycle.RegisterNoResult(env, lifecycle.RenderVariants, func(context.Context, lifecycle.ContextRef) error {
		f.mu.Lock()
		f.variants++
		f.mu.Unlock()
		return nil
	})
	lifecycle.Register(env, lifecycle.PlaceApps, func(context.Context, lifecycle.ContextRef) (lifecycle.Plan, error) { return f.plan, f.place() })
	lifecycle.Register(env, lifecycle.RunController, func(_ context.Context, in contract.Input) (contract.Result, error) {
		f.mu.Lock()
		f.ran = append(f.ran, strings.TrimSpace(in.Controller+" "+in.Hook))
		f.mu.Unlock()
		var res contract.Result
		if f.asks != nil {
			res.Workflows = f.asks(in)
		}
		return res, f.control(in)
	})
	lifecycle.Register(env, lifecycle.CommitControllers, func(context.Context, lifecycle.ContextRef) (lifecycle.Plan, error) {
		f.mu.Lock()
		f.ran = append(f.ran, "commit")
		f.mu.Unlock()
		p := f.plan
		p.Controllers = nil // as the activity: the workflow already has them
		return p, nil
	})
	lifecycle.Register(env, lifecycle.ContextControllers, func(context.Context, string) (lifecycle.Hooked, error) { return f.hooked, nil })
	lifecycle.Register(env, lifecycle.ContextBatches, func(context.Context, string) (int, error) { return f.plan.Batches, nil })
	lifecycle.Register(env, lifecycle.ListBatch, func(ctx context.Context, in lifecycle.BatchInput) ([]string, error) {
		return fakeBatches{f}.StartBatch(ctx, in.ContextID, in.Batch)
	})
	lifecycle.RegisterNoResult(env, lifecycle.CountBatch, func(ctx context.Context, in lifecycle.BatchInput) error {
		return fakeBatches{f}.CountBatch(ctx, in.ContextID, in.Batch)
	})
	apply := func(ctx context.Context, in lifecycle.ClusterInput) (lifecycle.ClusterResult, error) {
		if f.onApply != nil {
			return f.onApply(ctx, in)
		}
		f.mu.Lock()
		f.applied[in.Cluster]++
		f.previous[in.Cluster] = in.Previous
		f.mu.Unlock()
		return f.apply(in.Cluster, attempt(ctx, in))
	}
	del := func(_ context.Context, in lifecycle.ClusterInput) (lifecycle.ClusterResult, error) {
		f.mu.Lock()
		f.deleted[in.Cluster]++
		f.deletedC[in.ContextID] = append(f.deletedC[in.ContextID], in.Cluster)
		f.mu.Unlock()
		return lifecycle.ClusterResult{Done: 3}, nil
	}
	read := func(_ context.Context, in lifecycle.ClusterInput) (lifecycle.ClusterResult, error) {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.reads++
		if f.gated != nil {
			f.gated[in.Cluster] = append(f.gated[in.Cluster], in.Gate)
		}
		if f.readOf != nil {
			return f.readOf(in.Cluster), nil
		}
		if f.read != nil {
			return f.read(f.reads), nil
		}
		return lifecycle.ClusterResult{Done: 1}, nil
	}
	prune := func(ctx context.Context, in lifecycle.ClusterInput) (lifecycle.ClusterResult, error) {
		if f.onPrune != nil {
			return f.onPrune(ctx, in)
		}
		f.mu.Lock()
		f.pruned = append(f.pruned, in)
		f.mu.Unlock()
		return lifecycle.ClusterResult{Done: 1}, nil
	}
	// Each per-cluster fake also runs in groups, as the worker runs the real ones.
	for _, a := range []struct {
		one   lifecycle.Activity[lifecycle.ClusterInput, lifecycle.ClusterResult]
		group lifecycle.Activity[lifecycle.GroupInput, lifecycle.GroupResult]
		fn    func(context.Context, lifecycle.ClusterInput) (lifecycle.ClusterResult, error)
	}{
		{lifecycle.ApplyCluster, lifecycle.ApplyGroup, apply},
		{lifecycle.DeleteCluster, lifecycle.DeleteGroup, del},
		{lifecycle.ReadCluster, lifecycle.ReadGroup, read},
		{lifecycle.PruneCluster, lifecycle.PruneGroup, prune},
	} {
		lifecycle.Register(env, a.one, a.fn)
		lifecycle.Register(env, a.group, func(ctx context.Context, in lifecycle.GroupInput) (lifecycle.GroupResult, error) {
			return cluster.GroupOf(ctx, in, fakeBatches{f}, a.fn)
		})
	}
	for _, a := range []lifecycle.Activity[lifecycle.ClusterInput, lifecycle.ClusterResult]{lifecycle.SetUpLogicalCloud, lifecycle.TearDownLogicalCloud} {
		lifecycle.Register(env, a, func(_ context.Context, in lifecycle.ClusterInput) (lifecycle.ClusterResult, error) {
			f.mu.Lock()
			f.ran = append(f.ran, a.Name()+" "+in.Cluster)
			f.mu.Unlock()
			return lifecycle.ClusterResult{Done: 1}, nil
		})
	}
	lifecycle.Register(env, lifecycle.PrepareLogicalCloud, func(context.Context, lifecycle.ContextRef) (lifecycle.Plan, error) {
		f.mu.Lock()
		f.ran = append(f.ran, "prepare")
		f.mu.Unlock()
		return f.plan, nil
	})
	lifecycle.Register(env, lifecycle.CopyContext, func(_ context.Context, in lifecycle.CopyInput) (lifecycle.Plan, error) {
		f.mu.Lock()
		f.copied = append(f.copied, in)
		f.mu.Unlock()
		return f.plan, nil
	})
	lifecycle.RegisterNoResult(env, lifecycle.FinishOperation, func(_ context.Context, in lifecycle.FinishInput) error {
		f.mu.Lock()
		f.finished = append(f.finished, in)
		f.mu.Unlock()
		return nil
	})
}

// attempt is the attempt a cluster's fake activity counts as: the group's in a group, and
// counted on from it once the cluster left its group.
func attempt(ctx context.Context, in lifecycle.ClusterInput) int32 {
	n := activity.GetInfo(ctx).Attempt
	if in.After != nil {
		n += in.After.Attempts
	}
	return n
}

func (f *fakes) finish(t *testing.T) lifecycle.FinishInput {
	t.Helper()
	if len(f.finished) != 1 {
		t.Fatalf("FinishOperation ran %d times, want once: %+v", len(f.finished), f.finished)
	}
	return f.finished[0]
}

func newEnv() *testsuite.TestWorkflowEnvironment {
	var s testsuite.WorkflowTestSuite
	s.SetLogger(log.NewStructuredLogger(slog.New(slog.DiscardHandler)))
	return s.NewTestWorkflowEnvironment()
}

func run(t *testing.T, f *fakes, wf any, setup func(env *testsuite.TestWorkflowEnvironment)) error {
	t.Helper()
	return runWith(t, f, wf, opInput, setup)
}

func runWith(t *testing.T, f *fakes, wf any, in lifecycle.OpInput, setup func(env *testsuite.TestWorkflowEnvironment)) error {
	t.Helper()
	env := newEnv()
	f.register(env)
	if setup != nil {
		setup(env)
	}
	env.ExecuteWorkflow(wf, in)
	if !env.IsWorkflowCompleted() {
		t.Fatal("workflow did not complete")
	}
	return env.GetWorkflowError()
}

func TestInstantiateSucceeds(t *testing.T) {
	f := newFakes()
	f.plan.Controllers = []lifecycle.Controller{{Name: "hpa-plc", Intent: "h"}, {Name: "gac", Intent: "i"}, {Name: "dtc", Intent: "j"}}
	if err := run(t, f, Instantiate, nil); err != nil {
		t.Fatal(err)
	}
	if strings.Join(f.ran, ",") != "hpa-plc,gac,dtc,commit,hpa-plc finished,gac finished,dtc finished" {
		t.Errorf("controllers ran %v, want the plan's order, the commit of their edits, then their finished hooks", f.ran)
	}
	if fin := f.finish(t); fin.Status != lifecycle.StatusInstantiated || fin.Stopped {
		t.Errorf("finished %+v", fin)
	}
	if f.applied["cp+c1"] != 1 || f.applied["cp+c2"] != 1 {
		t.Errorf("applied %v", f.applied)
	}
}

// A controller that refuses fails the operation with its message before any cluster is
// touched; the controllers after it do not run. Each gets its step and the DIG.
func TestFailingControllerStopsBeforeApply(t *testing.T) {
	f := newFakes()
	f.plan.Controllers = []lifecycle.Controller{{Name: "hpa-plc", Type: "placement", Intent: "h"}, {Name: "gac", Intent: "i"}}
	var seen []contract.Input
	f.control = func(in contract.Input) error {
		seen = append(seen, in)
		if in.Controller == "hpa-plc" {
			return temporal.NewNonRetryableApplicationError("no cluster qualifies for app web", lifecycle.ErrInvalidInput, nil)
		}
		return nil
	}
	err := run(t, f, Instantiate, nil)
	if err == nil || !strings.Contains(err.Error(), "no cluster qualifies for app web") {
		t.Fatalf("workflow error %v, want the controller's message", err)
	}
	if len(seen) != 1 || seen[0].Step != 0 || seen[0].Type != "placement" || seen[0].DeploymentIntentGroup != "d" ||
		seen[0].CompositeAppVersion != "v1" || seen[0].Operation != lifecycle.OpInstantiate {
		t.Errorf("controller inputs %+v", seen)
	}
	if len(f.applied) != 0 || slices.Contains(f.ran, "commit") {
		t.Errorf("applied %v, ran %v after a failing controller", f.applied, f.ran)
	}
	if fin := f.finish(t); fin.Status != lifecycle.StatusInstantiateFailed || !strings.Contains(fin.Error, "no cluster qualifies") || !fin.Refused {
		t.Errorf("finished %+v, want InstantiateFailed, refused (nothing applied)", fin)
	}
}

// An instantiate that failed applying is not refused: its objects are on clusters.
func TestInstantiateFailingToApplyIsNotRefused(t *testing.T) {
	f := newFakes()
	f.apply = func(string, int32) (lifecycle.ClusterResult, error) { return lifecycle.ClusterResult{Failed: 1}, nil }
	if err := run(t, f, Instantiate, nil); err == nil {
		t.Fatal("an instantiate whose objects failed succeeded")
	}
	if fin := f.finish(t); fin.Status != lifecycle.StatusInstantiateFailed || fin.Refused {
		t.Errorf("finished %+v, want InstantiateFailed, not refused", fin)
	}
}

// hookCall is one hook call a test saw, with how many clusters were applied or deleted
// by then.
type hookCall struct {
	controller, hook string
	step, done       int
}

// recordHooks makes f's controllers record their hook calls; fail fails a hook call.
func recordHooks(f *fakes, fail func(contract.Input) error) *[]hookCall {
	var calls []hookCall
	f.control = func(in contract.Input) error {
		if in.Hook == contract.HookRun {
			return nil
		}
		f.mu.Lock()
		calls = append(calls, hookCall{in.Controller, in.Hook, in.Step, len(f.applied) + len(f.deleted)})
		f.mu.Unlock()
		if fail != nil {
			return fail(in)
		}
		return nil
	}
	return &calls
}

// Controllers hear that an instantiate finished once every cluster was applied (EMCO
// tells them when rsync accepted it); a failing finished hook changes nothing.
func TestFinishedHooksRunAfterTheApply(t *testing.T) {
	f := newFakes()
	f.plan.Controllers = []lifecycle.Controller{{Name: "plc", Type: "placement"}, {Name: "gac", Type: "action"}}
	calls := recordHooks(f, func(in contract.Input) error {
		return temporal.NewNonRetryableApplicationError("observer down", lifecycle.ErrInvalidInput, nil)
	})
	if err := run(t, f, Instantiate, nil); err != nil {
		t.Fatal(err)
	}
	want := []hookCall{{"plc", contract.HookFinished, 2, 2}, {"gac", contract.HookFinished, 2, 2}}
	if !slices.Equal(*calls, want) {
		t.Errorf("hook calls %+v, want %+v", *calls, want)
	}
	if fin := f.finish(t); fin.Status != lifecycle.StatusInstantiated {
		t.Errorf("finished %+v", fin)
	}
}

// Terminate calls the action controllers' terminate hooks before deleting anything (a
// refusal fails it with nothing deleted), and every controller's finished hook after.
func TestTerminateHooks(t *testing.T) {
	f := newFakes()
	f.hooked = lifecycle.Hooked{Controllers: []lifecycle.Controller{{Name: "plc", Type: "placement"}, {Name: "gac", Type: "action"}}, Steps: 2}
	calls := recordHooks(f, nil)
	if err := run(t, f, Terminate, nil); err != nil {
		t.Fatal(err)
	}
	want := []hookCall{{"gac", contract.HookTerminate, 2, 0}, {"plc", contract.HookFinished, 2, 2}, {"gac", contract.HookFinished, 2, 2}}
	if !slices.Equal(*calls, want) {
		t.Errorf("hook calls %+v, want %+v", *calls, want)
	}

	f = newFakes()
	f.hooked = lifecycle.Hooked{Controllers: []lifecycle.Controller{{Name: "gac", Type: "action"}}, Steps: 1}
	recordHooks(f, func(in contract.Input) error {
		return temporal.NewNonRetryableApplicationError("certificates still in use", lifecycle.ErrInvalidInput, nil)
	})
	err := run(t, f, Terminate, nil)
	if err == nil || !strings.Contains(err.Error(), "certificates still in use") || len(f.deleted) != 0 {
		t.Errorf("refused terminate hook: error %v, deleted %v", err, f.deleted)
	}

	// Runs of earlier releases call no hook: replaying them must not schedule one.
	f = newFakes()
	f.hooked = lifecycle.Hooked{Controllers: []lifecycle.Controller{{Name: "gac", Type: "action"}}, Steps: 1}
	calls = recordHooks(f, nil)
	err = run(t, f, Terminate, func(env *testsuite.TestWorkflowEnvironment) {
		env.OnGetVersion(changeRelease, workflow.DefaultVersion, releaseLatest).Return(releaseLocalFirst)
	})
	if err != nil || len(*calls) != 0 {
		t.Errorf("release 2 terminate: error %v, hook calls %+v", err, *calls)
	}
}

func TestInstantiateFansOutBatchesAsChildWorkflows(t *testing.T) {
	f := newFakes()
	f.plan = lifecycle.Plan{Apps: 1, Clusters: 9, Batches: 9}
	f.clusters = func(b int) []string { return []string{"cp+c" + string(rune('a'+b))} }
	if err := run(t, f, Instantiate, nil); err != nil {
		t.Fatal(err)
	}
	if len(f.batches) != 9 || len(f.applied) != 9 || len(f.counted) != 9 {
		t.Errorf("batches %v, clusters applied %v, batches counted %v", f.batches, f.applied, f.counted)
	}
	if fin := f.finish(t); fin.Status != lifecycle.StatusInstantiated {
		t.Errorf("finished %+v", fin)
	}
}

// A batch's workflow task that a dead worker held goes to another worker after
// lifecycle.TaskTimeout, not Temporal's default 10 s.
func TestBatchWorkflowTasksTimeOutSooner(t *testing.T) {
	f := newFakes()
	f.plan = lifecycle.Plan{Apps: 1, Clusters: 2, Batches: inlineBatches + 1}
	var timeouts []time.Duration
	err := run(t, f, Instantiate, func(env *testsuite.TestWorkflowEnvironment) {
		env.SetOnChildWorkflowStartedListener(func(info *workflow.Info, _ workflow.Context, _ converter.EncodedValues) {
			timeouts = append(timeouts, info.WorkflowTaskTimeout)
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(timeouts) != inlineBatches+1 || slices.ContainsFunc(timeouts, func(d time.Duration) bool { return d != lifecycle.TaskTimeout }) {
		t.Errorf("batch workflow task timeouts %v, want %s each", timeouts, lifecycle.TaskTimeout)
	}
}

func TestInstantiateRetriesAnUnreachableClusterUntilItAnswers(t *testing.T) {
	f := newFakes()
	f.apply = func(cluster string, attempt int32) (lifecycle.ClusterResult, error) {
		if cluster == "cp+c2" && attempt < 3 {
			return lifecycle.ClusterResult{}, errors.New("dial tcp: connection refused")
		}
		return lifecycle.ClusterResult{Done: 3}, nil
	}
	if err := run(t, f, Instantiate, nil); err != nil {
		t.Fatal(err)
	}
	if f.applied["cp+c2"] != 3 {
		t.Errorf("unreachable cluster tried %d times, want 3", f.applied["cp+c2"])
	}
	if fin := f.finish(t); fin.Status != lifecycle.StatusInstantiated {
		t.Errorf("finished %+v", fin)
	}
}

// failingOnce is an apply whose first attempt on cluster fails as unreachable.
func failingOnce(cluster string) func(string, int32) (lifecycle.ClusterResult, error) {
	return func(c string, attempt int32) (lifecycle.ClusterResult, error) {
		if c == cluster && attempt < 2 {
			return lifecycle.ClusterResult{}, errors.New("dial tcp: connection refused")
		}
		return lifecycle.ClusterResult{Done: 3}, nil
	}
}

// countStarted is a run's setup counting into started the activities it starts, by type;
// each, when set, sees every start too.
func countStarted(started map[string]int, each func(*activity.Info, converter.EncodedValues)) func(*testsuite.TestWorkflowEnvironment) {
	var mu sync.Mutex
	return func(env *testsuite.TestWorkflowEnvironment) {
		env.SetOnActivityStartedListener(func(info *activity.Info, _ context.Context, args converter.EncodedValues) {
			mu.Lock()
			defer mu.Unlock()
			started[info.ActivityType.Name]++
			if each != nil {
				each(info, args)
			}
		})
	}
}

// fakeBatches lists and counts batches as ListBatch and CountBatch, and groups that list
// their batch, do.
type fakeBatches struct{ f *fakes }

func (b fakeBatches) StartBatch(_ context.Context, _ string, batch int) ([]string, error) {
	b.f.mu.Lock()
	defer b.f.mu.Unlock()
	b.f.batches = append(b.f.batches, batch)
	b.f.listed++
	if b.f.listErr != nil {
		if err := b.f.listErr(b.f.listed); err != nil {
			return nil, err
		}
	}
	return b.f.clusters(batch), nil
}

func (b fakeBatches) CountBatch(_ context.Context, _ string, batch int) error {
	b.f.mu.Lock()
	defer b.f.mu.Unlock()
	b.f.counted = append(b.f.counted, batch)
	return nil
}

// A batch's clusters are applied by group activities of GroupSize; a cluster that fails
// leaves its group and goes on in its own activity, continuing the group's attempts; with
// a GroupSize of 1, every cluster has its own activity, as before groups.
func TestABatchIsAppliedInGroupsAndAFailedClusterGoesOnAlone(t *testing.T) {
	defer func(n int) { GroupSize = n }(GroupSize)
	for _, tc := range []struct {
		size          int
		groups, alone int
	}{
		{size: 5, groups: 1, alone: 1},
		{size: 3, groups: 3, alone: 1}, // the first lists the 5, too many, and hands them back
		{size: 1, groups: 0, alone: 6},
	} {
		GroupSize = tc.size
		f := newFakes()
		f.plan = lifecycle.Plan{Apps: 1, Clusters: 5, Batches: 1}
		f.clusters = func(int) []string { return []string{"cp+c1", "cp+c2", "cp+c3", "cp+c4", "cp+c5"} }
		var afters []lifecycle.Prior
		f.apply = failingOnce("cp+c4")
		started := map[string]int{}
		err := runWith(t, f, Instantiate, lifecycle.OpInput{Target: opInput.Target, ContextID: "42"}, countStarted(started,
			func(info *activity.Info, args converter.EncodedValues) {
				if info.ActivityType.Name == lifecycle.ApplyCluster.Name() {
					var in lifecycle.ClusterInput
					if args.Get(&in) == nil && in.After != nil {
						afters = append(afters, *in.After)
					}
				}
			}))
		if err != nil {
			t.Fatal(err)
		}
		if started[lifecycle.ApplyGroup.Name()] != tc.groups || started[lifecycle.ApplyCluster.Name()] != tc.alone {
			t.Errorf("size %d: activities started %v, want %d groups and %d alone", tc.size, started, tc.groups, tc.alone)
		}
		if tc.size > 1 && (len(afters) != 1 || afters[0].Attempts != 1 || afters[0].Activity == "") {
			t.Errorf("size %d: the left cluster's activity continues %+v, want the group's first attempt", tc.size, afters)
		}
		if f.applied["cp+c4"] != 2 || f.applied["cp+c1"] != 1 {
			t.Errorf("size %d: applies %v, want cp+c4 twice and every other cluster once", tc.size, f.applied)
		}
		if fin := f.finish(t); fin.Status != lifecycle.StatusInstantiated {
			t.Errorf("size %d: finished %+v", tc.size, fin)
		}
	}
}

// A batch that fits one group is listed and counted by that group: no ListBatch or
// CountBatch activity runs. One whose cluster left its group is counted by CountBatch once
// that cluster is done.
func TestAGroupListsAndCountsTheBatchItFits(t *testing.T) {
	for _, fail := range []bool{false, true} {
		f := newFakes()
		f.plan = lifecycle.Plan{Apps: 1, Clusters: 4, Batches: 2}
		f.clusters = func(b int) []string { return []string{fmt.Sprintf("cp+c%d", 2*b+1), fmt.Sprintf("cp+c%d", 2*b+2)} }
		if fail {
			f.apply = failingOnce("cp+c1")
		}
		started := map[string]int{}
		err := runWith(t, f, Instantiate, lifecycle.OpInput{Target: opInput.Target, ContextID: "42"}, countStarted(started, nil))
		if err != nil {
			t.Fatal(err)
		}
		slices.Sort(f.counted)
		wantCount := map[bool]int{false: 0, true: 1}[fail]
		if started[lifecycle.ApplyGroup.Name()] != 2 || started[lifecycle.ListBatch.Name()] != 0 ||
			started[lifecycle.CountBatch.Name()] != wantCount || f.listed != 2 || !slices.Equal(f.counted, []int{0, 1}) {
			t.Errorf("a cluster failing %v: activities started %v, batches listed %d, counted %v", fail, started, f.listed, f.counted)
		}
		if got := len(f.applied); got != 4 {
			t.Errorf("a cluster failing %v: applied %v", fail, f.applied)
		}
		if fin := f.finish(t); fin.Status != lifecycle.StatusInstantiated {
			t.Errorf("a cluster failing %v: finished %+v", fail, fin)
		}
	}
}

// A group that failed to list its batch for good (a read's three attempts) fails each of
// the batch's clusters, which ListBatch then names, as a group given them would.
func TestAGroupThatCouldNotListFailsEveryClusterOfItsBatch(t *testing.T) {
	f := newFakes()
	f.listErr = func(call int) error {
		if call <= 3 {
			return errors.New("store: connection refused")
		}
		return nil
	}
	env := newEnv()
	f.register(env)
	// The batch's counts, which a failed workflow would not return.
	env.ExecuteWorkflow(func(ctx workflow.Context, in lifecycle.BatchInput) (batchOutcome, error) {
		r, err := ReadBatch(ctx, in)
		return batchOutcome{r, err != nil}, nil
	}, lifecycle.BatchInput{ContextID: "42"})
	var out batchOutcome
	if err := env.GetWorkflowResult(&out); err != nil {
		t.Fatal(err)
	}
	if r := out.Result; !out.Failed || r.Clusters != 2 || r.ClustersFailed != 2 || f.listed != 4 || f.reads != 0 {
		t.Errorf("outcome %+v, listed %d times, read %d clusters", out, f.listed, f.reads)
	}
}

type batchOutcome struct {
	Result lifecycle.BatchResult
	Failed bool
}

func TestStopEndsRetriesAndRecordsTheStoppedState(t *testing.T) {
	f := newFakes()
	f.apply = func(string, int32) (lifecycle.ClusterResult, error) {
		return lifecycle.ClusterResult{}, errors.New("dial tcp: connection refused")
	}
	// (The test environment caps "unlimited" retries at 10 attempts: stop well before.)
	err := run(t, f, Instantiate, func(env *testsuite.TestWorkflowEnvironment) {
		env.RegisterDelayedCallback(func() { env.SignalWorkflow(lifecycle.SignalStop, nil) }, 30*time.Second)
	})
	if err != nil {
		t.Fatal(err)
	}
	if fin := f.finish(t); fin.Status != lifecycle.StatusInstantiateStopped || !fin.Stopped {
		t.Errorf("finished %+v", fin)
	}
}

func TestAStoppedBatchLeavesItsCountsToBeCountedLive(t *testing.T) {
	f := newFakes()
	f.plan = lifecycle.Plan{Apps: 1, Clusters: 2, Batches: 2}
	f.clusters = func(b int) []string { return []string{"cp+c" + string(rune('a'+b))} }
	f.apply = func(cluster string, _ int32) (lifecycle.ClusterResult, error) {
		if cluster == "cp+cb" {
			return lifecycle.ClusterResult{}, errors.New("dial tcp: connection refused")
		}
		return lifecycle.ClusterResult{Done: 3}, nil
	}
	err := run(t, f, Instantiate, func(env *testsuite.TestWorkflowEnvironment) {
		env.RegisterDelayedCallback(func() { env.SignalWorkflow(lifecycle.SignalStop, nil) }, 30*time.Second)
	})
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(f.counted) != "[0]" {
		t.Errorf("counted batches %v, want only the finished one", f.counted)
	}
}

func TestStopDuringRenderingStopsToo(t *testing.T) {
	f := newFakes()
	f.render = func() error { return errors.New("mongo unavailable") } // retried forever
	err := run(t, f, Instantiate, func(env *testsuite.TestWorkflowEnvironment) {
		env.RegisterDelayedCallback(func() { env.SignalWorkflow(lifecycle.SignalStop, nil) }, 30*time.Second)
	})
	if err != nil {
		t.Fatal(err)
	}
	if fin := f.finish(t); fin.Status != lifecycle.StatusInstantiateStopped || len(f.applied) != 0 {
		t.Errorf("finished %+v, applied %v", fin, f.applied)
	}
}

func TestCancelByTerminateRecordsFailureOnTheWayOut(t *testing.T) {
	f := newFakes()
	f.apply = func(string, int32) (lifecycle.ClusterResult, error) {
		return lifecycle.ClusterResult{}, errors.New("dial tcp: connection refused")
	}
	err := run(t, f, Instantiate, func(env *testsuite.TestWorkflowEnvironment) {
		env.RegisterDelayedCallback(env.CancelWorkflow, 30*time.Second)
	})
	if !temporal.IsCanceledError(err) {
		t.Fatalf("error %v, want cancelled", err)
	}
	if fin := f.finish(t); fin.Status != lifecycle.StatusInstantiateFailed || fin.Error != "cancelled by terminate" {
		t.Errorf("finished %+v", fin)
	}
}

func TestInvalidInputFailsWithoutRetry(t *testing.T) {
	f := newFakes()
	var renders atomic.Int32
	f.render = func() error {
		renders.Add(1)
		return temporal.NewNonRetryableApplicationError(`app "web": render chart web: parse error`, lifecycle.ErrInvalidInput, nil)
	}
	err := run(t, f, Instantiate, nil)
	if err == nil {
		t.Fatal("workflow succeeded")
	}
	if renders.Load() != 1 {
		t.Errorf("rendered %d times, want once", renders.Load())
	}
	if fin := f.finish(t); fin.Status != lifecycle.StatusInstantiateFailed || fin.Error != `app "web": render chart web: parse error` {
		t.Errorf("finished %+v", fin)
	}
}

func TestRenderingAndPlacementRunTogether(t *testing.T) {
	f := newFakes()
	placing := make(chan struct{})
	f.place = func() error { close(placing); return nil }
	f.render = func() error {
		select {
		case <-placing:
			return nil
		case <-time.After(10 * time.Second):
			return temporal.NewNonRetryableApplicationError("placement did not start while rendering", lifecycle.ErrInvalidInput, nil)
		}
	}
	if err := run(t, f, Instantiate, nil); err != nil {
		t.Fatal(err)
	}
	if fin := f.finish(t); fin.Status != lifecycle.StatusInstantiated || len(f.applied) != 2 {
		t.Errorf("finished %+v, applied %v", fin, f.applied)
	}
}

func TestARenderingErrorIsReportedBeforeAPlacementError(t *testing.T) {
	f := newFakes()
	placed := make(chan struct{})
	f.place = func() error {
		defer close(placed)
		return temporal.NewNonRetryableApplicationError(`cluster "x" does not exist`, lifecycle.ErrInvalidInput, nil)
	}
	f.render = func() error {
		<-placed // placement fails first
		return temporal.NewNonRetryableApplicationError(`app "web": parse error`, lifecycle.ErrInvalidInput, nil)
	}
	if err := run(t, f, Instantiate, nil); err == nil {
		t.Fatal("workflow succeeded")
	}
	if fin := f.finish(t); fin.Status != lifecycle.StatusInstantiateFailed || fin.Error != `app "web": parse error` {
		t.Errorf("finished %+v", fin)
	}
}

func TestRejectedObjectsMakeInstantiateFailed(t *testing.T) {
	f := newFakes()
	f.apply = func(string, int32) (lifecycle.ClusterResult, error) {
		return lifecycle.ClusterResult{Done: 2, Failed: 1}, nil
	}
	if err := run(t, f, Instantiate, nil); err == nil {
		t.Fatal("workflow succeeded")
	}
	if fin := f.finish(t); fin.Status != lifecycle.StatusInstantiateFailed || fin.Error != "2 resources failed to apply" {
		t.Errorf("finished %+v", fin)
	}
}

func TestTerminateDeletesEveryCluster(t *testing.T) {
	f := newFakes()
	f.plan.Batches = 3
	f.clusters = func(b int) []string { return []string{"cp+c" + string(rune('a'+b))} }
	if err := run(t, f, Terminate, nil); err != nil {
		t.Fatal(err)
	}
	if len(f.deleted) != 3 {
		t.Errorf("deleted %v", f.deleted)
	}
	if fin := f.finish(t); fin.Status != lifecycle.StatusTerminated {
		t.Errorf("finished %+v", fin)
	}
}

func TestTerminateOfAContextThatNeverPlacedAnything(t *testing.T) {
	f := newFakes()
	f.plan.Batches = 0
	if err := run(t, f, Terminate, nil); err != nil {
		t.Fatal(err)
	}
	if fin := f.finish(t); fin.Status != lifecycle.StatusTerminated || len(f.deleted) != 0 {
		t.Errorf("finished %+v, deleted %v", fin, f.deleted)
	}
}

func TestProgressQuery(t *testing.T) {
	f := newFakes()
	f.plan = lifecycle.Plan{Apps: 1, Clusters: 2, Batches: 2}
	f.clusters = func(b int) []string { return []string{"cp+c" + string(rune('a'+b))} }
	env := newEnv()
	f.register(env)
	env.ExecuteWorkflow(Instantiate, opInput)
	v, err := env.QueryWorkflow(lifecycle.QueryProgress)
	if err != nil {
		t.Fatal(err)
	}
	var p lifecycle.Progress
	if err := v.Get(&p); err != nil {
		t.Fatal(err)
	}
	if p.Phase != "done" || p.ClustersTotal != 2 || p.ClustersDone != 2 || p.BatchesDone != 2 {
		t.Errorf("progress %+v", p)
	}
}

func TestASingleBatchFromThePlanNeedsNoLookup(t *testing.T) {
	f := newFakes()
	f.plan.FirstBatch = []string{"cp+c1", "cp+c2"}
	if err := run(t, f, Instantiate, nil); err != nil {
		t.Fatal(err)
	}
	if f.listed != 0 || len(f.applied) != 2 {
		t.Errorf("ListBatch ran %d times, applied %v", f.listed, f.applied)
	}
}

// A new run records one version gate, whatever it does: each gate costs a marker and a
// search attribute upsert, so changes are gated by the release gate, not by their own.
func TestANewRunRecordsOnlyTheReleaseGate(t *testing.T) {
	leftovers := opInput
	leftovers.Leftovers = []string{"41"}
	for name, c := range map[string]struct {
		wf      any
		in      any
		batches int
		runs    int // the workflow and its batch children
	}{
		"instantiate":             {Instantiate, opInput, 1, 1},
		"instantiate in batches":  {Instantiate, opInput, 3, 1},
		"instantiate in children": {Instantiate, opInput, inlineBatches + 1, inlineBatches + 2},
		"terminate":               {Terminate, leftovers, 1, 1},
		"update":                  {Update, updateInput, 1, 1},
		"read":                    {ReadClusterStatus, lifecycle.ReadInput{ContextID: "42"}, 1, 1},
	} {
		t.Run(name, func(t *testing.T) {
			f := newFakes()
			f.plan.Batches = c.batches
			var gates []string
			env := newEnv()
			f.register(env)
			env.OnGetVersion(mock.Anything, workflow.DefaultVersion, releaseLatest).Run(func(args mock.Arguments) {
				gates = append(gates, args.String(0))
			}).Return(releaseLatest)
			env.ExecuteWorkflow(c.wf, c.in)
			if err := env.GetWorkflowError(); err != nil || !env.IsWorkflowCompleted() {
				t.Fatalf("completed %v, error %v", env.IsWorkflowCompleted(), err)
			}
			if !slices.Equal(gates, slices.Repeat([]string{changeRelease}, c.runs)) {
				t.Errorf("version gates %v, want %q once in each of %d runs", gates, changeRelease, c.runs)
			}
		})
	}
}

var updateInput = lifecycle.OpInput{Target: opInput.Target, ContextID: "43", Previous: "42"}

func TestUpdateAppliesTheDifferenceThenPrunes(t *testing.T) {
	f := newFakes()
	f.plan.Batches = 1
	var prevBatches int
	err := runWith(t, f, Update, updateInput, func(env *testsuite.TestWorkflowEnvironment) {
		env.OnActivity(lifecycle.ContextBatches.Name(), mock.Anything, "42").Return(func(context.Context, string) (int, error) {
			prevBatches++
			return 2, nil // the previous revision used more clusters
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	if f.previous["cp+c1"] != "42" || f.previous["cp+c2"] != "42" {
		t.Errorf("apply did not diff against the previous revision: %v", f.previous)
	}
	if prevBatches != 1 || len(f.pruned) != 4 { // 2 batches of the previous revision, 2 clusters each
		t.Fatalf("pruned %v", f.pruned)
	}
	for _, p := range f.pruned {
		if p.ContextID != "42" || p.Next != "43" {
			t.Errorf("prune %+v: want the previous context pruned against the new one", p)
		}
	}
	if fin := f.finish(t); fin.Status != lifecycle.StatusInstantiated || fin.Superseded != "42" || fin.ContextID != "43" {
		t.Errorf("finished %+v", fin)
	}
	if len(f.copied) != 0 {
		t.Error("an update copied a context instead of rendering")
	}
}

func TestRollbackCopiesTheStoredRevision(t *testing.T) {
	f := newFakes()
	f.render = func() error { return errors.New("a rollback must not render") }
	in := updateInput
	in.Source = "41"
	if err := runWith(t, f, Rollback, in, nil); err != nil {
		t.Fatal(err)
	}
	if len(f.copied) != 1 || f.copied[0] != (lifecycle.CopyInput{From: "41", To: "43"}) {
		t.Errorf("copied %v", f.copied)
	}
	if fin := f.finish(t); fin.Status != lifecycle.StatusInstantiated || fin.Superseded != "42" {
		t.Errorf("finished %+v", fin)
	}
}

func TestAStoppedUpdateKeepsThePreviousRevision(t *testing.T) {
	f := newFakes()
	f.apply = func(string, int32) (lifecycle.ClusterResult, error) {
		return lifecycle.ClusterResult{}, errors.New("dial tcp: connection refused")
	}
	err := runWith(t, f, Update, updateInput, func(env *testsuite.TestWorkflowEnvironment) {
		env.RegisterDelayedCallback(func() { env.SignalWorkflow(lifecycle.SignalStop, nil) }, 30*time.Second)
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(f.pruned) != 0 {
		t.Errorf("a stopped update pruned the previous revision: %v", f.pruned)
	}
	if fin := f.finish(t); fin.Status != lifecycle.StatusUpdateStopped || !fin.Stopped || fin.Superseded != "" {
		t.Errorf("finished %+v", fin)
	}
}

func TestAFailedApplyStillPrunes(t *testing.T) {
	f := newFakes()
	f.apply = func(string, int32) (lifecycle.ClusterResult, error) {
		return lifecycle.ClusterResult{Done: 2, Failed: 1}, nil
	}
	if err := runWith(t, f, Update, updateInput, nil); err == nil {
		t.Fatal("update with failed objects succeeded")
	}
	if len(f.pruned) != 2 {
		t.Errorf("pruned %v", f.pruned)
	}
	if fin := f.finish(t); fin.Status != lifecycle.StatusUpdateFailed || fin.Superseded != "42" {
		t.Errorf("finished %+v", fin)
	}
}

func TestTerminateAlsoDeletesWhatAStoppedUpdateLeft(t *testing.T) {
	f := newFakes()
	in := opInput
	in.Leftovers = []string{"41"}
	if err := runWith(t, f, Terminate, in, nil); err != nil {
		t.Fatal(err)
	}
	if len(f.deletedC["42"]) != 2 || len(f.deletedC["41"]) != 2 {
		t.Errorf("deleted %v", f.deletedC)
	}
}

var cloudInput = lifecycle.OpInput{Target: lifecycle.Target{Project: "p", LogicalCloud: "team"}, ContextID: "7"}

func TestALogicalCloudIsSetUpAndTornDownPerCluster(t *testing.T) {
	f := newFakes()
	f.render = func() error { return errors.New("a logical cloud renders no chart") }
	f.plan.FirstBatch = []string{"cp+c1", "cp+c2"}
	if err := runWith(t, f, Instantiate, cloudInput, nil); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(f.ran, ","); got != "prepare,SetUpLogicalCloud cp+c1,SetUpLogicalCloud cp+c2" &&
		got != "prepare,SetUpLogicalCloud cp+c2,SetUpLogicalCloud cp+c1" {
		t.Errorf("ran %s", got)
	}
	if len(f.applied) != 0 {
		t.Errorf("a logical cloud used the DIG apply: %v", f.applied)
	}
	f2 := newFakes()
	if err := runWith(t, f2, Terminate, cloudInput, nil); err != nil {
		t.Fatal(err)
	}
	if len(f2.ran) != 2 || !strings.HasPrefix(f2.ran[0], "TearDownLogicalCloud") || len(f2.deleted) != 0 {
		t.Errorf("ran %v, deleted %v", f2.ran, f2.deleted)
	}
}

func TestProgressListsRetryingClustersOfBatchChildren(t *testing.T) {
	f := newFakes()
	f.plan = lifecycle.Plan{Apps: 1, Clusters: 2, Batches: 2}
	f.clusters = func(b int) []string { return []string{"cp+c" + string(rune('a'+b))} }
	env := newEnv()
	f.register(env)
	// ApplyCluster of cp+cb fails three times, reporting like the worker does.
	f.onApply = func(ctx context.Context, in lifecycle.ClusterInput) (lifecycle.ClusterResult, error) {
		info := activity.GetInfo(ctx)
		if n := attempt(ctx, in); in.Cluster == "cp+cb" && n < 4 {
			err := errors.New("dial tcp: connection refused")
			_ = env.SignalWorkflowByID(info.WorkflowExecution.ID, lifecycle.SignalClusterRetrying,
				lifecycle.ClusterRetry{Cluster: in.Cluster, Attempt: n, Error: err.Error()})
			return lifecycle.ClusterResult{}, err
		}
		return lifecycle.ClusterResult{Done: 3}, nil
	}
	var during, after lifecycle.Progress
	query := func(p *lifecycle.Progress) func() {
		return func() {
			v, err := env.QueryWorkflow(lifecycle.QueryProgress)
			if err == nil {
				_ = v.Get(p)
			}
		}
	}
	env.RegisterDelayedCallback(query(&during), 2500*time.Millisecond)
	env.ExecuteWorkflow(Instantiate, opInput)
	if err := env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	query(&after)()
	if len(during.Retrying) != 1 || during.Retrying[0].Cluster != "cp+cb" || !strings.Contains(during.Retrying[0].Error, "connection refused") {
		t.Errorf("progress while retrying: %+v", during)
	}
	if len(after.Retrying) != 0 {
		t.Errorf("progress after the cluster answered: %+v", after)
	}
}

// A read of some clusters (the dashboard's page) reads those alone, with no batch lookup.
func TestReadOfSomeClustersReadsOnlyThem(t *testing.T) {
	f := newFakes()
	f.plan.Batches = 3
	var read []string
	f.readOf = func(c string) lifecycle.ClusterResult {
		read = append(read, c)
		return lifecycle.ClusterResult{Done: 2, NotReady: 1}
	}
	env := newEnv()
	f.register(env)
	env.ExecuteWorkflow(ReadClusterStatus, lifecycle.ReadInput{ContextID: "42", Detail: true, Clusters: []string{"cp+c7", "cp+c9"}})
	var res lifecycle.BatchResult
	if err := env.GetWorkflowResult(&res); err != nil {
		t.Fatal(err)
	}
	slices.Sort(read)
	if !slices.Equal(read, []string{"cp+c7", "cp+c9"}) || f.listed != 0 || res.Clusters != 2 || res.Done != 4 || res.ClustersNotReady != 2 {
		t.Errorf("read %v, listed %d batches, result %+v", read, f.listed, res)
	}
}

// A chart that cannot be fetched fails the operation before anything renders; the ones
// that can are fetched, each in its own activity, before rendering.
func TestArtifactsAreFetchedBeforeRendering(t *testing.T) {
	for _, c := range []struct {
		name    string
		resolve func() ([]artifact.Resolved, error)
		pin     bool
		fetched []string
		renders int
	}{
		{"two to fetch, images pinned", func() ([]artifact.Resolved, error) {
			return []artifact.Resolved{{App: "a", Digest: "sha256:1"}, {App: "b", Digest: "sha256:2"}}, nil
		}, true, []string{"a", "b"}, 1},
		{"a digest mismatch", func() ([]artifact.Resolved, error) {
			return nil, temporal.NewNonRetryableApplicationError("app \"a\": digest mismatch", lifecycle.ErrInvalidInput, nil)
		}, true, nil, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			var s testsuite.WorkflowTestSuite
			env := s.NewTestWorkflowEnvironment()
			f := newFakes()
			f.artifacts, f.pin = c.resolve, c.pin
			f.register(env)
			env.ExecuteWorkflow(Instantiate, opInput)
			slices.Sort(f.fetched)
			if !slices.Equal(f.fetched, c.fetched) || f.rendered != c.renders || f.pinned != c.renders {
				t.Fatalf("fetched %v, rendered %d times and pinned %d, want %v and %d", f.fetched, f.rendered, f.pinned, c.fetched, c.renders)
			}
			if c.renders == 0 && (len(f.finished) != 1 || f.finished[0].Status != lifecycle.StatusInstantiateFailed ||
				!strings.Contains(f.finished[0].Error, "digest mismatch")) {
				t.Fatalf("finished %+v, want InstantiateFailed naming the mismatch", f.finished)
			}
		})
	}
}
