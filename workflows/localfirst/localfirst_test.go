package localfirst

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"testing"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/temco/temco/internal/core/lifecycle"
)

var retryForever = &temporal.RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: 30 * time.Second,
	NonRetryableErrorTypes: []string{"InvalidState"}}

// run executes a write (BeginOperation, which the DIG's workflow runs so) through Execute;
// fail decides each attempt's outcome from its
// number (1-based) and returns the attempts, local or not, in order.
func run(t *testing.T, fail func(n int) error) ([]bool, error) {
	t.Helper()
	var s testsuite.WorkflowTestSuite
	s.SetLogger(log.NewStructuredLogger(slog.New(slog.DiscardHandler)))
	env := s.NewTestWorkflowEnvironment()
	var mu sync.Mutex
	var local []bool
	lifecycle.Register(env, lifecycle.BeginOperation, func(ctx context.Context, in lifecycle.BeginInput) (lifecycle.BeginResult, error) {
		mu.Lock()
		defer mu.Unlock()
		local = append(local, activity.GetInfo(ctx).IsLocalActivity)
		if err := fail(len(local)); err != nil {
			return lifecycle.BeginResult{}, err
		}
		return lifecycle.BeginResult{ContextID: in.ContextID + " written"}, nil
	})
	env.RegisterWorkflowWithOptions(func(ctx workflow.Context) (string, error) {
		var out lifecycle.BeginResult
		err := Execute(ctx, time.Minute, retryForever, lifecycle.BeginOperation, lifecycle.BeginInput{ContextID: "state"}, &out)
		return out.ContextID, err
	}, workflow.RegisterOptions{Name: "wf"})
	env.ExecuteWorkflow("wf")
	if !env.IsWorkflowCompleted() {
		t.Fatal("workflow did not complete")
	}
	var out string
	err := env.GetWorkflowError()
	if err == nil {
		if env.GetWorkflowResult(&out); out != "state written" {
			t.Errorf("result %q", out)
		}
	}
	return local, err
}

func TestAWriteThatSucceedsWithinTheLocalAttemptsStaysLocal(t *testing.T) {
	local, err := run(t, func(n int) error {
		if n < Attempts {
			return errors.New("store unavailable")
		}
		return nil
	})
	if err != nil || len(local) != Attempts || !local[Attempts-1] {
		t.Fatalf("attempts (local?) %v, error %v: want %d local attempts", local, err, Attempts)
	}
}

func TestAWriteTheStoreKeepsRefusingBecomesARegularActivity(t *testing.T) {
	local, err := run(t, func(n int) error {
		if n < Attempts+3 {
			return errors.New("store unavailable")
		}
		return nil
	})
	if err != nil || len(local) != Attempts+3 {
		t.Fatalf("attempts %v, error %v", local, err)
	}
	for i, l := range local {
		if l != (i < Attempts) {
			t.Fatalf("attempts (local?) %v: want %d local, then regular ones", local, Attempts)
		}
	}
}

func TestARefusalIsNotRetriedElsewhere(t *testing.T) {
	local, err := run(t, func(int) error {
		return temporal.NewApplicationError("DIG is Created", "InvalidState")
	})
	var appErr *temporal.ApplicationError
	if !errors.As(err, &appErr) || appErr.Type() != "InvalidState" || len(local) != 1 {
		t.Fatalf("attempts %v, error %v: want the refusal after one attempt", local, err)
	}
}
