// Package flow holds the ClusterInventory workflow: the loop of one cluster inventory
// (docs/inventory.md). Each sync is one activity (features/inventory/work), a reconciliation
// that may run again at no harm; the workflow paces it, updates the DIGs placed on a
// cluster whose profile went away, takes the wake and stop signals and continues as new
// now and then.
package flow

import (
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/temco/temco/internal/core/lifecycle"
)

// syncsPerRun bounds one run's history: the workflow continues as new after them.
const syncsPerRun = 200

// ClusterInventory syncs the inventory every interval until it is deleted or stopped. A
// sync that fails is logged and tried again at the next interval (the failure is in its
// status too).
func ClusterInventory(ctx workflow.Context, in InventoryInput) error {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: 5 * time.Minute,
		RetryPolicy: &temporal.RetryPolicy{MaximumAttempts: 2}})
	wake := workflow.GetSignalChannel(ctx, lifecycle.SignalWake)
	stop := workflow.GetSignalChannel(ctx, lifecycle.SignalStop)
	interval := time.Duration(0)
	for n := 0; n < syncsPerRun; n++ {
		var done InventorySynced
		if err := SyncInventory.Execute(ctx, in).Get(ctx, &done); err != nil {
			workflow.GetLogger(ctx).Warn("inventory sync failed", "inventory", in.ID(), "error", lifecycle.ErrorMessage(err))
		} else {
			if done.Gone {
				return nil
			}
			interval = done.Interval
			workflow.GetLogger(ctx).Info("inventory synced", "inventory", in.ID(), "summary", done.Summary)
			evict(ctx, in, done.Evict)
		}
		stopped := false
		tctx, cancel := workflow.WithCancel(ctx)
		sel := workflow.NewSelector(ctx)
		sel.AddFuture(workflow.NewTimer(tctx, max(interval, 5*time.Second)), func(workflow.Future) {})
		sel.AddReceive(wake, func(c workflow.ReceiveChannel, _ bool) { c.Receive(ctx, nil) })
		sel.AddReceive(stop, func(c workflow.ReceiveChannel, _ bool) { c.Receive(ctx, nil); stopped = true })
		sel.Select(ctx)
		for sel.HasPending() {
			sel.Select(ctx)
		}
		cancel()
		if stopped {
			return nil
		}
	}
	return workflow.NewContinueAsNewError(ctx, ClusterInventory, in)
}

// evict updates each DIG, at once, through its ordinary update (its placements by label no
// longer select the removed cluster), and waits for the updates: the next sync publishes
// their clusters. Each update's context is drawn once, so a retried start finds its own.
// A DIG busy with another operation for evictWait, or whose update fails, keeps the
// cluster until its next operation (logged).
func evict(ctx workflow.Context, in InventoryInput, digs []lifecycle.Target) {
	uctx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{ScheduleToCloseTimeout: evictWait,
		StartToCloseTimeout: evictWait, HeartbeatTimeout: 30 * time.Second,
		RetryPolicy: &temporal.RetryPolicy{MaximumInterval: 30 * time.Second,
			NonRetryableErrorTypes: []string{lifecycle.ErrInvalidInput, lifecycle.ErrInvalidState, lifecycle.ErrApplyFailed}}})
	futures := make([]lifecycle.Future[lifecycle.None], len(digs))
	for i, d := range digs {
		futures[i] = lifecycle.UpdateDIG.Execute(uctx, lifecycle.UpdateDIGInput{DIG: d, ContextID: lifecycle.DrawContextID(ctx)})
	}
	for i, f := range futures {
		if err := f.Get(ctx, nil); err != nil {
			workflow.GetLogger(ctx).Warn("inventory eviction: update failed", "inventory", in.ID(), "dig", digs[i].String(), "error", lifecycle.ErrorMessage(err))
			continue
		}
		workflow.GetLogger(ctx).Info("inventory eviction: updated", "inventory", in.ID(), "dig", digs[i].String())
	}
}

// evictWait bounds an eviction's update, its wait for the DIG's other operations included.
const evictWait = 30 * time.Minute
