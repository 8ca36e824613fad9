package deploy

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/temco/temco/contract"
	"github.com/temco/temco/internal/core/lifecycle"
)

// userHooks is a user's hook workflow for the tests: it notes when it ran (how many
// clusters were applied or deleted by then) and does what its argument says.
type userHooks struct {
	f     *fakes
	calls []string // "<arg> <clusters touched>"
}

func (u *userHooks) register(env *testsuite.TestWorkflowEnvironment) {
	env.RegisterWorkflowWithOptions(func(ctx workflow.Context, arg string) error {
		u.f.mu.Lock()
		u.calls = append(u.calls, arg+" "+string(rune('0'+len(u.f.applied)+len(u.f.deleted))))
		u.f.mu.Unlock()
		switch arg {
		case "fail":
			return temporal.NewNonRetryableApplicationError("the check refused", "HookRefused", nil)
		case "slow":
			return workflow.Sleep(ctx, time.Hour)
		}
		return nil
	}, workflow.RegisterOptions{Name: "UserHook"})
}

// hook is a workflow tac would ask for, with arg as its argument.
func hook(name, when, arg string, blocking bool) contract.Workflow {
	a, _ := json.Marshal(arg)
	return contract.Workflow{Name: name, Kind: "k-" + name, When: when, Type: "UserHook", TaskQueue: "HOOKS", Arg: a, Blocking: blocking}
}

// tacAsks makes controller tac ask for ws on its Run (or terminate hook).
func tacAsks(f *fakes, ws ...contract.Workflow) {
	f.asks = func(in contract.Input) []contract.Workflow {
		if in.Controller == "tac" && in.Hook != contract.HookFinished {
			return ws
		}
		return nil
	}
}

func hookStates(fin lifecycle.FinishInput) []string {
	var out []string
	for _, h := range fin.Hooks {
		out = append(out, h.Name+"="+h.State)
	}
	return out
}

// A blocking pre-hook runs before anything is applied and a post-hook once the apply has
// finished; both are listed with their workflow ids for the status.
func TestHooksRunBeforeAndAfterTheApply(t *testing.T) {
	f := newFakes()
	f.plan.Controllers = []lifecycle.Controller{{Name: "gac", Type: "action"}, {Name: "tac", Type: "action"}}
	tacAsks(f, hook("pre", contract.WhenNow, "pre", true), hook("post", contract.WhenApplied, "post", true))
	u := &userHooks{f: f}
	if err := run(t, f, Instantiate, u.register); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(u.calls, []string{"pre 0", "post 2"}) {
		t.Errorf("hooks ran %v, want pre before any cluster and post after both", u.calls)
	}
	if strings.Join(f.ran, ",") != "gac,tac,commit,gac finished,tac finished" {
		t.Errorf("controllers ran %v", f.ran)
	}
	fin := f.finish(t)
	if fin.Status != lifecycle.StatusInstantiated || !slices.Equal(hookStates(fin), []string{"pre=Completed", "post=Completed"}) {
		t.Fatalf("finished %+v", fin)
	}
	if h := fin.Hooks[0]; h.WorkflowID != "default-test-workflow-id/hook/pre" || h.RunID == "" || h.Controller != "tac" || h.Kind != "k-pre" {
		t.Errorf("hook run %+v", h)
	}
}

// A failing blocking pre-hook fails the operation with its message; nothing is applied.
func TestAFailingPreHookFailsBeforeAnythingIsApplied(t *testing.T) {
	f := newFakes()
	f.plan.Controllers = []lifecycle.Controller{{Name: "tac", Type: "action"}, {Name: "gac", Type: "action"}}
	tacAsks(f, hook("check", contract.WhenNow, "fail", true))
	u := &userHooks{f: f}
	err := run(t, f, Instantiate, u.register)
	var appErr *temporal.ApplicationError
	if !errors.As(err, &appErr) || appErr.Type() != lifecycle.ErrHookFailed || !strings.Contains(err.Error(), "the check refused") {
		t.Fatalf("error %v, want the hook's failure", err)
	}
	if len(f.applied) != 0 || slices.Contains(f.ran, "gac") || slices.Contains(f.ran, "commit") {
		t.Errorf("applied %v, ran %v after a failed pre-hook", f.applied, f.ran)
	}
	fin := f.finish(t)
	if fin.Status != lifecycle.StatusInstantiateFailed || !strings.Contains(fin.Error, "k-check check (workflow default-test-workflow-id/hook/check, run ") ||
		!strings.Contains(fin.Error, "failed: the check refused") || !slices.Equal(hookStates(fin), []string{"check=Failed"}) {
		t.Errorf("finished %+v", fin)
	}
}

// A blocking hook that outlives its timeout is cancelled and fails the operation.
func TestAPreHookThatTimesOutFailsTheOperation(t *testing.T) {
	f := newFakes()
	f.plan.Controllers = []lifecycle.Controller{{Name: "tac", Type: "action"}}
	w := hook("slow", contract.WhenNow, "slow", true)
	w.Timeout = time.Minute
	tacAsks(f, w)
	u := &userHooks{f: f}
	err := run(t, f, Instantiate, u.register)
	if err == nil || !strings.Contains(err.Error(), "did not finish within 1m0s") || len(f.applied) != 0 {
		t.Fatalf("error %v, applied %v", err, f.applied)
	}
	if fin := f.finish(t); !slices.Equal(hookStates(fin), []string{"slow=TimedOut"}) {
		t.Errorf("finished %+v", fin)
	}
}

// A stop cancels the blocking hook the operation waits on; it ends stopped, nothing applied.
func TestAStopCancelsABlockingHook(t *testing.T) {
	f := newFakes()
	f.plan.Controllers = []lifecycle.Controller{{Name: "tac", Type: "action"}}
	tacAsks(f, hook("slow", contract.WhenNow, "slow", true))
	u := &userHooks{f: f}
	err := run(t, f, Instantiate, func(env *testsuite.TestWorkflowEnvironment) {
		u.register(env)
		env.RegisterDelayedCallback(func() { env.SignalWorkflow(lifecycle.SignalStop, nil) }, time.Minute)
	})
	if err != nil {
		t.Fatal(err)
	}
	fin := f.finish(t)
	if !fin.Stopped || fin.Status != lifecycle.StatusInstantiateStopped || len(f.applied) != 0 ||
		!slices.Equal(hookStates(fin), []string{"slow=Cancelled"}) {
		t.Errorf("finished %+v, applied %v", fin, f.applied)
	}
}

// A hook that does not block is started and left to run: the operation goes on.
func TestAHookThatDoesNotBlockIsOnlyStarted(t *testing.T) {
	f := newFakes()
	f.plan.Controllers = []lifecycle.Controller{{Name: "tac", Type: "action"}}
	tacAsks(f, hook("bg", contract.WhenNow, "slow", false))
	u := &userHooks{f: f}
	if err := run(t, f, Instantiate, u.register); err != nil {
		t.Fatal(err)
	}
	fin := f.finish(t)
	if fin.Status != lifecycle.StatusInstantiated || len(f.applied) != 2 || !slices.Equal(hookStates(fin), []string{"bg=Started"}) {
		t.Errorf("finished %+v, applied %v", fin, f.applied)
	}
}

// A post-hook that waits for Ready starts once a read finds every object Ready; reads
// back off meanwhile.
func TestAPostHookWaitsUntilEveryObjectIsReady(t *testing.T) {
	f := newFakes()
	f.plan.Controllers = []lifecycle.Controller{{Name: "tac", Type: "action"}}
	tacAsks(f, hook("smoke", contract.WhenReady, "post", true))
	f.read = func(n int) lifecycle.ClusterResult {
		if n <= 4 { // two rounds over two clusters
			return lifecycle.ClusterResult{Done: 3, NotReady: 1}
		}
		return lifecycle.ClusterResult{Done: 3}
	}
	u := &userHooks{f: f}
	if err := run(t, f, Instantiate, u.register); err != nil {
		t.Fatal(err)
	}
	if f.reads != 6 || !slices.Equal(u.calls, []string{"post 2"}) {
		t.Errorf("reads %d, hooks %v", f.reads, u.calls)
	}

	// Never Ready: the operation fails once the wait is over, and the hook never runs.
	f = newFakes()
	f.plan.Controllers = []lifecycle.Controller{{Name: "tac", Type: "action"}}
	w := hook("smoke", contract.WhenReady, "post", true)
	w.Timeout = 5 * time.Minute
	tacAsks(f, w)
	f.read = func(int) lifecycle.ClusterResult { return lifecycle.ClusterResult{NotReady: 2} }
	u = &userHooks{f: f}
	err := run(t, f, Instantiate, u.register)
	if err == nil || !strings.Contains(err.Error(), "4 objects were not Ready after 5m0s") || len(u.calls) != 0 {
		t.Errorf("error %v, hooks %v", err, u.calls)
	}
}

// Terminate runs pre-termination hooks before deleting and post-termination ones after.
func TestTerminationHooks(t *testing.T) {
	f := newFakes()
	f.hooked = lifecycle.Hooked{Controllers: []lifecycle.Controller{{Name: "tac", Type: "action"}}, Steps: 1}
	tacAsks(f, hook("pre", contract.WhenNow, "pre", true), hook("post", contract.WhenApplied, "post", true))
	u := &userHooks{f: f}
	if err := run(t, f, Terminate, u.register); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(u.calls, []string{"pre 0", "post 2"}) {
		t.Errorf("hooks ran %v", u.calls)
	}
}

// Runs of earlier releases start no workflow: replaying them must not either.
func TestEarlierReleasesStartNoWorkflow(t *testing.T) {
	f := newFakes()
	f.plan.Controllers = []lifecycle.Controller{{Name: "tac", Type: "action"}}
	tacAsks(f, hook("pre", contract.WhenNow, "pre", true))
	u := &userHooks{f: f}
	err := run(t, f, Instantiate, func(env *testsuite.TestWorkflowEnvironment) {
		u.register(env)
		env.OnGetVersion(changeRelease, workflow.DefaultVersion, releaseLatest).Return(releaseHooks)
	})
	if err != nil || len(u.calls) != 0 {
		t.Errorf("release 3: error %v, hooks %v", err, u.calls)
	}
}
