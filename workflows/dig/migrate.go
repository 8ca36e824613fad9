package dig

import (
	"fmt"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/temco/temco/internal/core/lifecycle"
	"github.com/temco/temco/workflows/localfirst"
)

// A migrate involves two DIGs, and neither may run anything else meanwhile. The target's
// lifecycle workflow runs it, as one of its operations: the context it builds and
// deploys is the target's, and so are its status, search attributes and stop. Before it
// records anything, it holds the origin: the origin's lifecycle workflow, idle and in a
// state that allows a migrate, takes the migrate's workflow as its own running operation
// and waits for that workflow to end (AwaitHolder), refusing every other operation but a
// stop, which it passes on. The hold is asked through an activity (a workflow cannot send
// another an update); if the migrate then cannot start, the target releases the hold
// with a signal. Two DIGs migrating into each other at once cannot deadlock: a busy
// lifecycle workflow refuses a hold rather than waiting for it.

// setUpMigrate registers the handlers of a migrate into this DIG and of a hold of it.
func (w *digWorkflow) setUpMigrate(ctx workflow.Context) error {
	if err := workflow.SetUpdateHandlerWithOptions(ctx, lifecycle.UpdateMigrate, w.migrate,
		workflow.UpdateHandlerOptions{Validator: w.validateMigrate}); err != nil {
		return err
	}
	return workflow.SetUpdateHandlerWithOptions(ctx, lifecycle.UpdateHold, w.hold,
		workflow.UpdateHandlerOptions{Validator: w.validateHold})
}

func (w *digWorkflow) validateMigrate(req lifecycle.MigrateRequest) error {
	if req.Origin == w.dig {
		return temporal.NewApplicationError(fmt.Sprintf("%s cannot migrate to itself", w.dig), lifecycle.ErrInvalidInput)
	}
	if busy := w.busy(); busy != "" {
		return w.busyErr(lifecycle.OpMigrate, busy)
	}
	return nil
}

// migrate holds the origin, records the start of the migrate and starts its workflow.
func (w *digWorkflow) migrate(ctx workflow.Context, req lifecycle.MigrateRequest) (lifecycle.OpAccepted, error) {
	w.starting = lifecycle.OpMigrate
	defer func() { w.starting = "" }()
	id := w.dig.OpWorkflowID(lifecycle.OpMigrate, req.ContextID)
	actx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: time.Minute, RetryPolicy: beginRetry})
	var held lifecycle.OpAccepted
	err := lifecycle.HoldDIG.Execute(actx,
		lifecycle.HoldInput{DIG: req.Origin, HoldRequest: lifecycle.HoldRequest{Holder: id, HolderDIG: w.dig}}).Get(ctx, &held)
	if err != nil {
		return lifecycle.OpAccepted{}, err
	}
	var begun lifecycle.BeginResult
	err = lifecycle.BeginMigrate.Execute(actx, lifecycle.MigrateBegin{DIG: w.dig, ContextID: req.ContextID,
		Origin: req.Origin, OriginContext: held.ContextID}).Get(ctx, &begun)
	var acc lifecycle.OpAccepted
	if err == nil {
		in := lifecycle.MigrateInput{Origin: req.Origin, OpInput: lifecycle.OpInput{Target: w.dig, ContextID: begun.ContextID, Previous: begun.Previous}}
		acc, err = launch(ctx, w, lifecycle.OpMigrate, begun, lifecycle.ChildMigrate, in,
			fmt.Sprintf("migrate %s to %s, context %s", req.Origin, w.dig, begun.ContextID))
	}
	if err != nil {
		// The origin would otherwise wait HolderStartWait for a migrate that never starts.
		_ = workflow.SignalExternalWorkflow(ctx, req.Origin.WorkflowID(), "", lifecycle.SignalRelease, id).Get(ctx, nil)
		return lifecycle.OpAccepted{}, err
	}
	return acc, nil
}

// beginRetry retries the bookkeeping of an operation's start, but not its refusals.
var beginRetry = &temporal.RetryPolicy{MaximumInterval: 10 * time.Second,
	NonRetryableErrorTypes: []string{lifecycle.ErrInvalidState, lifecycle.ErrInvalidInput, lifecycle.ErrBusy}}

func (w *digWorkflow) validateHold(req lifecycle.HoldRequest) error {
	if w.current != nil && w.current.workflowID == req.Holder {
		return nil // a retried hold
	}
	if req.HolderDIG == w.dig {
		return temporal.NewApplicationError(fmt.Sprintf("%s cannot migrate to itself", w.dig), lifecycle.ErrInvalidInput)
	}
	if busy := w.busy(); busy != "" {
		return w.busyErr(lifecycle.OpMigrate, busy)
	}
	return nil
}

// hold checks that this DIG may migrate and makes the holder its running operation until
// the holder ends or releases it.
func (w *digWorkflow) hold(ctx workflow.Context, req lifecycle.HoldRequest) (lifecycle.OpAccepted, error) {
	if cur := w.current; cur != nil && cur.workflowID == req.Holder {
		return lifecycle.OpAccepted{Op: lifecycle.OpMigrate, ContextID: cur.contextID, WorkflowID: cur.workflowID}, nil
	}
	w.starting = lifecycle.OpMigrate
	defer func() { w.starting = "" }()
	var begun lifecycle.BeginResult
	err := localfirst.Execute(ctx, time.Minute, beginRetry, lifecycle.BeginHold,
		lifecycle.BeginInput{Target: w.dig, Op: lifecycle.OpMigrate}, &begun)
	if err != nil {
		return lifecycle.OpAccepted{}, err
	}
	hctx, release := workflow.WithCancel(ctx)
	held := &running{op: lifecycle.OpMigrate, contextID: begun.ContextID, workflowID: req.Holder, cancel: release}
	w.current = held
	workflow.Go(hctx, func(ctx workflow.Context) {
		w.awaitHolder(ctx, req.Holder)
		if w.current == held {
			w.current = nil
		}
	})
	return lifecycle.OpAccepted{Op: lifecycle.OpMigrate, ContextID: begun.ContextID, WorkflowID: req.Holder}, nil
}

// awaitHolder returns when the holder has ended or released the hold.
func (w *digWorkflow) awaitHolder(ctx workflow.Context, holder string) {
	actx, stopWaiting := workflow.WithCancel(ctx)
	defer stopWaiting()
	actx = workflow.WithActivityOptions(actx, workflow.ActivityOptions{
		StartToCloseTimeout: 365 * 24 * time.Hour, HeartbeatTimeout: time.Minute,
		RetryPolicy: &temporal.RetryPolicy{MaximumInterval: 10 * time.Second},
	})
	ended := false
	sel := workflow.NewSelector(ctx)
	sel.AddFuture(lifecycle.AwaitHolder.Execute(actx, holder).Future, func(workflow.Future) { ended = true })
	released := workflow.GetSignalChannel(ctx, lifecycle.SignalRelease)
	sel.AddReceive(released, func(c workflow.ReceiveChannel, _ bool) {
		var who string
		c.Receive(ctx, &who)
		ended = who == holder // a late release of an earlier hold is ignored
	})
	for !ended && ctx.Err() == nil {
		sel.Select(ctx)
	}
}
