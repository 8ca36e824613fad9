package deploy

import (
	"fmt"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/temco/temco/contract"
	"github.com/temco/temco/internal/core/lifecycle"
)

// Terminate deletes every object of a context from its clusters and waits until they are
// gone. It ends Terminated, TerminateFailed or TerminateStopped.
func Terminate(ctx workflow.Context, in lifecycle.OpInput) error {
	o := &operation{in: in}
	work, err := o.setup(ctx, lifecycle.OpTerminate)
	if err != nil {
		return err
	}
	return o.conclude(ctx, o.terminate(work), outcome{done: lifecycle.StatusTerminated,
		failed: lifecycle.StatusTerminateFailed, stopped: lifecycle.StatusTerminateStopped, cancelled: "cancelled"})
}

func (o *operation) terminate(ctx workflow.Context) error {
	var hooked lifecycle.Hooked
	if o.release >= releaseHooks {
		o.progress.Phase = "controllers' terminate hooks"
		if err := lifecycle.ContextControllers.Execute(bookkeeping(ctx), o.in.ContextID).Get(ctx, &hooked); err != nil {
			return err
		}
		if err := o.hook(ctx, contract.HookTerminate, hooked); err != nil {
			return err
		}
	}
	var batches int
	if err := lifecycle.ContextBatches.Execute(bookkeeping(ctx), o.in.ContextID).Get(ctx, &batches); err != nil {
		return err
	}
	o.progress.Phase = "delete"
	res, err := o.fanOut(ctx, fan{kind: deleteBatch, in: lifecycle.BatchInput{ContextID: o.in.ContextID}, batches: batches})
	if err != nil {
		return err
	}
	// Contexts an update did not finish replacing may still have objects out there
	// (version gate: 2026-11-22, terminate also deletes what a stopped update left).
	if len(o.in.Leftovers) > 0 && o.has(ctx, "terminate-leftovers") {
		for i, left := range o.in.Leftovers {
			var n int
			if err := lifecycle.ContextBatches.Execute(bookkeeping(ctx), left).Get(ctx, &n); err != nil {
				return err
			}
			r, err := o.fanOut(ctx, fan{kind: deleteBatch, in: lifecycle.BatchInput{ContextID: left}, batches: n,
				prefix: fmt.Sprintf("leftover-%d-batch", i)})
			if err != nil {
				return err
			}
			res.Failed += r.Failed
		}
	}
	if res.Failed > 0 {
		return temporal.NewNonRetryableApplicationError(fmt.Sprintf("%d resources failed to delete", res.Failed), lifecycle.ErrDeleteFailed, nil)
	}
	if err := o.runLater(ctx); err != nil {
		return err
	}
	if err := o.hook(ctx, contract.HookFinished, hooked); err != nil {
		return err
	}
	o.progress.Phase = "done"
	return nil
}
