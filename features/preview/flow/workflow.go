// Package flow holds the PreviewRollout workflow: what a DIG's next operation would
// change, cluster by cluster and stage by stage, answered before anything runs. It builds
// the operation's context as a scratch context with the operations' own activities
// (render and placement, the controllers, or a rollback's copy), compares it with the
// running revision (DiffPreview) and always deletes it. It records no state and touches
// no cluster. Workflow code only: the activities do the I/O.
package flow

import (
	"cmp"
	"errors"
	"fmt"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/temco/temco/contract"
	"github.com/temco/temco/internal/core/lifecycle"
	"github.com/temco/temco/workflows/artifact"
)

// PreviewRollout answers what the DIG's next operation (in.Revision set: a rollback to
// it) would add, change and remove on each cluster, in the stages of its rollout
// strategy. The scratch context in.ContextID is deleted however the preview ends.
func PreviewRollout(ctx workflow.Context, in PreviewInput) (out RolloutPreview, err error) {
	// Deferred before anything is created: a preview that fails half-way, or is cancelled,
	// leaves nothing behind.
	defer func() {
		dctx, _ := workflow.NewDisconnectedContext(ctx)
		if derr := DeletePreview.Execute(cleaning(dctx), in.ContextID).Get(dctx, nil); derr != nil {
			workflow.GetLogger(ctx).Error("scratch context of a preview not deleted", "context", in.ContextID, "error", derr)
			err = cmp.Or(err, derr)
		}
	}()
	var start PreviewStart
	if err := BeginPreview.Execute(quick(ctx), in).Get(ctx, &start); err != nil {
		return out, err
	}
	plan, notes, err := prepare(ctx, in, start)
	if err != nil {
		return out, err
	}
	diff := PreviewDiffInput{DIG: in.DIG, ContextID: in.ContextID, Start: start, Plan: plan, Limit: in.Limit}
	if err := DiffPreview.Execute(preparing(ctx), diff).Get(ctx, &out); err != nil {
		return out, err
	}
	out.Notes = append(notes, out.Notes...)
	out.WorkflowID = workflow.GetInfo(ctx).WorkflowExecution.ID
	return out, nil
}

// prepare makes the scratch context what the operation's context would be: a copy of
// the stored revision for a rollback; otherwise the apps rendered and placed, then edited
// by the controllers the preview may run, their edits committed.
func prepare(ctx workflow.Context, in PreviewInput, start PreviewStart) (lifecycle.Plan, []string, error) {
	var plan lifecycle.Plan
	if start.Source != "" {
		err := lifecycle.CopyContext.Execute(preparing(ctx),
			lifecycle.CopyInput{From: start.Source, To: in.ContextID}).Get(ctx, &plan)
		return plan, nil, err
	}
	ref := lifecycle.ContextRef{Target: in.DIG, ContextID: in.ContextID}
	var pin bool
	if err := renderAndPlace(ctx, ref, &plan, &pin); err != nil {
		return plan, nil, err
	}
	if len(plan.Controllers) == 0 {
		return plan, nil, finish(ctx, ref, pin)
	}
	var chosen PreviewChoice
	if err := PreviewControllers.Execute(quick(ctx), plan.Controllers).Get(ctx, &chosen); err != nil {
		return plan, nil, err
	}
	notes := chosen.Notes
	for _, s := range chosen.Run {
		c := s.Controller
		input := contract.Input{Project: in.DIG.Project, CompositeApp: in.DIG.CompositeApp, CompositeAppVersion: in.DIG.Version,
			DeploymentIntentGroup: in.DIG.DIG, Controller: c.Name, Parent: c.Parent, Type: c.Type, Intent: c.Intent,
			ContextID: in.ContextID, PreviousContextID: start.Previous, Operation: start.Op, Step: s.Step, Hook: contract.HookRun}
		var res contract.Result
		actx := controlling(ctx, lifecycle.ControllerActivityID(s.Step, c.Name))
		if err := lifecycle.RunController.Execute(actx, input).Get(ctx, &res); err != nil {
			return plan, notes, naming("controller "+c.Name, err)
		}
		if n := len(res.Workflows); n > 0 {
			notes = append(notes, fmt.Sprintf("controller %q asked for %d workflow(s), which a preview does not start", c.Name, n))
		}
	}
	if err := lifecycle.CommitControllers.Execute(preparing(ctx), ref).Get(ctx, &plan); err != nil {
		return plan, notes, err
	}
	return plan, notes, finish(ctx, ref, pin)
}

// finish renders the charts that read .Capabilities again for their clusters, then pins
// the images when the DIG does, as the operation would.
func finish(ctx workflow.Context, ref lifecycle.ContextRef, pinImages bool) error {
	if err := renderVariants(ctx, ref); err != nil || !pinImages {
		return err
	}
	return artifact.Pin(ctx, ref)
}

// renderAndPlace renders the apps and places them, as the operation would: the charts
// that come by reference pinned and fetched first. Version gate (2026-11-28): previews
// started before render at once.
func renderAndPlace(ctx workflow.Context, ref lifecycle.ContextRef, plan *lifecycle.Plan, pinImages *bool) error {
	if workflow.GetVersion(ctx, "artifacts", workflow.DefaultVersion, 1) == workflow.DefaultVersion {
		rendered := lifecycle.RenderApps.Execute(preparing(ctx), ref)
		placed := lifecycle.PlaceApps.Execute(preparing(ctx), ref)
		return cmp.Or(rendered.Get(ctx, nil), placed.Get(ctx, plan))
	}
	placed := lifecycle.PlaceApps.Execute(preparing(ctx), ref)
	pin, err := artifact.Fetch(ctx, ref)
	if err == nil {
		err = lifecycle.RenderApps.Execute(preparing(ctx), ref).Get(ctx, nil)
	}
	*pinImages = pin
	return cmp.Or(err, placed.Get(ctx, plan))
}

// renderVariants renders the charts that read .Capabilities for their clusters, as the
// operation would. Version gate (2026-11-27): previews started before do not.
func renderVariants(ctx workflow.Context, ref lifecycle.ContextRef) error {
	if workflow.GetVersion(ctx, "render-variants", workflow.DefaultVersion, 1) == workflow.DefaultVersion {
		return nil
	}
	return lifecycle.RenderVariants.Execute(preparing(ctx), ref).Get(ctx, nil)
}

// naming prefixes an error with what failed, keeping its type for the api: a refusal
// stays a refusal (409).
func naming(what string, err error) error {
	var appErr *temporal.ApplicationError
	if errors.As(err, &appErr) {
		return temporal.NewNonRetryableApplicationError(what+": "+appErr.Message(), appErr.Type(), nil)
	}
	return fmt.Errorf("%s: %w", what, err)
}

// A preview answers a waiting request: transient failures are retried a few times, not
// for ever, so that it ends (and deletes its scratch context) soon after the request gave up.
var retryAFewTimes = &temporal.RetryPolicy{
	InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: 10 * time.Second, MaximumAttempts: 5,
	NonRetryableErrorTypes: []string{lifecycle.ErrInvalidInput, lifecycle.ErrInvalidState, lifecycle.ErrBusy},
}

// quick is for store-only steps.
func quick(ctx workflow.Context) workflow.Context {
	return workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: time.Minute, RetryPolicy: retryAFewTimes})
}

// preparing is for rendering, placement, the copy of a revision and the comparison.
func preparing(ctx workflow.Context) workflow.Context {
	return workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: 5 * time.Minute,
		HeartbeatTimeout: 30 * time.Second, RetryPolicy: retryAFewTimes}) // the worker heartbeats for them (keepAlive)
}

// controlling is for a built-in controller's Run, which heartbeats.
func controlling(ctx workflow.Context, id string) workflow.Context {
	return workflow.WithActivityOptions(ctx, workflow.ActivityOptions{ActivityID: id,
		StartToCloseTimeout: 5 * time.Minute, HeartbeatTimeout: 30 * time.Second, RetryPolicy: retryAFewTimes})
}

// cleaning deletes the scratch context: retried for longer, it is the one write that
// must happen.
func cleaning(ctx workflow.Context) workflow.Context {
	return workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: time.Minute,
		RetryPolicy: &temporal.RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: 30 * time.Second,
			MaximumAttempts: 30, NonRetryableErrorTypes: []string{lifecycle.ErrInvalidInput}}})
}
