package deploy

import (
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/temco/temco/contract"
	"github.com/temco/temco/internal/core/lifecycle"
)

// Update applies a new revision rendered from the DIG as it is now; Rollback applies a
// new revision copied from a stored one. Both apply only the difference from the running
// revision (o.in.Previous): changed and new objects first, then the removal of what the
// new revision no longer has, apps and clusters included. They end Instantiated,
// UpdateFailed or UpdateStopped; a terminate cancels them.
func Update(ctx workflow.Context, in lifecycle.OpInput) error {
	return revise(ctx, in, lifecycle.OpUpdate)
}

// Rollback: see Update.
func Rollback(ctx workflow.Context, in lifecycle.OpInput) error {
	return revise(ctx, in, lifecycle.OpRollback)
}

func revise(ctx workflow.Context, in lifecycle.OpInput, op string) error {
	o := &operation{in: in}
	work, err := o.setup(ctx, op)
	if err != nil {
		return err
	}
	pruned, err := o.revise(work)
	if pruned {
		o.superseded = in.Previous
	}
	return o.conclude(ctx, err, outcome{done: lifecycle.StatusInstantiated,
		failed: lifecycle.StatusUpdateFailed, stopped: lifecycle.StatusUpdateStopped, cancelled: "cancelled by terminate"})
}

// revise prepares the new context, applies it, then prunes the previous one; pruned says
// whether the previous revision is gone from the clusters.
func (o *operation) revise(ctx workflow.Context) (pruned bool, err error) {
	var plan lifecycle.Plan
	if o.in.Source != "" {
		o.progress.Phase = "copy"
		err = lifecycle.CopyContext.Execute(bookkeeping(ctx),
			lifecycle.CopyInput{From: o.in.Source, To: o.in.ContextID}).Get(ctx, &plan)
		o.progress.ClustersTotal = plan.Clusters
	} else {
		plan, err = o.prepare(ctx)
	}
	if err != nil {
		return false, err
	}
	var applyErr error
	if plan.Rollout != nil {
		// Stage by stage, each stage's clusters pruned right after their apply; a failed
		// rollout that returned its clusters leaves the previous revision current.
		if applyErr = o.roll(ctx, plan.Rollout, o.reviseRange, o.restoreRange); applyErr != nil {
			return false, applyErr
		}
	} else {
		applyErr = o.apply(ctx, plan)
	}
	if ctx.Err() != nil {
		return false, applyErr
	}
	// What the new revision does not have goes, even when some of it failed to apply:
	// otherwise the previous revision's objects would outlive their last reference.
	o.progress.Phase = "prune"
	var batches int
	if err := lifecycle.ContextBatches.Execute(bookkeeping(ctx), o.in.Previous).Get(ctx, &batches); err != nil {
		return false, err
	}
	res, err := o.fanOut(ctx, fan{kind: pruneBatch, prefix: "prune",
		in: lifecycle.BatchInput{ContextID: o.in.Previous, Next: o.in.ContextID}, batches: batches})
	if err != nil {
		return false, err
	}
	if applyErr != nil {
		return true, applyErr
	}
	if res.Failed > 0 {
		return true, temporal.NewNonRetryableApplicationError("some objects of the previous revision could not be deleted", lifecycle.ErrPruneFailed, nil)
	}
	if err := o.runLater(ctx); err != nil {
		return true, err
	}
	return true, o.hook(ctx, contract.HookFinished, lifecycle.Hooked{Controllers: plan.Controllers, Steps: len(plan.Controllers)})
}

// reviseRange applies the new revision to a range of its batches (a rollout's stage) and
// removes from the same clusters what the previous revision had and it has not.
func (o *operation) reviseRange(ctx workflow.Context, first, n, window int) (lifecycle.BatchResult, error) {
	res, err := o.applyRange(ctx, first, n, window)
	if err != nil {
		return res, err
	}
	pruned, err := o.fanOut(ctx, fan{kind: pruneBatch, batches: n, offset: first, window: window, prefix: "prune",
		in: lifecycle.BatchInput{ContextID: o.in.Previous, Next: o.in.ContextID, ClustersOf: o.in.ContextID, Tolerant: true}})
	res.ClustersFailed += pruned.ClustersFailed
	return res, err
}

// restoreRange returns the clusters of a range of the new revision's batches to the
// previous revision: its objects applied again where they differ, then what only the new
// revision had removed.
func (o *operation) restoreRange(ctx workflow.Context, first, n, window int) (lifecycle.BatchResult, error) {
	res, err := o.fanOut(ctx, fan{kind: applyBatch, batches: n, offset: first, window: window, prefix: "restore",
		in: lifecycle.BatchInput{ContextID: o.in.Previous, Previous: o.in.ContextID, ClustersOf: o.in.ContextID, Tolerant: true}})
	if err != nil {
		return res, err
	}
	_, err = o.fanOut(ctx, fan{kind: pruneBatch, batches: n, offset: first, window: window, prefix: "unprune",
		in: lifecycle.BatchInput{ContextID: o.in.ContextID, Next: o.in.Previous, Tolerant: true}})
	return res, err
}
