// Package dig holds the DIG lifecycle workflow: one per deployment intent group, started
// on demand by the API with UpdateWithStart, that accepts lifecycle operations as
// Workflow Updates and runs them one at a time as child workflows.
//
// Why an entity workflow: "one operation per DIG at a time" must hold across API replicas
// and restarts. The workflow id is the DIG, so Temporal guarantees a single instance; the
// update validator refuses a second operation while one runs (the API answers 409), and
// terminate preempts a running instantiate by cancelling it. No lock lives in memory or
// in the database. When no operation has been asked for a while, the workflow completes;
// the next operation starts it again.
package dig

import (
	"fmt"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/temco/temco/internal/core/lifecycle"
	"github.com/temco/temco/workflows/localfirst"
)

// IdleTimeout is how long the workflow waits for another operation before completing.
const IdleTimeout = 10 * time.Minute

// running is the operation in progress.
type running struct {
	op, contextID, workflowID string
	child                     workflow.ChildWorkflowFuture
	cancel                    workflow.CancelFunc
}

type digWorkflow struct {
	dig      lifecycle.Target
	starting string // operation whose handler is setting it up
	current  *running
}

// Lifecycle is the DIG lifecycle workflow.
func Lifecycle(ctx workflow.Context, in lifecycle.TargetInput) error {
	w := &digWorkflow{dig: in.Target}
	if err := workflow.SetUpdateHandlerWithOptions(ctx, lifecycle.UpdateOperate, w.operate,
		workflow.UpdateHandlerOptions{Validator: w.validate}); err != nil {
		return err
	}
	if err := w.setUpMigrate(ctx); err != nil {
		return err
	}
	for {
		active, err := workflow.AwaitWithTimeout(ctx, IdleTimeout, func() bool { return w.current != nil })
		if err != nil {
			return err
		}
		if !active {
			if w.starting == "" && workflow.AllHandlersFinished(ctx) {
				return nil
			}
			continue
		}
		if err := workflow.Await(ctx, func() bool { return w.current == nil }); err != nil {
			return err
		}
		if workflow.GetInfo(ctx).GetContinueAsNewSuggested() {
			if err := workflow.Await(ctx, func() bool { return workflow.AllHandlersFinished(ctx) }); err != nil {
				return err
			}
			return workflow.NewContinueAsNewError(ctx, Lifecycle, in)
		}
	}
}

// busy names what is running or starting ("" when idle).
func (w *digWorkflow) busy() string {
	if w.starting != "" {
		return w.starting
	}
	if w.current != nil {
		return w.current.op
	}
	return ""
}

// validate refuses an operation that would interleave with the running one; terminate
// may preempt anything but another terminate or a migrate (whose objects are both DIGs'
// until it ends), stop needs something to stop.
func (w *digWorkflow) validate(req lifecycle.OpRequest) error {
	busy := w.busy()
	switch req.Op {
	case lifecycle.OpInstantiate, lifecycle.OpUpdate, lifecycle.OpRollback:
		if busy != "" {
			return w.busyErr(req.Op, busy)
		}
	case lifecycle.OpTerminate:
		if busy == lifecycle.OpTerminate || busy == lifecycle.OpMigrate {
			return w.busyErr(req.Op, busy)
		}
	case lifecycle.OpStop:
		if w.current == nil {
			return temporal.NewApplicationError(fmt.Sprintf("%s has no running operation to stop", w.dig), lifecycle.ErrInvalidState)
		}
	default:
		return temporal.NewApplicationError("unknown operation "+req.Op, lifecycle.ErrInvalidInput)
	}
	return nil
}

func (w *digWorkflow) busyErr(op, busy string) error {
	id := ""
	if w.current != nil {
		id = " (workflow " + w.current.workflowID + ")"
	}
	return temporal.NewApplicationError(fmt.Sprintf("%s cannot %s: %s is running%s", w.dig, op, busy, id), lifecycle.ErrBusy)
}

// operate runs an accepted operation up to the start of its workflow.
func (w *digWorkflow) operate(ctx workflow.Context, req lifecycle.OpRequest) (lifecycle.OpAccepted, error) {
	if req.Op == lifecycle.OpStop {
		cur := w.current
		if cur == nil {
			return lifecycle.OpAccepted{}, temporal.NewApplicationError(fmt.Sprintf("%s has no running operation to stop", w.dig), lifecycle.ErrInvalidState)
		}
		var err error
		if cur.child != nil {
			err = cur.child.SignalChildWorkflow(ctx, lifecycle.SignalStop, nil).Get(ctx, nil)
		} else { // held by a migrate into another DIG: stop that
			err = workflow.SignalExternalWorkflow(ctx, cur.workflowID, "", lifecycle.SignalStop, nil).Get(ctx, nil)
		}
		return lifecycle.OpAccepted{Op: req.Op, ContextID: cur.contextID, WorkflowID: cur.workflowID}, err
	}
	w.starting = req.Op
	defer func() { w.starting = "" }()
	if req.Op == lifecycle.OpTerminate && w.current != nil {
		w.current.cancel() // the running operation cleans up and ends
		if err := workflow.Await(ctx, func() bool { return w.current == nil }); err != nil {
			return lifecycle.OpAccepted{}, err
		}
	}
	var begun lifecycle.BeginResult
	in := lifecycle.BeginInput{Target: w.dig, Op: req.Op, ContextID: req.ContextID, Revision: req.Revision}
	retry := &temporal.RetryPolicy{MaximumInterval: 10 * time.Second,
		NonRetryableErrorTypes: []string{lifecycle.ErrInvalidState, lifecycle.ErrInvalidInput}}
	var err error
	// Version gate "local-begin": versions 1 (2026-11-23) and 2 recorded the transition as
	// a local activity, in the workflow task that accepted the update, sparing a round
	// trip. But an update's acceptance is durable only once that task completes: a
	// Temporal server that died before then lost the update after the begin had written
	// the store, leaving a transition no workflow runs (found by make chaos). Since
	// version 3 (2026-11-29) the begin is a regular activity again: its scheduling is
	// persisted with the acceptance, so it runs only for an accepted update.
	switch workflow.GetVersion(ctx, "local-begin", workflow.DefaultVersion, 3) {
	case 2:
		err = localfirst.Execute(ctx, time.Minute, retry, lifecycle.BeginOperation, in, &begun)
	case 1:
		err = lifecycle.BeginOperation.ExecuteLocal(workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{
			StartToCloseTimeout: time.Minute, RetryPolicy: retry}), in).Get(ctx, &begun)
	default: // 3, and the histories from before the gate
		err = lifecycle.BeginOperation.Execute(workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
			StartToCloseTimeout: time.Minute, RetryPolicy: retry}), in).Get(ctx, &begun)
	}
	if err != nil {
		return lifecycle.OpAccepted{}, err
	}
	return w.start(ctx, req.Op, begun)
}

// workflowOf is each operation's child workflow, but migrate's (migrate.go launches it).
var workflowOf = map[string]lifecycle.Workflow[lifecycle.OpInput, lifecycle.None]{
	lifecycle.OpInstantiate: lifecycle.ChildInstantiate,
	lifecycle.OpTerminate:   lifecycle.ChildTerminate,
	lifecycle.OpUpdate:      lifecycle.ChildUpdate,
	lifecycle.OpRollback:    lifecycle.ChildRollback,
}

// start launches the operation's child workflow and returns once it runs.
func (w *digWorkflow) start(ctx workflow.Context, op string, begun lifecycle.BeginResult) (lifecycle.OpAccepted, error) {
	return launch(ctx, w, op, begun, workflowOf[op], lifecycle.OpInput{Target: w.dig, ContextID: begun.ContextID,
		Previous: begun.Previous, Source: begun.Source, Leftovers: begun.Leftovers},
		fmt.Sprintf("%s %s, context %s", op, w.dig, begun.ContextID))
}

// launch starts op's child workflow, child with input in, and returns once it runs.
func launch[In any](ctx workflow.Context, w *digWorkflow, op string, begun lifecycle.BeginResult,
	child lifecycle.Workflow[In, lifecycle.None], in In, summary string) (lifecycle.OpAccepted, error) {
	id := w.dig.OpWorkflowID(op, begun.ContextID)
	cctx, cancel := workflow.WithCancel(ctx)
	cctx = workflow.WithChildOptions(cctx, workflow.ChildWorkflowOptions{
		WorkflowID:            id,
		WorkflowTaskTimeout:   lifecycle.TaskTimeout,
		TypedSearchAttributes: lifecycle.SearchAttributes(w.dig, op),
		StaticSummary:         summary,
		WaitForCancellation:   true, // terminate waits for the instantiate's cleanup
	})
	started := child.ExecuteChild(cctx, in)
	if err := started.GetChildWorkflowExecution().Get(ctx, nil); err != nil {
		cancel()
		return lifecycle.OpAccepted{}, err
	}
	w.current = &running{op: op, contextID: begun.ContextID, workflowID: id, child: started.ChildWorkflowFuture,
		cancel: cancel}
	workflow.Go(ctx, func(ctx workflow.Context) {
		_ = started.Get(ctx, nil) // the outcome is recorded by the operation itself
		w.current = nil
	})
	return lifecycle.OpAccepted{Op: op, ContextID: begun.ContextID, Revision: begun.Revision, WorkflowID: id}, nil
}
