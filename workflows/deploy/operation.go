package deploy

import (
	"fmt"

	"go.temporal.io/sdk/workflow"

	"github.com/temco/temco/internal/lifecycle"
)

// operation is the state of one Instantiate or Terminate run.
type operation struct {
	in       lifecycle.OpInput
	progress lifecycle.Progress
	stopped  bool
	stop     workflow.CancelFunc // cancels the operation's work when a stop arrives
}

// setup registers the progress query and the stop signal, and returns the context the
// operation's work runs in: a stop cancels it (activities waiting for a retry end at
// once), while the caller's context stays usable for recording the outcome.
func (o *operation) setup(ctx workflow.Context, op string) (workflow.Context, error) {
	work, cancel := workflow.WithCancel(ctx)
	o.stop = cancel
	o.progress = lifecycle.Progress{Op: op, ContextID: o.in.ContextID, Phase: "starting"}
	if err := workflow.SetQueryHandler(ctx, lifecycle.QueryProgress, func() (lifecycle.Progress, error) {
		return o.progress, nil
	}); err != nil {
		return nil, err
	}
	stop := workflow.GetSignalChannel(ctx, lifecycle.SignalStop)
	workflow.Go(ctx, func(ctx workflow.Context) {
		stop.Receive(ctx, nil)
		o.stopped, o.progress.Stopped = true, true
		o.stop()
	})
	return work, nil
}

// finish records the final status; it runs on a disconnected context so that it also
// happens when the operation itself was cancelled.
func (o *operation) finish(ctx workflow.Context, status string, errMsg string) error {
	dctx, _ := workflow.NewDisconnectedContext(ctx)
	return workflow.ExecuteActivity(bookkeeping(dctx), lifecycle.ActivityFinishOperation, lifecycle.FinishInput{
		DIG: o.in.DIG, ContextID: o.in.ContextID, Status: status, Stopped: o.stopped, Error: errMsg,
	}).Get(dctx, nil)
}

// fanOut runs the batches of a context: inline when there is just one, otherwise as
// child workflows in a sliding window of BatchWindow. A stop cancels what is in flight
// and starts nothing new.
func (o *operation) fanOut(ctx workflow.Context, batches int, workflowType string) (lifecycle.BatchResult, error) {
	o.progress.BatchesTotal = batches
	return fanOut(ctx, o.in.ContextID, batches, workflowType, false, o.add)
}

// fanOut runs the batches of a context: inline when there is just one, otherwise as
// child workflows in a sliding window of BatchWindow; each result goes to add. Once ctx
// is cancelled (a stop) nothing new starts and what runs is cancelled.
func fanOut(ctx workflow.Context, ctxID string, batches int, workflowType string, detail bool,
	add func(*lifecycle.BatchResult, lifecycle.BatchResult)) (lifecycle.BatchResult, error) {
	var total lifecycle.BatchResult
	if batches == 1 {
		r, err := runBatch(ctx, lifecycle.BatchInput{ContextID: ctxID, Batch: 0, Detail: detail}, workflowType)
		add(&total, r)
		return total, err
	}
	sel := workflow.NewSelector(ctx)
	var firstErr error
	next, running := 0, 0
	for next < batches || running > 0 {
		for running < BatchWindow && next < batches && ctx.Err() == nil {
			cctx := workflow.WithChildOptions(ctx, workflow.ChildWorkflowOptions{
				WorkflowID: fmt.Sprintf("%s/batch-%d", workflow.GetInfo(ctx).WorkflowExecution.ID, next),
			})
			f := workflow.ExecuteChildWorkflow(cctx, workflowType, lifecycle.BatchInput{ContextID: ctxID, Batch: next, Detail: detail})
			sel.AddFuture(f, func(f workflow.Future) {
				var r lifecycle.BatchResult
				err := f.Get(ctx, &r)
				add(&total, r)
				running--
				if err != nil && firstErr == nil {
					firstErr = err
				}
			})
			next++
			running++
		}
		if running == 0 {
			break // stopped before the remaining batches started
		}
		sel.Select(ctx)
	}
	return total, firstErr
}

func sum(total *lifecycle.BatchResult, r lifecycle.BatchResult) {
	total.Clusters += r.Clusters
	total.Done += r.Done
	total.Failed += r.Failed
}

func (o *operation) add(total *lifecycle.BatchResult, r lifecycle.BatchResult) {
	sum(total, r)
	o.progress.BatchesDone++
	o.progress.ClustersDone += r.Clusters
	o.progress.ResourcesFailed += r.Failed
}

// runBatch applies (or deletes) every cluster of one batch, all concurrently.
func runBatch(ctx workflow.Context, in lifecycle.BatchInput, workflowType string) (lifecycle.BatchResult, error) {
	activityType, opts := lifecycle.ActivityApplyCluster, onCluster
	switch workflowType {
	case lifecycle.WorkflowDeleteBatch:
		activityType = lifecycle.ActivityDeleteCluster
	case lifecycle.WorkflowReadBatch:
		activityType, opts = lifecycle.ActivityReadCluster, reading
	}
	var clusters []string
	if err := workflow.ExecuteActivity(bookkeeping(ctx), lifecycle.ActivityListBatch, in).Get(ctx, &clusters); err != nil {
		return lifecycle.BatchResult{}, err
	}
	futures := make([]workflow.Future, len(clusters))
	for i, c := range clusters {
		futures[i] = workflow.ExecuteActivity(opts(ctx), activityType, lifecycle.ClusterInput{ContextID: in.ContextID, Cluster: c, Detail: in.Detail})
	}
	res := lifecycle.BatchResult{Clusters: len(clusters)}
	var firstErr error
	for _, f := range futures {
		var r lifecycle.ClusterResult
		if err := f.Get(ctx, &r); err != nil && firstErr == nil {
			firstErr = err
		}
		res.Done += r.Done
		res.Failed += r.Failed
	}
	return res, firstErr
}

// ApplyBatch is the child workflow applying one batch of clusters.
func ApplyBatch(ctx workflow.Context, in lifecycle.BatchInput) (lifecycle.BatchResult, error) {
	return runBatch(ctx, in, lifecycle.WorkflowApplyBatch)
}

// ReadBatch is the child workflow reading one batch of clusters.
func ReadBatch(ctx workflow.Context, in lifecycle.BatchInput) (lifecycle.BatchResult, error) {
	return runBatch(ctx, in, lifecycle.WorkflowReadBatch)
}

// DeleteBatch is the child workflow deleting one batch of clusters.
func DeleteBatch(ctx workflow.Context, in lifecycle.BatchInput) (lifecycle.BatchResult, error) {
	return runBatch(ctx, in, lifecycle.WorkflowDeleteBatch)
}
