package dig

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/temco/temco/internal/core/lifecycle"
)

var originRef = lifecycle.Target{Project: "p", CompositeApp: "ca", Version: "v0", DIG: "origin"}

// migrateLog records what the migrate's and the hold's steps saw.
type migrateLog struct {
	held     []lifecycle.HoldInput
	begun    []lifecycle.MigrateBegin
	migrated []lifecycle.MigrateInput
	signals  []string // "<workflow> <signal> <arg>"
	holdErr  error    // HoldDIG's answer
	beginErr error    // BeginMigrate's answer
}

// register adds the migrate's and hold's fakes to an environment of newEnv.
func (m *migrateLog) register(env *testsuite.TestWorkflowEnvironment, l *opLog) {
	stopOrRun := l.fakeOp(lifecycle.OpMigrate)
	env.RegisterWorkflowWithOptions(func(ctx workflow.Context, in lifecycle.MigrateInput) error {
		m.migrated = append(m.migrated, in)
		return stopOrRun(ctx, in.OpInput)
	}, workflow.RegisterOptions{Name: lifecycle.WorkflowMigrate})
	lifecycle.Register(env, lifecycle.HoldDIG, func(_ context.Context, in lifecycle.HoldInput) (lifecycle.OpAccepted, error) {
		m.held = append(m.held, in)
		return lifecycle.OpAccepted{Op: lifecycle.OpMigrate, ContextID: "o1", WorkflowID: in.Holder}, m.holdErr
	})
	lifecycle.Register(env, lifecycle.BeginMigrate, func(_ context.Context, in lifecycle.MigrateBegin) (lifecycle.BeginResult, error) {
		m.begun = append(m.begun, in)
		return lifecycle.BeginResult{ContextID: in.ContextID, Revision: 1, Previous: in.OriginContext}, m.beginErr
	})
	lifecycle.Register(env, lifecycle.BeginHold, func(_ context.Context, in lifecycle.BeginInput) (lifecycle.BeginResult, error) {
		return lifecycle.BeginResult{ContextID: "c1", Revision: 1}, nil
	})
	lifecycle.RegisterNoResult(env, lifecycle.AwaitHolder, func(context.Context, string) error { return nil })
	env.OnSignalExternalWorkflow(mock.Anything, mock.Anything, mock.Anything, mock.Anything, mock.Anything).Return(
		func(_, id, _, name string, arg any) error {
			m.signals = append(m.signals, id+" "+name+" "+fmtArg(arg))
			return nil
		})
}

func fmtArg(arg any) string {
	if s, ok := arg.(string); ok {
		return s
	}
	return ""
}

// send sends one Workflow Update by name after delay.
func send(env *testsuite.TestWorkflowEnvironment, delay time.Duration, name string, arg any) *result {
	r := &result{}
	env.RegisterDelayedCallback(func() {
		env.UpdateWorkflow(name, "", &testsuite.TestUpdateCallback{
			OnReject: func(err error) { r.rejected, r.done = err, true },
			OnAccept: func() {},
			OnComplete: func(v any, err error) {
				r.done, r.failed = true, err
				if acc, ok := v.(lifecycle.OpAccepted); ok {
					r.accepted = acc
				}
			},
		}, arg)
	}, delay)
	return r
}

// The target's workflow holds the origin, records the start with the origin's running
// context, and runs the migrate as its operation: nothing else starts meanwhile, not even
// a terminate; a stop reaches the migrate.
func TestMigrateHoldsTheOriginThenRunsOnTheTarget(t *testing.T) {
	l, m := &opLog{}, &migrateLog{}
	env := newEnv(t, l)
	m.register(env, l)
	acc := send(env, 0, lifecycle.UpdateMigrate, lifecycle.MigrateRequest{Origin: originRef, ContextID: "c9"})
	busy := update(env, 10*time.Second, lifecycle.OpRequest{Op: lifecycle.OpUpdate, ContextID: "c2"})
	term := update(env, 11*time.Second, lifecycle.OpRequest{Op: lifecycle.OpTerminate})
	stop := update(env, 12*time.Second, lifecycle.OpRequest{Op: lifecycle.OpStop})
	env.ExecuteWorkflow(Lifecycle, lifecycle.TargetInput{Target: digRef})

	id := digRef.OpWorkflowID(lifecycle.OpMigrate, "c9")
	if acc.failed != nil || acc.rejected != nil || acc.accepted.WorkflowID != id || acc.accepted.ContextID != "c9" || acc.accepted.Revision != 1 {
		t.Fatalf("migrate: %+v", acc)
	}
	if len(m.held) != 1 || m.held[0].DIG != originRef || m.held[0].Holder != id || m.held[0].HolderDIG != digRef {
		t.Errorf("held %+v", m.held)
	}
	if len(m.begun) != 1 || m.begun[0].OriginContext != "o1" || m.begun[0].Origin != originRef || m.begun[0].DIG != digRef {
		t.Errorf("begun %+v", m.begun)
	}
	if len(m.migrated) != 1 || m.migrated[0].Origin != originRef || m.migrated[0].Previous != "o1" || m.migrated[0].ContextID != "c9" {
		t.Errorf("migrate workflow input %+v", m.migrated)
	}
	if appErrType(busy.rejected) != lifecycle.ErrBusy || appErrType(term.rejected) != lifecycle.ErrBusy {
		t.Errorf("update %+v, terminate %+v during a migrate", busy, term)
	}
	if stop.failed != nil || len(l.stopped) != 1 || l.stopped[0] != lifecycle.OpMigrate {
		t.Errorf("stop %+v, stopped %v", stop, l.stopped)
	}
	if len(m.signals) != 0 {
		t.Errorf("signals %v: the hold was released although the migrate started", m.signals)
	}
}

// A refused hold (the origin busy, or not instantiated) fails the migrate before anything
// is recorded.
func TestARefusedHoldStartsNothing(t *testing.T) {
	l, m := &opLog{}, &migrateLog{holdErr: temporal.NewNonRetryableApplicationError("origin cannot migrate: update is running", lifecycle.ErrBusy, nil)}
	env := newEnv(t, l)
	m.register(env, l)
	acc := send(env, 0, lifecycle.UpdateMigrate, lifecycle.MigrateRequest{Origin: originRef, ContextID: "c9"})
	env.ExecuteWorkflow(Lifecycle, lifecycle.TargetInput{Target: digRef})
	if appErrType(acc.failed) != lifecycle.ErrBusy {
		t.Fatalf("migrate: %+v", acc)
	}
	if len(m.begun) != 0 || len(m.migrated) != 0 {
		t.Errorf("begun %+v, migrated %+v after a refused hold", m.begun, m.migrated)
	}
}

// When the target refuses (not approved), the origin is released at once.
func TestARefusedBeginReleasesTheOrigin(t *testing.T) {
	l, m := &opLog{}, &migrateLog{beginErr: temporal.NewNonRetryableApplicationError("target is Created", lifecycle.ErrInvalidState, nil)}
	env := newEnv(t, l)
	m.register(env, l)
	acc := send(env, 0, lifecycle.UpdateMigrate, lifecycle.MigrateRequest{Origin: originRef, ContextID: "c9"})
	env.ExecuteWorkflow(Lifecycle, lifecycle.TargetInput{Target: digRef})
	if appErrType(acc.failed) != lifecycle.ErrInvalidState {
		t.Fatalf("migrate: %+v", acc)
	}
	want := originRef.WorkflowID() + " " + lifecycle.SignalRelease + " " + digRef.OpWorkflowID(lifecycle.OpMigrate, "c9")
	if len(m.signals) != 1 || m.signals[0] != want || len(m.migrated) != 0 {
		t.Errorf("signals %v, want %q; migrated %+v", m.signals, want, m.migrated)
	}
}

// A migrate to itself is refused by the validator.
func TestAMigrateToItselfIsInvalid(t *testing.T) {
	l, m := &opLog{}, &migrateLog{}
	env := newEnv(t, l)
	m.register(env, l)
	acc := send(env, 0, lifecycle.UpdateMigrate, lifecycle.MigrateRequest{Origin: digRef, ContextID: "c9"})
	env.ExecuteWorkflow(Lifecycle, lifecycle.TargetInput{Target: digRef})
	if appErrType(acc.rejected) != lifecycle.ErrInvalidInput || len(m.held) != 0 {
		t.Errorf("migrate to itself: %+v, held %+v", acc, m.held)
	}
}

// The origin's workflow, held, refuses every operation but a stop, which it passes on to
// the migrate; a retried hold by the same migrate is answered again; once the migrate
// has ended (AwaitHolder returns) operations start again.
func TestAHeldDIGRunsNothingUntilItsHolderEnds(t *testing.T) {
	l, m := &opLog{}, &migrateLog{}
	env := newEnv(t, l)
	m.register(env, l)
	env.OnActivity(lifecycle.AwaitHolder.Name(), mock.Anything, "h1").After(time.Minute).Return(nil)
	holder := lifecycle.HoldRequest{Holder: "h1", HolderDIG: originRef}
	held := send(env, 0, lifecycle.UpdateHold, holder)
	again := send(env, time.Second, lifecycle.UpdateHold, holder)
	other := send(env, 2*time.Second, lifecycle.UpdateHold, lifecycle.HoldRequest{Holder: "h2", HolderDIG: originRef})
	busy := update(env, 10*time.Second, lifecycle.OpRequest{Op: lifecycle.OpUpdate, ContextID: "c2"})
	term := update(env, 11*time.Second, lifecycle.OpRequest{Op: lifecycle.OpTerminate})
	stop := update(env, 12*time.Second, lifecycle.OpRequest{Op: lifecycle.OpStop})
	after := update(env, 2*time.Minute, lifecycle.OpRequest{Op: lifecycle.OpUpdate, ContextID: "c3"})
	env.ExecuteWorkflow(Lifecycle, lifecycle.TargetInput{Target: digRef})

	if held.failed != nil || held.accepted.ContextID != "c1" || held.accepted.WorkflowID != "h1" || held.accepted.Op != lifecycle.OpMigrate {
		t.Fatalf("hold: %+v", held)
	}
	if again.failed != nil || again.rejected != nil || again.accepted != held.accepted {
		t.Errorf("retried hold: %+v", again)
	}
	for what, r := range map[string]*result{"another hold": other, "update": busy, "terminate": term} {
		if appErrType(r.rejected) != lifecycle.ErrBusy {
			t.Errorf("%s while held: %+v", what, r)
		}
	}
	if stop.failed != nil || len(m.signals) != 1 || m.signals[0] != "h1 "+lifecycle.SignalStop+" " {
		t.Errorf("stop while held: %+v, signals %v", stop, m.signals)
	}
	if after.failed != nil || after.rejected != nil || len(l.started) != 1 || l.started[0] != "update c3" {
		t.Errorf("update after the holder ended: %+v, started %v", after, l.started)
	}
}

// A release from the holder ends the hold at once; one naming another holder does not.
func TestAReleaseEndsTheHold(t *testing.T) {
	l, m := &opLog{}, &migrateLog{}
	env := newEnv(t, l)
	m.register(env, l)
	env.OnActivity(lifecycle.AwaitHolder.Name(), mock.Anything, "h1").After(time.Hour).Return(nil)
	send(env, 0, lifecycle.UpdateHold, lifecycle.HoldRequest{Holder: "h1", HolderDIG: originRef})
	env.RegisterDelayedCallback(func() { env.SignalWorkflow(lifecycle.SignalRelease, "h0") }, 5*time.Second)
	stillHeld := update(env, 10*time.Second, lifecycle.OpRequest{Op: lifecycle.OpUpdate, ContextID: "c2"})
	env.RegisterDelayedCallback(func() { env.SignalWorkflow(lifecycle.SignalRelease, "h1") }, 20*time.Second)
	free := update(env, 30*time.Second, lifecycle.OpRequest{Op: lifecycle.OpUpdate, ContextID: "c3"})
	env.ExecuteWorkflow(Lifecycle, lifecycle.TargetInput{Target: digRef})
	if appErrType(stillHeld.rejected) != lifecycle.ErrBusy {
		t.Errorf("update after another holder's release: %+v", stillHeld)
	}
	if free.failed != nil || free.rejected != nil || len(l.started) != 1 || l.started[0] != "update c3" {
		t.Errorf("update after the release: %+v, started %v", free, l.started)
	}
}
