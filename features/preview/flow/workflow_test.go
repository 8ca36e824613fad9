package flow

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/temco/temco/contract"
	"github.com/temco/temco/internal/core/lifecycle"
	"github.com/temco/temco/internal/core/rollout"
)

var dig = lifecycle.Target{Project: "p", CompositeApp: "ca", Version: "v1", DIG: "d"}

const scratch = "777"

// fakes are the activities of one test; each step may be replaced to fail.
type fakes struct {
	mu      sync.Mutex
	start   PreviewStart
	plan    lifecycle.Plan
	chosen  PreviewChoice
	begin   func() error
	render  func(ctx context.Context) error
	control func(in contract.Input) (contract.Result, error)
	calls   []string // activities, in the order they ran
	inputs  []contract.Input
	diffIn  []PreviewDiffInput
	copied  []lifecycle.CopyInput
	deleted []string
}

func newFakes() *fakes {
	return &fakes{
		start: PreviewStart{Op: lifecycle.OpUpdate, Previous: "41", Current: 2, Revision: 3},
		plan: lifecycle.Plan{Apps: 1, Clusters: 3, Batches: 2, Rollout: &rollout.Plan{Strategy: "rings", Stages: []rollout.PlannedStage{
			{Name: "canary", Clusters: 1, FirstBatch: 0, Batches: 1}, {Name: "rest", Clusters: 2, FirstBatch: 1, Batches: 1}}}},
		begin:   func() error { return nil },
		render:  func(context.Context) error { return nil },
		control: func(contract.Input) (contract.Result, error) { return contract.Result{}, nil },
	}
}

func (f *fakes) note(name string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, name)
}

func (f *fakes) called(name string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, c := range f.calls {
		if c == name {
			n++
		}
	}
	return n
}

func (f *fakes) env(t *testing.T) *testsuite.TestWorkflowEnvironment {
	t.Helper()
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	env.RegisterWorkflowWithOptions(PreviewRollout, workflow.RegisterOptions{Name: WorkflowPreviewRollout})
	reg := func(name string, fn any) { env.RegisterActivityWithOptions(fn, activity.RegisterOptions{Name: name}) }
	lifecycle.Register(env, BeginPreview, func(_ context.Context, in PreviewInput) (PreviewStart, error) {
		f.note(BeginPreview.Name())
		if in.DIG != dig || in.ContextID != scratch {
			return PreviewStart{}, errors.New("another DIG or context")
		}
		return f.start, f.begin()
	})
	lifecycle.Register(env, lifecycle.ResolveArtifacts, func(context.Context, lifecycle.ContextRef) (lifecycle.ArtifactPlan, error) {
		f.note(lifecycle.ResolveArtifacts.Name())
		return lifecycle.ArtifactPlan{}, nil
	})
	lifecycle.Register(env, lifecycle.RenderApps, func(ctx context.Context, in lifecycle.ContextRef) (int, error) {
		f.note(lifecycle.RenderApps.Name())
		return 1, f.render(ctx)
	})
	lifecycle.RegisterNoResult(env, lifecycle.RenderVariants, func(_ context.Context, in lifecycle.ContextRef) error {
		f.note(lifecycle.RenderVariants.Name())
		return nil
	})
	lifecycle.Register(env, lifecycle.PlaceApps, func(_ context.Context, in lifecycle.ContextRef) (lifecycle.Plan, error) {
		f.note(lifecycle.PlaceApps.Name())
		if in.ContextID != scratch {
			return lifecycle.Plan{}, errors.New("placed another context")
		}
		return f.plan, nil
	})
	lifecycle.Register(env, PreviewControllers, func(_ context.Context, ctrls []lifecycle.Controller) (PreviewChoice, error) {
		f.note(PreviewControllers.Name())
		return f.chosen, nil
	})
	lifecycle.Register(env, lifecycle.RunController, func(_ context.Context, in contract.Input) (contract.Result, error) {
		f.note(lifecycle.RunController.Name())
		f.mu.Lock()
		f.inputs = append(f.inputs, in)
		f.mu.Unlock()
		return f.control(in)
	})
	lifecycle.Register(env, lifecycle.CommitControllers, func(_ context.Context, in lifecycle.ContextRef) (lifecycle.Plan, error) {
		f.note(lifecycle.CommitControllers.Name())
		p := f.plan
		p.Controllers = nil
		return p, nil
	})
	lifecycle.Register(env, lifecycle.CopyContext, func(_ context.Context, in lifecycle.CopyInput) (lifecycle.Plan, error) {
		f.note(lifecycle.CopyContext.Name())
		f.mu.Lock()
		f.copied = append(f.copied, in)
		f.mu.Unlock()
		return f.plan, nil
	})
	lifecycle.Register(env, DiffPreview, func(_ context.Context, in PreviewDiffInput) (RolloutPreview, error) {
		f.note(DiffPreview.Name())
		f.mu.Lock()
		f.diffIn = append(f.diffIn, in)
		f.mu.Unlock()
		return RolloutPreview{Op: in.Start.Op, Revision: in.Start.Revision, Strategy: in.Plan.Rollout.Strategy,
			Stages: []PreviewStage{{Name: "canary"}, {Name: "rest"}}}, nil
	})
	lifecycle.RegisterNoResult(env, DeletePreview, func(_ context.Context, ctxID string) error {
		f.note(DeletePreview.Name())
		f.mu.Lock()
		f.deleted = append(f.deleted, ctxID)
		f.mu.Unlock()
		return nil
	})
	// What operations do and a preview must never: record states, touch clusters.
	for _, name := range []string{lifecycle.BeginOperation.Name(), lifecycle.FinishOperation.Name(), lifecycle.ApplyCluster.Name(),
		lifecycle.DeleteCluster.Name(), lifecycle.PruneCluster.Name(), lifecycle.RecordRollout.Name()} {
		reg(name, func(context.Context, any) error { t.Errorf("a preview ran %s", name); return nil })
	}
	return env
}

func (f *fakes) run(t *testing.T, in PreviewInput) (RolloutPreview, error) {
	t.Helper()
	env := f.env(t)
	env.ExecuteWorkflow(PreviewRollout, in)
	if !env.IsWorkflowCompleted() {
		t.Fatal("the preview did not complete")
	}
	var out RolloutPreview
	err := env.GetWorkflowError()
	if err == nil {
		if err := env.GetWorkflowResult(&out); err != nil {
			t.Fatal(err)
		}
	}
	return out, err
}

func input() PreviewInput {
	return PreviewInput{DIG: dig, ContextID: scratch, Limit: 100}
}

// wantCleanedUp checks that the scratch context, and only it, was deleted once, last.
func (f *fakes) wantCleanedUp(t *testing.T) {
	t.Helper()
	if !slices.Equal(f.deleted, []string{scratch}) {
		t.Errorf("deleted %v, want the scratch context %s once", f.deleted, scratch)
	}
	if n := len(f.calls); n == 0 || f.calls[n-1] != DeletePreview.Name() {
		t.Errorf("activities %v: the scratch context is not deleted last", f.calls)
	}
}

func appErrType(err error) string {
	var appErr *temporal.ApplicationError
	if errors.As(err, &appErr) {
		return appErr.Type()
	}
	return ""
}

// An update's preview renders and places the scratch context, runs the controllers the
// preview may run with the update's inputs (tac's step left out, its note kept), commits
// their edits, compares, and deletes the scratch context.
func TestAnUpdatePreviewRunsTheChosenControllersAndDeletesItsContext(t *testing.T) {
	f := newFakes()
	f.plan.Controllers = []lifecycle.Controller{{Name: "tac", Type: contract.TypeAction}, {Name: "gac", Type: contract.TypeAction, Intent: "g"}}
	f.chosen = PreviewChoice{Run: []PreviewStep{{Step: 1, Controller: f.plan.Controllers[1]}},
		Notes: []string{"tac was not run"}}
	f.control = func(contract.Input) (contract.Result, error) {
		return contract.Result{Workflows: []contract.Workflow{{Name: "hook"}}}, nil
	}
	out, err := f.run(t, input())
	if err != nil {
		t.Fatal(err)
	}
	if out.Op != lifecycle.OpUpdate || out.Revision != 3 || out.Strategy != "rings" || len(out.Stages) != 2 {
		t.Errorf("answer %+v", out)
	}
	if want := []string{"tac was not run", `controller "gac" asked for 1 workflow(s), which a preview does not start`}; !slices.Equal(out.Notes, want) {
		t.Errorf("notes %q, want %q", out.Notes, want)
	}
	if len(f.inputs) != 1 {
		t.Fatalf("controller inputs %+v, want gac's alone", f.inputs)
	}
	in := f.inputs[0]
	if in.Controller != "gac" || in.Step != 1 || in.Operation != lifecycle.OpUpdate || in.ContextID != scratch ||
		in.PreviousContextID != "41" || in.Hook != contract.HookRun || in.Intent != "g" {
		t.Errorf("gac's input %+v", in)
	}
	if f.called(lifecycle.CommitControllers.Name()) != 1 {
		t.Errorf("activities %v: the controllers' edits are not committed once", f.calls)
	}
	if d := f.diffIn[0]; d.Start.Previous != "41" || d.Plan.Rollout == nil || d.Limit != 100 || d.ContextID != scratch {
		t.Errorf("diff input %+v", d)
	}
	f.wantCleanedUp(t)
}

// A rollback's preview copies the stored revision instead of rendering.
func TestARollbackPreviewCopiesTheRevision(t *testing.T) {
	f := newFakes()
	f.start = PreviewStart{Op: lifecycle.OpRollback, Previous: "43", Source: "41", Current: 3, Revision: 4}
	in := input()
	in.Revision = 1
	out, err := f.run(t, in)
	if err != nil {
		t.Fatal(err)
	}
	if out.Op != lifecycle.OpRollback {
		t.Errorf("op %q", out.Op)
	}
	if !slices.Equal(f.copied, []lifecycle.CopyInput{{From: "41", To: scratch}}) {
		t.Errorf("copied %+v", f.copied)
	}
	if n := f.called(lifecycle.RenderApps.Name()) + f.called(lifecycle.PlaceApps.Name()); n != 0 {
		t.Errorf("activities %v: a rollback's preview rendered or placed", f.calls)
	}
	f.wantCleanedUp(t)
}

// However a preview fails — refused at once, a bad chart, a controller's refusal — the
// scratch context is deleted, and the error keeps its type (the api's 409 or 400).
func TestTheScratchContextIsDeletedWhenThePreviewFails(t *testing.T) {
	for _, tc := range []struct {
		name     string
		setUp    func(f *fakes)
		wantType string
		wantMsg  string
	}{
		{"refused", func(f *fakes) {
			f.begin = func() error {
				return temporal.NewNonRetryableApplicationError("the DIG is Created", lifecycle.ErrInvalidState, nil)
			}
		}, lifecycle.ErrInvalidState, "the DIG is Created"},
		{"render", func(f *fakes) {
			f.render = func(context.Context) error {
				return temporal.NewNonRetryableApplicationError(`app "web": bad chart`, lifecycle.ErrInvalidInput, nil)
			}
		}, lifecycle.ErrInvalidInput, `app "web": bad chart`},
		{"controller", func(f *fakes) {
			f.plan.Controllers = []lifecycle.Controller{{Name: "gac"}}
			f.chosen = PreviewChoice{Run: []PreviewStep{{Step: 0, Controller: f.plan.Controllers[0]}}}
			f.control = func(contract.Input) (contract.Result, error) {
				return contract.Result{}, temporal.NewNonRetryableApplicationError("no such resource", lifecycle.ErrInvalidInput, nil)
			}
		}, lifecycle.ErrInvalidInput, "controller gac: no such resource"},
		{"transient", func(f *fakes) {
			f.render = func(context.Context) error { return errors.New("the store did not answer") }
		}, "", "the store did not answer"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakes()
			tc.setUp(f)
			_, err := f.run(t, input())
			if err == nil {
				t.Fatal("the preview succeeded")
			}
			if got := appErrType(err); tc.wantType != "" && got != tc.wantType {
				t.Errorf("error type %q, want %q: %v", got, tc.wantType, err)
			}
			var appErr *temporal.ApplicationError
			if errors.As(err, &appErr) && !strings.Contains(appErr.Message(), tc.wantMsg) {
				t.Errorf("message %q, want %q", appErr.Message(), tc.wantMsg)
			}
			if f.called(DiffPreview.Name()) != 0 {
				t.Errorf("activities %v: compared after a failure", f.calls)
			}
			f.wantCleanedUp(t)
		})
	}
}

// A preview cancelled while it renders still deletes its scratch context.
func TestACancelledPreviewDeletesItsContext(t *testing.T) {
	f := newFakes()
	f.render = func(ctx context.Context) error {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(10 * time.Second):
			return errors.New("not cancelled")
		}
	}
	env := f.env(t)
	env.RegisterDelayedCallback(env.CancelWorkflow, time.Millisecond)
	env.ExecuteWorkflow(PreviewRollout, input())
	if !env.IsWorkflowCompleted() {
		t.Fatal("the preview did not complete")
	}
	if err := env.GetWorkflowError(); !temporal.IsCanceledError(err) {
		t.Errorf("error %v, want cancelled", err)
	}
	f.wantCleanedUp(t)
}
