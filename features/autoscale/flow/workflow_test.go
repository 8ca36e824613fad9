package flow

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/temco/temco/internal/core/capacity"
	"github.com/temco/temco/internal/core/lifecycle"
	"github.com/temco/temco/internal/core/rollout"
)

var dig = lifecycle.Target{Project: "p", CompositeApp: "ca", Version: "v1", DIG: "d"}

// fakes are one test's activities: the view an evaluation observes, each cluster's
// signals (by the number of the evaluation), and what the workflow did.
type fakes struct {
	mu       sync.Mutex
	view     func(n int) lifecycle.CapacityView
	signals  func(n int, cluster string) capacity.Signals
	update   func(ctxID string) error
	observed int
	seeds    []bool // each observation's Seed
	read     []string
	drained  []CapacityDrainInput
	records  []lifecycle.AutoscaleState
	named    []string // the capacity placement each record names
	order    []string // "record" and "drain", as they happened
	updates  []string
}

func spec(mut func(*capacity.Spec)) capacity.Spec {
	s := capacity.Spec{Workloads: []capacity.Workload{{App: "web", Deployment: "web", HPA: "web"}},
		EvaluationInterval: rollout.Duration(30 * time.Second), ScaleIn: capacity.ScaleIn{Cooldown: rollout.Duration(time.Minute)}}
	if mut != nil {
		mut(&s)
	}
	return s
}

func deployed(s capacity.Spec, placed ...string) func(int) lifecycle.CapacityView {
	return func(int) lifecycle.CapacityView {
		return lifecycle.CapacityView{Name: "fleet", Spec: s, Deployed: true, ContextID: "1", Placed: placed, Eligible: []string{"cp+a", "cp+b", "cp+c"}}
	}
}

func (f *fakes) env(t *testing.T) *testsuite.TestWorkflowEnvironment {
	t.Helper()
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	env.RegisterWorkflowWithOptions(Autoscale, workflow.RegisterOptions{Name: WorkflowAutoscale})
	lifecycle.Register(env, lifecycle.ObserveCapacity, func(_ context.Context, in lifecycle.CapacityObserveInput) (lifecycle.CapacityView, error) {
		if in.Target != dig {
			return lifecycle.CapacityView{}, errors.New("another DIG")
		}
		f.mu.Lock()
		defer f.mu.Unlock()
		f.observed++
		f.seeds = append(f.seeds, in.Seed)
		return f.view(f.observed), nil
	})
	lifecycle.Register(env, CapacitySignals, func(_ context.Context, in CapacitySignalsInput) (capacity.Signals, error) {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.read = append(f.read, in.Cluster)
		return f.signals(f.observed, in.Cluster), nil
	})
	lifecycle.RegisterNoResult(env, DrainCapacity, func(_ context.Context, in CapacityDrainInput) error {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.drained = append(f.drained, in)
		f.order = append(f.order, "drain")
		return nil
	})
	lifecycle.RegisterNoResult(env, lifecycle.RecordCapacity, func(_ context.Context, in lifecycle.CapacityRecord) error {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.records = append(f.records, in.State)
		f.named = append(f.named, in.Name)
		if slices.ContainsFunc(in.State.Members, func(m capacity.Member) bool { return m.State == capacity.ScalingIn }) {
			f.order = append(f.order, "record scaling in")
		}
		return nil
	})
	lifecycle.RegisterNoResult(env, lifecycle.UpdateDIG, func(_ context.Context, in lifecycle.UpdateDIGInput) error {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.updates = append(f.updates, in.ContextID)
		if f.update != nil {
			return f.update(in.ContextID)
		}
		return nil
	})
	return env
}

// stopAfter ends the autoscaler d after its start.
func stopAfter(env *testsuite.TestWorkflowEnvironment, d time.Duration) {
	env.RegisterDelayedCallback(func() { env.SignalWorkflow(lifecycle.SignalStop, nil) }, d)
}

func members(s lifecycle.AutoscaleState) []string {
	var out []string
	for _, m := range s.Members {
		out = append(out, m.Cluster+"="+string(m.State))
	}
	return out
}

func TestScaleOutThroughOneUpdate(t *testing.T) {
	f := &fakes{view: deployed(spec(nil), "cp+a"), signals: func(n int, c string) capacity.Signals {
		if c == "cp+a" {
			return capacity.Signals{Reachable: true, Unschedulable: 2}
		}
		return capacity.Signals{Reachable: true}
	}}
	env := f.env(t)
	stopAfter(env, 45*time.Second) // two evaluations
	env.ExecuteWorkflow(WorkflowAutoscale, AutoscaleInput{DIG: dig})
	if err := env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	if len(f.updates) != 1 {
		t.Fatalf("updates %v, want one (a then b full: b added once)", f.updates)
	}
	if len(f.seeds) < 2 || !f.seeds[0] || slices.Contains(f.seeds[1:], true) {
		t.Errorf("seeds %v: only the first observation, with no members yet, reads the placed clusters", f.seeds)
	}
	// The members are recorded, with the update named, before the update starts.
	var before *lifecycle.AutoscaleState
	for i := range f.records {
		if f.records[i].Update == f.updates[0] {
			before = &f.records[i]
			break
		}
	}
	if before == nil || !slices.Equal(members(*before), []string{"cp+a=ACTIVE", "cp+b=ACTIVE"}) {
		t.Fatalf("no record of the new members before the update: %+v", f.records)
	}
	last := f.records[len(f.records)-1]
	if last.Update != "" || len(last.Events) != 1 || last.Events[0].Outcome != "the update ended Instantiated" {
		t.Errorf("last record: update %q, events %+v", last.Update, last.Events)
	}
	if ev := last.Events[0]; ev.Decision == nil || !slices.Equal(ev.Decision.Add, []string{"cp+b"}) || ev.Summary == "" {
		t.Errorf("event %+v", ev)
	}
}

func TestWaitsWhileTheDIGCannotChange(t *testing.T) {
	f := &fakes{view: func(int) lifecycle.CapacityView {
		return lifecycle.CapacityView{Name: "fleet", Spec: spec(nil), Deployed: true, Waiting: "its context 1 is Updating"}
	}, signals: func(int, string) capacity.Signals { return capacity.Signals{} }}
	env := f.env(t)
	stopAfter(env, 95*time.Second)
	env.ExecuteWorkflow(WorkflowAutoscale, AutoscaleInput{DIG: dig})
	if err := env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	if f.observed != 4 || len(f.read) != 0 || len(f.updates) != 0 {
		t.Errorf("observed %d times, read %v, updated %v: want 4 observations and nothing else", f.observed, f.read, f.updates)
	}
	if last := f.records[len(f.records)-1]; last.Last == nil || last.Last.Waiting == "" {
		t.Errorf("the record does not say why it waits: %+v", last)
	}
}

func TestPauseAndResume(t *testing.T) {
	f := &fakes{view: deployed(spec(nil), "cp+a"), signals: func(int, string) capacity.Signals { return capacity.Signals{Reachable: true} }}
	env := f.env(t)
	env.RegisterDelayedCallback(func() { env.SignalWorkflow(lifecycle.SignalPause, nil) }, 10*time.Second)
	var whilePaused int
	env.RegisterDelayedCallback(func() {
		whilePaused = f.observed
		env.SignalWorkflow(lifecycle.SignalResume, nil)
	}, 10*time.Minute)
	stopAfter(env, 10*time.Minute+10*time.Second)
	env.ExecuteWorkflow(WorkflowAutoscale, AutoscaleInput{DIG: dig})
	if err := env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	if whilePaused != 1 || f.observed != 2 {
		t.Errorf("evaluations: %d before the resume, %d in all; want 1 and 2 (one at the start, one on resume)", whilePaused, f.observed)
	}
	paused := slices.ContainsFunc(f.records, func(s lifecycle.AutoscaleState) bool { return s.Paused })
	if slices.Contains(f.named, "") {
		t.Errorf("a record without the capacity placement's name (it would be dropped): %v", f.named)
	}
	if !paused || f.records[len(f.records)-1].Paused {
		t.Errorf("the pause is not recorded, or outlived the resume: %+v", f.records)
	}
}

func TestEndsWhenThePlacementIsGone(t *testing.T) {
	f := &fakes{view: func(n int) lifecycle.CapacityView {
		if n > 1 {
			return lifecycle.CapacityView{}
		}
		return deployed(spec(nil), "cp+a")(n)
	}, signals: func(int, string) capacity.Signals { return capacity.Signals{Reachable: true} }}
	env := f.env(t)
	env.ExecuteWorkflow(WorkflowAutoscale, AutoscaleInput{DIG: dig})
	if err := env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	if !env.IsWorkflowCompleted() || f.observed != 2 {
		t.Errorf("completed %v after %d evaluations, want after 2", env.IsWorkflowCompleted(), f.observed)
	}
}

// A wake signal (the capacity placement changed) evaluates at once, not at the interval.
func TestWakeEvaluatesNow(t *testing.T) {
	f := &fakes{view: deployed(spec(nil), "cp+a"), signals: func(int, string) capacity.Signals { return capacity.Signals{Reachable: true} }}
	env := f.env(t)
	var woken int
	env.RegisterDelayedCallback(func() { env.SignalWorkflow(lifecycle.SignalWake, nil) }, 5*time.Second)
	env.RegisterDelayedCallback(func() { woken = f.observed }, 6*time.Second)
	stopAfter(env, 7*time.Second)
	env.ExecuteWorkflow(WorkflowAutoscale, AutoscaleInput{DIG: dig})
	if err := env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	if woken != 2 {
		t.Errorf("%d evaluations a second after the wake, want 2", woken)
	}
}

// Scale-in with a drain: the cluster's HPAs are lowered at every evaluation while it is
// emptied, and it leaves the placement, through an update, once at the floor.
func TestDrainThenRemove(t *testing.T) {
	s := spec(func(s *capacity.Spec) { s.ScaleIn.Drain = &capacity.Drain{MaxReplicas: 1} })
	f := &fakes{view: deployed(s, "cp+a", "cp+b"), signals: func(n int, c string) capacity.Signals {
		idle := capacity.Signals{Reachable: true, WantsFewer: true}
		if c == "cp+b" && n >= 5 {
			idle.AtFloor = true
		}
		return idle
	}}
	env := f.env(t)
	stopAfter(env, 3*time.Minute)
	env.ExecuteWorkflow(WorkflowAutoscale, AutoscaleInput{DIG: dig})
	if err := env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	if len(f.drained) < 2 || slices.ContainsFunc(f.drained, func(d CapacityDrainInput) bool {
		return d.Cluster != "cp+b" || d.Restore || d.Floor != 1
	}) {
		t.Errorf("drains %+v, want cp+b's lowered to 1 at each evaluation while it scales in", f.drained)
	}
	if len(f.order) == 0 || f.order[0] != "record scaling in" {
		t.Errorf("%v: the decision to scale in is not recorded before the first drain", f.order)
	}
	if len(f.updates) != 1 {
		t.Fatalf("updates %v, want one (cp+b removed)", f.updates)
	}
	if got := members(f.records[len(f.records)-1]); !slices.Equal(got, []string{"cp+a=ACTIVE"}) {
		t.Errorf("members %v", got)
	}
}

func TestAFailedUpdateIsRecorded(t *testing.T) {
	f := &fakes{view: deployed(spec(nil), "cp+a"), signals: func(int, string) capacity.Signals {
		return capacity.Signals{Reachable: true, AtMaxReplicas: true}
	}, update: func(string) error {
		return temporal.NewNonRetryableApplicationError("the update ended UpdateFailed: boom", lifecycle.ErrApplyFailed, nil)
	}}
	env := f.env(t)
	stopAfter(env, 10*time.Second)
	env.ExecuteWorkflow(WorkflowAutoscale, AutoscaleInput{DIG: dig})
	if err := env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	last := f.records[len(f.records)-1]
	if len(last.Events) == 0 || last.Events[0].Outcome != "the update failed: the update ended UpdateFailed: boom" {
		t.Errorf("events %+v", last.Events)
	}
}

func TestContinuesAsNewWithItsState(t *testing.T) {
	f := &fakes{view: deployed(spec(nil), "cp+a"), signals: func(int, string) capacity.Signals { return capacity.Signals{Reachable: true} }}
	env := f.env(t)
	env.ExecuteWorkflow(WorkflowAutoscale, AutoscaleInput{DIG: dig})
	var can *workflow.ContinueAsNewError
	if err := env.GetWorkflowError(); !errors.As(err, &can) {
		t.Fatalf("ended with %v, want a continue-as-new", err)
	}
	if f.observed != evaluationsPerRun+1 {
		t.Errorf("%d evaluations before continuing as new", f.observed)
	}
	var in AutoscaleInput
	if err := converter.GetDefaultDataConverter().FromPayloads(can.Input, &in); err != nil {
		t.Fatal(err)
	}
	if in.Name != "fleet" || in.State == nil || !slices.Equal(members(*in.State), []string{"cp+a=ACTIVE"}) {
		t.Errorf("carried state %+v", in.State)
	}
}

// A cluster scaling in whose load comes back is ACTIVE again, its HPA restored, before any
// new cluster is added; the placement does not change.
func TestScaleInUndoneRestoresTheHPA(t *testing.T) {
	s := spec(func(s *capacity.Spec) { s.ScaleIn.Drain = &capacity.Drain{MaxReplicas: 1} })
	f := &fakes{view: deployed(s, "cp+a", "cp+b"), signals: func(n int, c string) capacity.Signals {
		if n >= 5 && c == "cp+a" {
			return capacity.Signals{Reachable: true, AtMaxReplicas: true}
		}
		return capacity.Signals{Reachable: true, WantsFewer: true}
	}}
	env := f.env(t)
	stopAfter(env, 2*time.Minute+15*time.Second) // five evaluations
	env.ExecuteWorkflow(WorkflowAutoscale, AutoscaleInput{DIG: dig})
	if err := env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	restored := slices.IndexFunc(f.drained, func(d CapacityDrainInput) bool { return d.Restore })
	if restored < 1 || f.drained[restored].Cluster != "cp+b" {
		t.Fatalf("drains %+v: want cp+b drained, then restored", f.drained)
	}
	if len(f.updates) != 0 {
		t.Errorf("updates %v: a cluster scaling in and back changes no placement", f.updates)
	}
	if got := members(f.records[len(f.records)-1]); !slices.Equal(got, []string{"cp+a=ACTIVE", "cp+b=ACTIVE"}) {
		t.Errorf("members %v", got)
	}
}
