package deploy

import (
	"cmp"
	"fmt"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/temco/temco/contract"
	"github.com/temco/temco/internal/core/lifecycle"
	"github.com/temco/temco/workflows/artifact"
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
	return o.conclude(ctx, o.instantiate(work), outcome{done: lifecycle.StatusInstantiated,
		failed: lifecycle.StatusInstantiateFailed, stopped: lifecycle.StatusInstantiateStopped, cancelled: "cancelled by terminate"})
}

func (o *operation) instantiate(ctx workflow.Context) error {
	plan, err := o.prepare(ctx)
	if err != nil {
		o.refused = true
		return err
	}
	if plan.Rollout != nil {
		err = o.roll(ctx, plan.Rollout, o.applyRange, o.deleteRange)
	} else {
		err = o.apply(ctx, plan)
	}
	if err != nil {
		return err
	}
	if err := o.runLater(ctx); err != nil {
		return err
	}
	return o.hook(ctx, contract.HookFinished, lifecycle.Hooked{Controllers: plan.Controllers, Steps: len(plan.Controllers)})
}

// prepare renders the apps, places them and runs the controllers: the new context is
// then complete in MongoDB.
func (o *operation) prepare(ctx workflow.Context) (lifecycle.Plan, error) {
	ref := lifecycle.ContextRef{Target: o.in.Target, ContextID: o.in.ContextID}
	// A logical cloud's objects, a cluster's networks and a certificate intent's requests
	// or certificates are built from their own resources.
	if prepare := o.in.Target.Kind().Prepare; prepare != nil {
		o.progress.Phase = "prepare"
		var plan lifecycle.Plan
		err := prepare(o.in.Target).Execute(preparing(ctx), ref).Get(ctx, &plan)
		o.progress.ClustersTotal = plan.Clusters
		return plan, err
	}
	plan, err := o.renderAndPlace(ctx, ref)
	if err != nil {
		return plan, err
	}
	o.progress.ClustersTotal = plan.Clusters
	if len(plan.Controllers) > 0 {
		if plan, err = o.control(ctx, ref, plan.Controllers); err != nil {
			return plan, err
		}
	}
	if o.release >= releaseVariants && (o.release < releaseRendersRead || o.readCapabilities > 0) {
		o.progress.Phase = "render for the clusters' capabilities"
		err = lifecycle.RenderVariants.Execute(preparing(ctx), ref).Get(ctx, nil)
	}
	if err == nil && o.pinImages {
		o.progress.Phase = "pin images"
		err = artifact.Pin(ctx, ref)
	}
	return plan, err
}

// control runs the controllers, each as its own activity (on its own task queue when
// external), then commits their edits: where the apps go and what they are. Only then is
// any cluster touched, so a failing controller leaves them all as they were. No history
// recorded before controllers existed has any, so this needs no version gate.
func (o *operation) control(ctx workflow.Context, ref lifecycle.ContextRef, ctrls []lifecycle.Controller) (lifecycle.Plan, error) {
	for step, c := range ctrls {
		o.progress.Phase = "controller " + c.Name
		actx := controlling(ctx, c, lifecycle.ControllerActivityID(step, c.Name))
		var res contract.Result
		if err := lifecycle.RunController.Execute(actx, o.controllerInput(c, step, contract.HookRun)).Get(ctx, &res); err != nil {
			return lifecycle.Plan{}, fmt.Errorf("controller %s: %w", c.Name, err)
		}
		if err := o.asked(ctx, c, res.Workflows); err != nil {
			return lifecycle.Plan{}, err
		}
	}
	o.progress.Phase = "commit controllers' edits"
	var plan lifecycle.Plan
	err := lifecycle.CommitControllers.Execute(preparing(ctx), ref).Get(ctx, &plan)
	o.progress.ClustersTotal = plan.Clusters
	plan.Controllers = ctrls // for their finished hooks
	return plan, err
}

func (o *operation) controllerInput(c lifecycle.Controller, step int, hook string) contract.Input {
	dig := o.in.Target
	return contract.Input{Project: dig.Project, CompositeApp: dig.CompositeApp, CompositeAppVersion: dig.Version,
		DeploymentIntentGroup: dig.DIG, Controller: c.Name, Parent: c.Parent, Type: c.Type, Intent: c.Intent, ContextID: o.in.ContextID,
		PreviousContextID: o.in.Previous, Operation: o.progress.Op, Step: step, Hook: hook}
}

// hook calls a hook of the context's controllers in order, each as its own activity: the
// terminate hook of action controllers (its error stops the operation), or the finished
// hook of all of them (tried for a few minutes; its error is logged, as EMCO ignores
// PostEvent's). Runs before releaseHooks call none.
func (o *operation) hook(ctx workflow.Context, hook string, h lifecycle.Hooked) error {
	if o.release < releaseHooks {
		return nil
	}
	for _, c := range h.Controllers {
		if hook == contract.HookTerminate && c.Type != contract.TypeAction {
			continue
		}
		o.progress.Phase = hook + " hook of controller " + c.Name
		actx := controlling(ctx, c, lifecycle.HookActivityID(hook, c.Name))
		if hook == contract.HookFinished {
			actx = observing(actx)
		}
		var res contract.Result
		err := lifecycle.RunController.Execute(actx, o.controllerInput(c, h.Steps, hook)).Get(ctx, &res)
		switch {
		case err == nil && hook == contract.HookTerminate:
			if err := o.asked(ctx, c, res.Workflows); err != nil {
				return err
			}
		case err == nil:
		case hook == contract.HookTerminate || ctx.Err() != nil:
			return fmt.Errorf("controller %s: %w", c.Name, err)
		default:
			workflow.GetLogger(ctx).Warn("a controller's finished hook failed", "controller", c.Name, "op", o.progress.Op,
				"context", o.in.ContextID, "error", lifecycle.ErrorMessage(err))
		}
	}
	return nil
}

// renderAndPlace renders the apps and places them. Version gate (2026-11-23): placement
// no longer needs the rendered objects (see appctx.List), so both run at once; histories
// recorded before run them one after the other. Rendering's error is reported first.
func (o *operation) renderAndPlace(ctx workflow.Context, ref lifecycle.ContextRef) (lifecycle.Plan, error) {
	var plan lifecycle.Plan
	if o.release >= releaseArtifacts {
		o.progress.Phase = "artifacts and placement"
		placed := lifecycle.PlaceApps.Execute(preparing(ctx), ref)
		pin, rerr := artifact.Fetch(ctx, ref)
		o.pinImages = pin
		if rerr == nil {
			o.progress.Phase = "render and placement"
			rerr = lifecycle.RenderApps.Execute(preparing(ctx), ref).Get(ctx, &o.readCapabilities)
		}
		return plan, cmp.Or(rerr, placed.Get(ctx, &plan))
	}
	if o.has(ctx, "placement-beside-render") {
		o.progress.Phase = "render and placement"
		rendered := lifecycle.RenderApps.Execute(preparing(ctx), ref)
		placed := lifecycle.PlaceApps.Execute(preparing(ctx), ref)
		rerr, perr := rendered.Get(ctx, nil), placed.Get(ctx, &plan)
		return plan, cmp.Or(rerr, perr)
	}
	o.progress.Phase = "render"
	if err := lifecycle.RenderApps.Execute(preparing(ctx), ref).Get(ctx, nil); err != nil {
		return plan, err
	}
	o.progress.Phase = "placement"
	return plan, lifecycle.PlaceApps.Execute(preparing(ctx), ref).Get(ctx, &plan)
}

// apply applies the context to its clusters (as a difference from o.in.Previous, if set).
func (o *operation) apply(ctx workflow.Context, plan lifecycle.Plan) error {
	o.progress.Phase = "apply"
	f := fan{kind: applyBatch, in: lifecycle.BatchInput{ContextID: o.in.ContextID, Previous: o.in.Previous},
		batches: plan.Batches}
	// Version gate (2026-11-22): a single batch's clusters come with the plan, sparing
	// the ListBatch activity; histories recorded before still look them up.
	if o.has(ctx, "plan-carries-single-batch") {
		f.first = plan.FirstBatch
	}
	res, err := o.fanOut(ctx, f)
	if err != nil {
		return err
	}
	o.progress.Phase = "done"
	if res.Failed > 0 {
		return temporal.NewNonRetryableApplicationError(fmt.Sprintf("%d resources failed to apply", res.Failed), lifecycle.ErrApplyFailed, nil)
	}
	return nil
}

// applyRange applies the context to a range of its batches (a rollout's stage), counting
// failed clusters instead of failing.
// Its agent clusters follow the rollout's offline policy.
func (o *operation) applyRange(ctx workflow.Context, first, n, window int) (lifecycle.BatchResult, error) {
	in := lifecycle.BatchInput{ContextID: o.in.ContextID, Previous: o.in.Previous, Tolerant: true}
	if o.rollout != nil {
		in.Offline = o.rollout.plan.Offline
	}
	return o.fanOut(ctx, fan{kind: applyBatch, batches: n, offset: first, window: window, in: in})
}

// deleteRange removes the context from a range of its batches: a failed first rollout
// takes back what it deployed.
func (o *operation) deleteRange(ctx workflow.Context, first, n, window int) (lifecycle.BatchResult, error) {
	return o.fanOut(ctx, fan{kind: deleteBatch, batches: n, offset: first, window: window, prefix: "undo",
		in: lifecycle.BatchInput{ContextID: o.in.ContextID, Tolerant: true}})
}
