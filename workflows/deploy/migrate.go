package deploy

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/temco/temco/contract"
	"github.com/temco/temco/internal/core/lifecycle"
	"github.com/temco/temco/workflows/localfirst"
)

// Migrate moves the running deployment of one DIG, the origin (in.Origin, its running
// context in.Previous), to another DIG of its composite app, the target (in.DIG), as
// EMCO's migrate does: the target's new context is rendered, placed and edited by the
// controllers from the target DIG, applied as an update of the origin's context (equal
// objects left alone), and then what only the origin had is deleted. The origin ends
// Migrated, the target Instantiated.
//
// Unlike EMCO, a migrate that fails is undone (a saga): the origin's context is applied
// again as an update of the target's (what the target changed comes back) and what only
// the target had is deleted; the target ends Approved with its context failed, the origin
// as it was. A stop ends the forward work and rolls back the same way; a second stop
// abandons the rollback too, leaving the target InstantiateStopped. A cancel (temporal
// workflow cancel) rolls back as a stop does.
func Migrate(ctx workflow.Context, in lifecycle.MigrateInput) error {
	m := &migration{operation: operation{in: in.OpInput}, origin: in.Origin}
	forward, back := m.setUp(ctx)
	err := m.forward(forward)
	if err == nil && !m.stopped && ctx.Err() == nil {
		return m.finish(ctx, lifecycle.MigrateDone, "")
	}
	reason := "stopped"
	if !m.stopped && ctx.Err() != nil {
		reason = "cancelled"
	} else if !m.stopped {
		reason = "failed: " + lifecycle.ErrorMessage(err)
	}
	rollbackErr := m.rollBack(back)
	switch {
	case m.abandoned:
		m.progress.Phase = "rollback stopped"
		return m.finish(ctx, lifecycle.MigrateStopped, "migrate "+reason+"; its rollback was stopped")
	case rollbackErr != nil:
		reason += "; rolled back, but " + lifecycle.ErrorMessage(rollbackErr)
	default:
		reason += "; rolled back"
	}
	m.progress.Phase = "rolled back"
	if ferr := m.finish(ctx, lifecycle.MigrateRolledBack, "migrate "+reason); ferr != nil {
		return ferr
	}
	if m.stopped {
		return nil // as a stopped operation: the DIGs' states tell
	}
	if ctx.Err() != nil {
		return temporal.NewCanceledError()
	}
	var appErr *temporal.ApplicationError
	typ := lifecycle.ErrApplyFailed
	if errors.As(err, &appErr) {
		typ = appErr.Type()
	}
	return temporal.NewNonRetryableApplicationError("migrate "+reason, typ, err)
}

// migration is the state of one Migrate run.
type migration struct {
	operation
	origin    lifecycle.Target
	plan      lifecycle.Plan // the target's, once prepared
	touched   bool           // the target's apply has begun: clusters may have changed
	abandoned bool           // a second stop ended the rollback
}

// setUp registers the progress query, the retry reports and the stop signal, and returns
// the context of the forward work (the first stop cancels it) and of the rollback
// (disconnected, so that it also runs after a cancel; a second stop cancels it).
func (m *migration) setUp(ctx workflow.Context) (forward, back workflow.Context) {
	m.gates = newGates(ctx)
	m.progress = lifecycle.Progress{Op: lifecycle.OpMigrate, ContextID: m.in.ContextID, Phase: "starting"}
	m.retrying = retryList{}
	_ = workflow.SetQueryHandler(ctx, lifecycle.QueryProgress, func() (lifecycle.Progress, error) {
		p := m.progress
		p.Retrying = m.retrying.sorted()
		p.Hooks = slices.Clone(p.Hooks)
		return p, nil
	})
	onRetryReports(ctx, func(_ workflow.Context, r lifecycle.ClusterRetry) { m.retrying.note(r) })
	forward, stopForward := workflow.WithCancel(ctx)
	m.stop = stopForward
	disconnected, _ := workflow.NewDisconnectedContext(ctx)
	back, stopBack := workflow.WithCancel(disconnected)
	stop := workflow.GetSignalChannel(ctx, lifecycle.SignalStop)
	workflow.Go(ctx, func(ctx workflow.Context) {
		stop.Receive(ctx, nil)
		m.stopped, m.progress.Stopped = true, true
		stopForward()
		stop.Receive(ctx, nil)
		m.abandoned = true
		stopBack()
	})
	return forward, back
}

// forward builds the target's context, applies it over the origin's and deletes what
// only the origin had; then the workflows controllers asked for after the apply run and
// the controllers hear that it finished, as after an update.
func (m *migration) forward(ctx workflow.Context) error {
	plan, err := m.prepare(ctx)
	if err != nil {
		return err
	}
	m.plan, m.touched = plan, true
	if err := m.apply(ctx, plan); err != nil {
		return err
	}
	m.progress.Phase = "delete what only the origin has"
	res, err := m.fanContext(ctx, m.in.Previous, fan{kind: pruneBatch, prefix: "prune",
		in: lifecycle.BatchInput{ContextID: m.in.Previous, Next: m.in.ContextID}})
	if err != nil {
		return err
	}
	if res.Failed > 0 {
		return temporal.NewNonRetryableApplicationError(fmt.Sprintf("%d objects only the origin has could not be deleted", res.Failed),
			lifecycle.ErrPruneFailed, nil)
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if err := m.runLater(ctx); err != nil { // workflows controllers asked for (tac's post-hooks)
		return err
	}
	return m.hook(ctx, contract.HookFinished, lifecycle.Hooked{Controllers: plan.Controllers, Steps: len(plan.Controllers)})
}

// rollBack puts the origin's objects back as they were and deletes what only the target
// has; nothing to do when the target's apply never began.
func (m *migration) rollBack(ctx workflow.Context) error {
	if !m.touched {
		return nil
	}
	m.progress.Phase = "roll back: apply the origin again"
	restored, err := m.fanContext(ctx, m.in.Previous, fan{kind: applyBatch, prefix: "restore",
		in: lifecycle.BatchInput{ContextID: m.in.Previous, Previous: m.in.ContextID}})
	if ctx.Err() != nil {
		return ctx.Err()
	}
	var problems []error
	if err != nil {
		problems = append(problems, err)
	} else if restored.Failed > 0 {
		problems = append(problems, fmt.Errorf("%d objects of the origin could not be applied again", restored.Failed))
	}
	// Even after a partial restore: objects only the target has would have no owner.
	m.progress.Phase = "roll back: delete what only the target has"
	withdrawn, err := m.fanContext(ctx, m.in.ContextID, fan{kind: pruneBatch, prefix: "withdraw",
		in: lifecycle.BatchInput{ContextID: m.in.ContextID, Next: m.in.Previous}})
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if err != nil {
		problems = append(problems, err)
	} else if withdrawn.Failed > 0 {
		problems = append(problems, fmt.Errorf("%d objects only the target has could not be deleted", withdrawn.Failed))
	}
	return errors.Join(problems...)
}

// fanContext fans f out over the batches of context ctxID.
func (m *migration) fanContext(ctx workflow.Context, ctxID string, f fan) (lifecycle.BatchResult, error) {
	if err := lifecycle.ContextBatches.Execute(bookkeeping(ctx), ctxID).Get(ctx, &f.batches); err != nil {
		return lifecycle.BatchResult{}, err
	}
	return m.fanOut(ctx, f)
}

// finish records the outcome in both DIGs, whatever happened to the workflow's context.
func (m *migration) finish(ctx workflow.Context, outcome, errMsg string) error {
	dctx, _ := workflow.NewDisconnectedContext(ctx)
	workflow.GetLogger(ctx).Info("operation ended", "op", lifecycle.OpMigrate, "context", m.in.ContextID, "origin", m.origin.ID(),
		"outcome", outcome, "error", errMsg)
	recordEnded(ctx, m.in.Target, lifecycle.OpMigrate, map[string]string{lifecycle.MigrateDone: lifecycle.OutcomeSucceeded,
		lifecycle.MigrateStopped: lifecycle.OutcomeStopped, lifecycle.MigrateRolledBack: lifecycle.OutcomeRolledBack}[outcome])
	in := lifecycle.MigrateFinish{MigrateBegin: lifecycle.MigrateBegin{DIG: m.in.Target, ContextID: m.in.ContextID,
		Origin: m.origin, OriginContext: m.in.Previous}, Outcome: outcome, Error: errMsg, Hooks: m.progress.Hooks}
	return localfirst.Execute(dctx, time.Minute, retryForever, lifecycle.FinishMigrate, in, nil)
}
