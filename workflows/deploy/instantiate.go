package deploy

import (
	"errors"
	"fmt"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/temco/temco/internal/lifecycle"
)

// Instantiate deploys a new context: render, placement, controllers in priority order,
// then the per-cluster apply fan-out. It ends Instantiated, InstantiateFailed or
// InstantiateStopped; a terminate cancels it and it records InstantiateFailed on the way out.
func Instantiate(ctx workflow.Context, in lifecycle.OpInput) error {
	o := &operation{in: in}
	work, err := o.setup(ctx, lifecycle.OpInstantiate)
	if err != nil {
		return err
	}
	err = o.instantiate(work)
	switch {
	case ctx.Err() != nil: // cancelled from outside: a terminate preempts this instantiate
		_ = o.finish(ctx, lifecycle.StatusInstantiateFailed, "cancelled by terminate")
		return temporal.NewCanceledError()
	case o.stopped:
		return o.finish(ctx, lifecycle.StatusInstantiateStopped, "stopped")
	case err != nil:
		if ferr := o.finish(ctx, lifecycle.StatusInstantiateFailed, message(err)); ferr != nil {
			return ferr
		}
		return err
	}
	return o.finish(ctx, lifecycle.StatusInstantiated, "")
}

func (o *operation) instantiate(ctx workflow.Context) error {
	ref := lifecycle.ContextRef{DIG: o.in.DIG, ContextID: o.in.ContextID}
	o.progress.Phase = "render"
	if err := workflow.ExecuteActivity(preparing(ctx), lifecycle.ActivityRenderApps, ref).Get(ctx, nil); err != nil {
		return err
	}
	o.progress.Phase = "placement"
	var plan lifecycle.Plan
	if err := workflow.ExecuteActivity(preparing(ctx), lifecycle.ActivityPlaceApps, ref).Get(ctx, &plan); err != nil {
		return err
	}
	o.progress.ClustersTotal = plan.Clusters
	for _, c := range plan.Controllers {
		o.progress.Phase = "controller " + c.Name
		actx := preparing(ctx)
		if c.TaskQueue != "" {
			actx = workflow.WithTaskQueue(actx, c.TaskQueue)
		}
		if err := workflow.ExecuteActivity(actx, lifecycle.ActivityRunController, lifecycle.ActionInput{ContextRef: ref, Controller: c}).Get(ctx, nil); err != nil {
			return err
		}
	}
	o.progress.Phase = "apply"
	res, err := o.fanOut(ctx, plan.Batches, lifecycle.WorkflowApplyBatch)
	if err != nil {
		return err
	}
	o.progress.Phase = "done"
	if res.Failed > 0 {
		return temporal.NewNonRetryableApplicationError(fmt.Sprintf("%d resources failed to apply", res.Failed), "ApplyFailed", nil)
	}
	return nil
}

// message is the text of an error for the AppContext status, without Temporal's wrapping.
func message(err error) string {
	var appErr *temporal.ApplicationError
	if errors.As(err, &appErr) {
		return appErr.Message()
	}
	return err.Error()
}
