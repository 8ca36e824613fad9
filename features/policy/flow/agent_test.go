package flow

import (
	"context"
	"sync"
	"testing"

	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/temco/temco/internal/core/lifecycle"
)

// listens fakes the listener activity: each attempt holds until cancelled or, when gone
// says so, answers that the agent is deregistered.
type listens struct {
	mu       sync.Mutex
	attempts int
	gone     func(attempt int) bool
	// listening runs as attempt starts to hold the stream (the test clock stands still
	// while an activity runs, so signals come from here).
	listening func(attempt int)
}

func (l *listens) env(t *testing.T) *testsuite.TestWorkflowEnvironment {
	t.Helper()
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	env.RegisterWorkflowWithOptions(PolicyAgent, workflow.RegisterOptions{Name: WorkflowPolicyAgent})
	lifecycle.Register(env, ListenPolicyAgent, func(ctx context.Context, in PolicyAgentInput) (PolicyListened, error) {
		l.mu.Lock()
		l.attempts++
		n := l.attempts
		l.mu.Unlock()
		if in.Name != "sampleagent" {
			return PolicyListened{}, nil
		}
		if l.gone(n) {
			return PolicyListened{Gone: true}, nil
		}
		l.listening(n)
		<-ctx.Done()
		return PolicyListened{}, ctx.Err()
	})
	return env
}

func TestAWakeReopensTheStreamAndADeregisteredAgentEnds(t *testing.T) {
	l := &listens{gone: func(n int) bool { return n == 2 }}
	env := l.env(t)
	l.listening = func(int) { env.SignalWorkflow(lifecycle.SignalWake, nil) }
	env.ExecuteWorkflow(WorkflowPolicyAgent, PolicyAgentInput{Name: "sampleagent"})
	if !env.IsWorkflowCompleted() || env.GetWorkflowError() != nil {
		t.Fatalf("completed %v, error %v", env.IsWorkflowCompleted(), env.GetWorkflowError())
	}
	if l.attempts != 2 {
		t.Errorf("%d listening attempts, want 2 (the first cancelled by the wake)", l.attempts)
	}
}

func TestStopEndsTheListener(t *testing.T) {
	l := &listens{gone: func(int) bool { return false }}
	env := l.env(t)
	l.listening = func(int) { env.SignalWorkflow(lifecycle.SignalStop, nil) }
	env.ExecuteWorkflow(WorkflowPolicyAgent, PolicyAgentInput{Name: "sampleagent"})
	if !env.IsWorkflowCompleted() || env.GetWorkflowError() != nil {
		t.Fatalf("completed %v, error %v", env.IsWorkflowCompleted(), env.GetWorkflowError())
	}
	if l.attempts != 1 {
		t.Errorf("%d attempts, want 1", l.attempts)
	}
}
