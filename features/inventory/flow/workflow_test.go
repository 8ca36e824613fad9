package flow

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/temco/temco/internal/core/lifecycle"
)

var inv = InventoryInput{Provider: "cp", Name: "hub"}

// run runs the workflow with a sync that answers sync(n) for its n-th call.
func run(t *testing.T, sync func(n int) (InventorySynced, error), setUp func(*testsuite.TestWorkflowEnvironment)) (int, error) {
	t.Helper()
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	env.RegisterWorkflowWithOptions(ClusterInventory, workflow.RegisterOptions{Name: WorkflowInventory})
	n := 0
	lifecycle.Register(env, SyncInventory, func(_ context.Context, in InventoryInput) (InventorySynced, error) {
		if in != inv {
			return InventorySynced{}, errors.New("another inventory")
		}
		n++
		return sync(n)
	})
	if setUp != nil {
		setUp(env)
	}
	env.ExecuteWorkflow(WorkflowInventory, inv)
	return n, env.GetWorkflowError()
}

func every(d time.Duration) func(int) (InventorySynced, error) {
	return func(int) (InventorySynced, error) { return InventorySynced{Interval: d}, nil }
}

func TestSyncsAtItsIntervalUntilStopped(t *testing.T) {
	n, err := run(t, every(30*time.Second), func(env *testsuite.TestWorkflowEnvironment) {
		env.RegisterDelayedCallback(func() { env.SignalWorkflow(lifecycle.SignalStop, nil) }, 95*time.Second)
	})
	if err != nil || n != 4 {
		t.Errorf("%d syncs (%v), want 4 in 95 s at 30 s", n, err)
	}
}

func TestWakeSyncsNow(t *testing.T) {
	n, err := run(t, every(time.Hour), func(env *testsuite.TestWorkflowEnvironment) {
		env.RegisterDelayedCallback(func() { env.SignalWorkflow(lifecycle.SignalWake, nil) }, time.Minute)
		env.RegisterDelayedCallback(func() { env.SignalWorkflow(lifecycle.SignalStop, nil) }, 2*time.Minute)
	})
	if err != nil || n != 2 {
		t.Errorf("%d syncs (%v), want 2: the first, and the wake's", n, err)
	}
}

func TestEndsWhenGoneAndOutlivesAFailedSync(t *testing.T) {
	n, err := run(t, func(n int) (InventorySynced, error) {
		switch n {
		case 1, 2: // the sync's two attempts
			return InventorySynced{}, errors.New("store down")
		case 3:
			return InventorySynced{Interval: 10 * time.Second}, nil
		}
		return InventorySynced{Gone: true}, nil
	}, nil)
	if err != nil || n != 4 {
		t.Errorf("%d calls (%v), want 4: a failed sync (two attempts), one, and the one that found it gone", n, err)
	}
}

func TestContinuesAsNew(t *testing.T) {
	n, err := run(t, every(5*time.Second), nil)
	var can *workflow.ContinueAsNewError
	if !errors.As(err, &can) || n != syncsPerRun {
		t.Errorf("%d syncs, then %v: want %d and a continue-as-new", n, err, syncsPerRun)
	}
}

func TestEvictsUpdateEachDIGOnceThroughItsUpdate(t *testing.T) {
	a := lifecycle.Target{Project: "p", CompositeApp: "ca", Version: "v1", DIG: "a"}
	b := lifecycle.Target{Project: "p", CompositeApp: "ca", Version: "v1", DIG: "b"}
	var mu sync.Mutex
	updates := map[lifecycle.Target][]string{}
	n, err := run(t, func(n int) (InventorySynced, error) {
		switch n {
		case 1:
			return InventorySynced{Interval: time.Minute, Evict: []lifecycle.Target{a, b}}, nil
		case 2:
			return InventorySynced{Interval: time.Minute}, nil
		}
		return InventorySynced{Gone: true}, nil
	}, func(env *testsuite.TestWorkflowEnvironment) {
		attempts := 0
		lifecycle.RegisterNoResult(env, lifecycle.UpdateDIG, func(_ context.Context, in lifecycle.UpdateDIGInput) error {
			mu.Lock()
			defer mu.Unlock()
			if in.DIG == b && attempts == 0 { // busy once: tried again, with the same context
				attempts++
				updates[in.DIG] = append(updates[in.DIG], in.ContextID)
				return errors.New("an operation runs")
			}
			updates[in.DIG] = append(updates[in.DIG], in.ContextID)
			return nil
		})
	})
	if err != nil || n != 3 {
		t.Fatalf("%d syncs (%v), want 3", n, err)
	}
	if len(updates[a]) != 1 || len(updates[b]) != 2 || updates[b][0] != updates[b][1] || updates[a][0] == updates[b][0] || updates[a][0] == "" {
		t.Errorf("updates %v: want one of a, a retried one of b on the same context, each its own", updates)
	}
}
