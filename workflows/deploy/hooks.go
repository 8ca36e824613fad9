package deploy

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/temco/temco/contract"
	"github.com/temco/temco/internal/core/lifecycle"
)

// Workflows controllers ask an operation to run (contract.Workflow: tac's hooks) are its
// child workflows: durable, cancelled with it when they block, and listed in its progress
// and, once it ends, in its context's status.

// readyWait bounds the wait for Ready before WhenReady workflows that set no timeout.
const readyWait = 10 * time.Minute

// asked runs what controller c asked: WhenNow workflows at once, in order; the others
// are kept for after the apply (or deletion).
func (o *operation) asked(ctx workflow.Context, c lifecycle.Controller, ws []contract.Workflow) error {
	if o.release < releaseWorkflows {
		return nil
	}
	for _, w := range ws {
		if w.When != contract.WhenNow {
			o.later = append(o.later, askedBy{c.Name, w})
			continue
		}
		if err := o.runWorkflow(ctx, c.Name, w); err != nil {
			return err
		}
	}
	return nil
}

// askedBy is a workflow and the controller that asked for it.
type askedBy struct {
	controller string
	w          contract.Workflow
}

// runLater runs the workflows kept for after the apply: WhenApplied ones, then, once
// every object is Ready, WhenReady ones.
func (o *operation) runLater(ctx workflow.Context) error {
	var ready []askedBy
	wait := time.Duration(0)
	for _, a := range o.later {
		if a.w.When == contract.WhenReady {
			ready = append(ready, a)
			wait = max(wait, a.w.Timeout)
			continue
		}
		if err := o.runWorkflow(ctx, a.controller, a.w); err != nil {
			return err
		}
	}
	if len(ready) == 0 {
		return nil
	}
	if err := o.awaitReady(ctx, cmp.Or(wait, readyWait)); err != nil {
		return err
	}
	for _, a := range ready {
		if err := o.runWorkflow(ctx, a.controller, a.w); err != nil {
			return err
		}
	}
	return nil
}

// awaitReady reads the context's objects on its clusters until all are Ready, backing
// off from 2 s to 30 s between reads, for at most wait.
func (o *operation) awaitReady(ctx workflow.Context, wait time.Duration) error {
	o.progress.Phase = "wait for Ready"
	deadline := workflow.Now(ctx).Add(wait)
	pause := 2 * time.Second
	for round := 0; ; round++ {
		var batches int
		if err := lifecycle.ContextBatches.Execute(bookkeeping(ctx), o.in.ContextID).Get(ctx, &batches); err != nil {
			return err
		}
		f := fan{kind: readBatch, in: lifecycle.BatchInput{ContextID: o.in.ContextID}, batches: batches,
			prefix: fmt.Sprintf("ready-%d-batch", round), gates: o.gates}
		res, err := f.run(ctx, sum)
		if err != nil {
			return err
		}
		if res.NotReady == 0 {
			return nil
		}
		left := deadline.Sub(workflow.Now(ctx))
		if left <= 0 {
			return temporal.NewNonRetryableApplicationError(fmt.Sprintf("%d objects were not Ready after %s: the workflows that wait for Ready did not run",
				res.NotReady, wait), lifecycle.ErrHookFailed, nil)
		}
		if err := workflow.Sleep(ctx, min(pause, left)); err != nil {
			return err
		}
		pause = min(2*pause, 30*time.Second)
	}
}

// Hook run states (lifecycle.HookRun.State).
const (
	hookRunning   = "Running"
	hookStarted   = "Started" // not blocking: left to run on its own
	hookCompleted = "Completed"
	hookFailed    = "Failed"
	hookTimedOut  = "TimedOut"
	hookCancelled = "Cancelled"
)

// runWorkflow runs w as a child: a blocking one until it ends (at most w.Timeout), one
// that does not block until it has started.
func (o *operation) runWorkflow(ctx workflow.Context, controller string, w contract.Workflow) error {
	what := cmp.Or(w.Kind, "workflow") + " " + w.Name
	o.progress.Phase = what
	id := cmp.Or(w.ID, workflow.GetInfo(ctx).WorkflowExecution.ID+"/hook/"+w.Name)
	o.progress.Hooks = append(o.progress.Hooks, lifecycle.HookRun{Name: w.Name, Kind: w.Kind, Controller: controller,
		Type: w.Type, WorkflowID: id, State: hookRunning})
	run := &o.progress.Hooks[len(o.progress.Hooks)-1]
	opts := workflow.ChildWorkflowOptions{
		WorkflowID: id, TaskQueue: w.TaskQueue,
		WorkflowExecutionTimeout: w.ExecutionTimeout, WorkflowRunTimeout: w.RunTimeout, WorkflowTaskTimeout: w.TaskTimeout,
		WorkflowIDReusePolicy: enumspb.WorkflowIdReusePolicy(w.IDReusePolicy), RetryPolicy: retryOf(w.Retry),
		TypedSearchAttributes: lifecycle.SearchAttributes(o.in.Target, cmp.Or(w.Kind, "hook")),
		StaticSummary:         fmt.Sprintf("%s of %s, %s context %s", what, o.in.Target, o.progress.Op, o.in.ContextID),
		ParentClosePolicy:     enumspb.PARENT_CLOSE_POLICY_REQUEST_CANCEL,
	}
	// A blocking hook is cancelled with the operation, or by cancel on a timeout; one that
	// does not block outlives a stop and the operation itself (cancelling its context
	// would cancel it: cancel is then a no-op).
	cctx, cancel := workflow.WithCancel(ctx)
	if !w.Blocking {
		cctx, _ = workflow.NewDisconnectedContext(ctx)
		cancel = func() {}
		opts.ParentClosePolicy = enumspb.PARENT_CLOSE_POLICY_ABANDON
	}
	// Users' workers hold no key of temco's payload codec.
	cctx = workflow.WithDataConverter(workflow.WithChildOptions(cctx, opts), converter.GetDefaultDataConverter())
	var args []any
	if len(w.Arg) > 0 {
		args = append(args, w.Arg)
	}
	child := workflow.ExecuteChildWorkflow(cctx, w.Type, args...)
	var exec workflow.Execution
	if err := child.GetChildWorkflowExecution().Get(ctx, &exec); err != nil {
		run.State, run.Error = hookFailed, lifecycle.ErrorMessage(err)
		return fmt.Errorf("%s: workflow %s did not start: %w", what, id, err)
	}
	run.RunID = exec.RunID
	if !w.Blocking {
		run.State = hookStarted
		return nil
	}
	var err error
	timedOut := false
	if w.Timeout > 0 {
		tctx, stopTimer := workflow.WithCancel(ctx)
		sel := workflow.NewSelector(ctx)
		sel.AddFuture(child, func(f workflow.Future) { err = f.Get(ctx, nil) })
		sel.AddFuture(workflow.NewTimer(tctx, w.Timeout), func(workflow.Future) { timedOut = true })
		sel.Select(ctx)
		stopTimer()
	} else {
		err = child.Get(ctx, nil)
	}
	switch {
	case ctx.Err() != nil:
		run.State = hookCancelled
		return ctx.Err()
	case timedOut:
		cancel()
		run.State, run.Error = hookTimedOut, fmt.Sprintf("did not finish within %s", w.Timeout)
		return temporal.NewNonRetryableApplicationError(fmt.Sprintf("%s (workflow %s, run %s) did not finish within %s",
			what, id, exec.RunID, w.Timeout), lifecycle.ErrHookFailed, nil)
	case err != nil:
		run.State, run.Error = hookFailed, lifecycle.ErrorMessage(err)
		return temporal.NewNonRetryableApplicationError(fmt.Sprintf("%s (workflow %s, run %s) failed: %s",
			what, id, exec.RunID, lifecycle.ErrorMessage(err)), lifecycle.ErrHookFailed, nil)
	}
	run.State = hookCompleted
	return nil
}

func retryOf(p *contract.RetryPolicy) *temporal.RetryPolicy {
	if p == nil {
		return nil
	}
	return &temporal.RetryPolicy{InitialInterval: p.InitialInterval, BackoffCoefficient: p.BackoffCoefficient,
		MaximumInterval: p.MaximumInterval, MaximumAttempts: p.MaximumAttempts, NonRetryableErrorTypes: slices.Clone(p.NonRetryableErrorTypes)}
}
