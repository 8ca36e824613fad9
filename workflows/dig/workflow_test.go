package dig

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/temco/temco/internal/core/lifecycle"
)

var digRef = lifecycle.Target{Project: "p", CompositeApp: "ca", Version: "v1", DIG: "d"}

// opLog records what the fake operation workflows saw.
type opLog struct {
	started   []string        // "<op> <context>"
	timeouts  []time.Duration // each operation's workflow task timeout
	stopped   []string
	cancelled []string
	begun     []lifecycle.BeginInput
	local     []bool            // whether each begin ran as a local activity
	refuse    map[string]string // op -> InvalidState message from BeginOperation
}

// fakeOp stands for Instantiate and Terminate: it runs until stopped, cancelled or a
// minute has passed.
func (l *opLog) fakeOp(op string) func(workflow.Context, lifecycle.OpInput) error {
	return func(ctx workflow.Context, in lifecycle.OpInput) error {
		l.started = append(l.started, op+" "+in.ContextID)
		l.timeouts = append(l.timeouts, workflow.GetInfo(ctx).WorkflowTaskTimeout)
		stop := workflow.GetSignalChannel(ctx, lifecycle.SignalStop)
		sel := workflow.NewSelector(ctx)
		sel.AddReceive(stop, func(c workflow.ReceiveChannel, _ bool) { c.Receive(ctx, nil); l.stopped = append(l.stopped, op) })
		sel.AddFuture(workflow.NewTimer(ctx, time.Minute), func(workflow.Future) {})
		sel.Select(ctx)
		if ctx.Err() != nil {
			l.cancelled = append(l.cancelled, op)
			return temporal.NewCanceledError()
		}
		return nil
	}
}

func newEnv(t *testing.T, l *opLog) *testsuite.TestWorkflowEnvironment {
	t.Helper()
	var s testsuite.WorkflowTestSuite
	s.SetLogger(log.NewStructuredLogger(slog.New(slog.DiscardHandler)))
	env := s.NewTestWorkflowEnvironment()
	env.RegisterWorkflowWithOptions(l.fakeOp(lifecycle.OpInstantiate), workflow.RegisterOptions{Name: lifecycle.WorkflowInstantiate})
	env.RegisterWorkflowWithOptions(l.fakeOp(lifecycle.OpTerminate), workflow.RegisterOptions{Name: lifecycle.WorkflowTerminate})
	env.RegisterWorkflowWithOptions(l.fakeOp(lifecycle.OpUpdate), workflow.RegisterOptions{Name: lifecycle.WorkflowUpdate})
	env.RegisterWorkflowWithOptions(l.fakeOp(lifecycle.OpRollback), workflow.RegisterOptions{Name: lifecycle.WorkflowRollback})
	lifecycle.Register(env, lifecycle.BeginOperation, func(ctx context.Context, in lifecycle.BeginInput) (lifecycle.BeginResult, error) {
		l.begun = append(l.begun, in)
		l.local = append(l.local, activity.GetInfo(ctx).IsLocalActivity)
		if msg, ok := l.refuse[in.Op]; ok {
			return lifecycle.BeginResult{}, temporal.NewNonRetryableApplicationError(msg, lifecycle.ErrInvalidState, nil)
		}
		id := in.ContextID
		if id == "" {
			id = "ctx-1"
		}
		res := lifecycle.BeginResult{ContextID: id, Revision: 1}
		if in.Op == lifecycle.OpUpdate || in.Op == lifecycle.OpRollback {
			res.Revision, res.Previous = 2, "c1"
		}
		return res, nil
	})
	return env
}

// result of one update.
type result struct {
	accepted lifecycle.OpAccepted
	rejected error
	failed   error
	done     bool
}

func update(env *testsuite.TestWorkflowEnvironment, delay time.Duration, req lifecycle.OpRequest) *result {
	r := &result{}
	env.RegisterDelayedCallback(func() {
		env.UpdateWorkflow(lifecycle.UpdateOperate, "", &testsuite.TestUpdateCallback{
			OnReject: func(err error) { r.rejected, r.done = err, true },
			OnAccept: func() {},
			OnComplete: func(v any, err error) {
				r.done, r.failed = true, err
				if acc, ok := v.(lifecycle.OpAccepted); ok {
					r.accepted = acc
				}
			},
		}, req)
	}, delay)
	return r
}

func appErrType(err error) string {
	var appErr *temporal.ApplicationError
	if errors.As(err, &appErr) {
		return appErr.Type()
	}
	return ""
}

func TestInstantiateStartsTheOperationWorkflow(t *testing.T) {
	l := &opLog{}
	env := newEnv(t, l)
	r := update(env, 0, lifecycle.OpRequest{Op: lifecycle.OpInstantiate, ContextID: "c1"})
	env.ExecuteWorkflow(Lifecycle, lifecycle.TargetInput{Target: digRef})
	if !r.done || r.failed != nil || r.rejected != nil {
		t.Fatalf("update: %+v", r)
	}
	want := digRef.OpWorkflowID(lifecycle.OpInstantiate, "c1")
	if r.accepted.WorkflowID != want || r.accepted.ContextID != "c1" || r.accepted.Revision != 1 {
		t.Errorf("accepted %+v, want workflow %s", r.accepted, want)
	}
	if len(l.started) != 1 || l.started[0] != "instantiate c1" {
		t.Errorf("started %v", l.started)
	}
	if len(l.timeouts) != 1 || l.timeouts[0] != lifecycle.TaskTimeout {
		t.Errorf("the operation's workflow task timeout %v, want %s", l.timeouts, lifecycle.TaskTimeout)
	}
	// Idle after the operation, the workflow completes.
	if !env.IsWorkflowCompleted() || env.GetWorkflowError() != nil {
		t.Errorf("completed %v, error %v", env.IsWorkflowCompleted(), env.GetWorkflowError())
	}
}

// The begin writes the store, so it must run only for an update whose acceptance Temporal
// has persisted: as a regular activity, scheduled by the workflow task that accepts the
// update. A local activity runs inside that task, before its completion is persisted: a
// Temporal server killed then lost the update and left the begin's record behind, a
// transition no workflow ran (make chaos, seed 3).
func TestTheBeginRunsOnlyOnceTheUpdateIsDurablyAccepted(t *testing.T) {
	l := &opLog{}
	env := newEnv(t, l)
	r := update(env, 0, lifecycle.OpRequest{Op: lifecycle.OpInstantiate, ContextID: "c1"})
	update(env, 2*time.Minute, lifecycle.OpRequest{Op: lifecycle.OpTerminate})
	env.ExecuteWorkflow(Lifecycle, lifecycle.TargetInput{Target: digRef})
	if !r.done || r.failed != nil || len(l.started) != 2 {
		t.Fatalf("update %+v, started %v", r, l.started)
	}
	for i, local := range l.local {
		if local {
			t.Errorf("begin of %s ran as a local activity, within the task that accepted its update", l.begun[i].Op)
		}
	}
}

func TestASecondOperationIsRefusedWhileOneRuns(t *testing.T) {
	l := &opLog{}
	env := newEnv(t, l)
	update(env, 0, lifecycle.OpRequest{Op: lifecycle.OpInstantiate, ContextID: "c1"})
	second := update(env, 10*time.Second, lifecycle.OpRequest{Op: lifecycle.OpInstantiate, ContextID: "c2"})
	env.ExecuteWorkflow(Lifecycle, lifecycle.TargetInput{Target: digRef})
	if appErrType(second.rejected) != lifecycle.ErrBusy {
		t.Fatalf("second instantiate: %+v", second)
	}
	if len(l.started) != 1 || len(l.begun) != 1 {
		t.Errorf("started %v, begun %v", l.started, l.begun)
	}
}

func TestTerminatePreemptsARunningInstantiate(t *testing.T) {
	l := &opLog{}
	env := newEnv(t, l)
	update(env, 0, lifecycle.OpRequest{Op: lifecycle.OpInstantiate, ContextID: "c1"})
	term := update(env, 10*time.Second, lifecycle.OpRequest{Op: lifecycle.OpTerminate})
	again := update(env, 11*time.Second, lifecycle.OpRequest{Op: lifecycle.OpTerminate})
	env.ExecuteWorkflow(Lifecycle, lifecycle.TargetInput{Target: digRef})
	if !term.done || term.failed != nil || term.accepted.Op != lifecycle.OpTerminate {
		t.Fatalf("terminate: %+v", term)
	}
	if appErrType(again.rejected) != lifecycle.ErrBusy {
		t.Errorf("a second terminate was not refused: %+v", again)
	}
	if len(l.cancelled) != 1 || l.cancelled[0] != lifecycle.OpInstantiate {
		t.Errorf("cancelled %v", l.cancelled)
	}
	if len(l.started) != 2 || l.started[1] != "terminate ctx-1" {
		t.Errorf("started %v", l.started)
	}
}

func TestStopSignalsTheRunningOperation(t *testing.T) {
	l := &opLog{}
	env := newEnv(t, l)
	idle := update(env, 0, lifecycle.OpRequest{Op: lifecycle.OpStop})
	update(env, time.Second, lifecycle.OpRequest{Op: lifecycle.OpInstantiate, ContextID: "c1"})
	stop := update(env, 10*time.Second, lifecycle.OpRequest{Op: lifecycle.OpStop})
	env.ExecuteWorkflow(Lifecycle, lifecycle.TargetInput{Target: digRef})
	if appErrType(idle.rejected) != lifecycle.ErrInvalidState {
		t.Errorf("stop with nothing running: %+v", idle)
	}
	if !stop.done || stop.failed != nil || stop.accepted.ContextID != "c1" {
		t.Fatalf("stop: %+v", stop)
	}
	if len(l.stopped) != 1 {
		t.Errorf("stopped %v", l.stopped)
	}
}

func TestAnInvalidTransitionFailsTheUpdate(t *testing.T) {
	l := &opLog{refuse: map[string]string{lifecycle.OpTerminate: "dig is Approved"}}
	env := newEnv(t, l)
	r := update(env, 0, lifecycle.OpRequest{Op: lifecycle.OpTerminate})
	next := update(env, time.Second, lifecycle.OpRequest{Op: lifecycle.OpInstantiate, ContextID: "c1"})
	env.ExecuteWorkflow(Lifecycle, lifecycle.TargetInput{Target: digRef})
	if appErrType(r.failed) != lifecycle.ErrInvalidState {
		t.Fatalf("terminate: %+v", r)
	}
	if next.failed != nil || next.rejected != nil || len(l.started) != 1 {
		t.Errorf("the refused operation blocked the next one: %+v, started %v", next, l.started)
	}
}

func TestUpdatesRunOneAtATime(t *testing.T) {
	l := &opLog{}
	env := newEnv(t, l)
	update(env, 0, lifecycle.OpRequest{Op: lifecycle.OpInstantiate, ContextID: "c1"})
	busy := update(env, 10*time.Second, lifecycle.OpRequest{Op: lifecycle.OpUpdate, ContextID: "c2"})
	first := update(env, 2*time.Minute, lifecycle.OpRequest{Op: lifecycle.OpUpdate, ContextID: "c2"})
	second := update(env, 2*time.Minute+time.Second, lifecycle.OpRequest{Op: lifecycle.OpRollback, ContextID: "c3", Revision: 1})
	env.ExecuteWorkflow(Lifecycle, lifecycle.TargetInput{Target: digRef})
	if appErrType(busy.rejected) != lifecycle.ErrBusy {
		t.Errorf("update during instantiate: %+v", busy)
	}
	if first.failed != nil || first.accepted.Revision != 2 || first.accepted.WorkflowID != digRef.OpWorkflowID(lifecycle.OpUpdate, "c2") {
		t.Errorf("update: %+v", first)
	}
	if appErrType(second.rejected) != lifecycle.ErrBusy {
		t.Errorf("rollback during update: %+v", second)
	}
	if len(l.begun) != 2 || l.begun[1].Op != lifecycle.OpUpdate {
		t.Errorf("begun %+v", l.begun)
	}
}
