// Package flow holds the Relocate workflow: it moves one app of an instantiated DIG
// from one cluster to another with no downtime. The app is first placed on both clusters
// and the DIG updated; once every object of the app is Ready on the new cluster (read
// live), it is placed on the new cluster alone and the DIG updated again, which removes
// it from the old one.
//
// The move is made durable through the DIG itself, not beside it: each step rewrites the
// app's placement intent to name its clusters explicitly (allOf, by name) and runs an
// ordinary update of the DIG through its lifecycle workflow, so later updates keep the
// app where relocate put it, and the DIG's status, history and revisions show each step.
// A label or anyOf placement of the app becomes that explicit list. If the app does not
// come up on the new cluster (its update fails, or it is not Ready in time), the app's
// placement is put back as it was — the clusters it ran on — and the DIG updated again.
//
// Operators start it through a workflow intent (workflowmgr): workflowClientName
// "Relocate", TaskQueue temco's, and workflowParams.activityParams.relocate naming the
// move. Its query "step" answers where it is.
package flow

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/temco/temco/internal/core/lifecycle"
)

// Input is what a workflow intent starts Relocate with: its workflowParams, EMCO's
// {activityOptions, activityParams}. The move is activityParams.relocate: project,
// compositeApp, compositeAppVersion, deploymentIntentGroup, app, from and to
// ("provider+cluster"), and optionally readyTimeout (a Go duration, default 10m).
type Input struct {
	ActivityOptions map[string]any               `json:"activityOptions,omitempty"`
	ActivityParams  map[string]map[string]string `json:"activityParams"`
}

// ParamsKey names the activityParams entry of a relocation (in lifecycle, beside
// WorkflowRelocate, for workflowmgr, which binds it to its intent's DIG).
const ParamsKey = lifecycle.RelocateParamsKey

// DefaultReadyTimeout bounds the wait for the app to be Ready on the new cluster.
const DefaultReadyTimeout = 10 * time.Minute

// The steps the query "step" answers.
const (
	StepCheck      = "check"       // where the app runs now
	StepAdd        = "add"         // placed on the new cluster too, the DIG updated
	StepAwaitReady = "await-ready" // every object of the app Ready on the new cluster
	StepRemove     = "remove"      // placed on the new cluster alone, the DIG updated
	StepRollBack   = "roll-back"   // placed back where it was, the DIG updated
	StepDone       = "done"
	StepFailed     = "failed"
)

// Progress answers the query "step", and is the workflow's result.
type Progress struct {
	Step    string          `json:"step"`
	Detail  string          `json:"detail"`
	Request RelocateRequest `json:"request"`
	// Updates are the workflows of the DIG updates run so far.
	Updates []string `json:"updates,omitempty"`
}

// Relocate moves the app the input names; see the package comment.
func Relocate(ctx workflow.Context, in Input) (Progress, error) {
	r := &relocation{progress: Progress{Step: StepCheck, Detail: "reading the input"}}
	if err := workflow.SetQueryHandler(ctx, QueryStep, func() (Progress, error) {
		p := r.progress
		p.Updates = slices.Clone(p.Updates)
		return p, nil
	}); err != nil {
		return r.progress, err
	}
	req, timeout, err := ParseInput(in)
	if err != nil {
		return r.fail(err)
	}
	r.progress.Request = req
	if err := workflow.UpsertTypedSearchAttributes(ctx, lifecycle.SearchAttributes(req.DIG, "relocate").Copy()); err != nil {
		return r.fail(err)
	}
	return r.run(ctx, req, timeout)
}

type relocation struct {
	progress Progress
}

func (r *relocation) at(step, format string, args ...any) {
	r.progress.Step, r.progress.Detail = step, fmt.Sprintf(format, args...)
}

func (r *relocation) fail(err error) (Progress, error) {
	r.at(StepFailed, "%s", lifecycle.ErrorMessage(err))
	return r.progress, err
}

func (r *relocation) run(ctx workflow.Context, req RelocateRequest, timeout time.Duration) (Progress, error) {
	r.at(StepCheck, "where %s runs in %s", req.App, req.DIG)
	var plan RelocationPlan
	if err := PlanRelocation.Execute(briefly(ctx), req).Get(ctx, &plan); err != nil {
		return r.fail(err)
	}
	if !slices.Contains(plan.Clusters, req.From) && slices.Contains(plan.Clusters, req.To) {
		r.at(StepDone, "%s already runs on %s and not on %s", req.App, req.To, req.From)
		return r.progress, nil
	}
	both, final, err := Placements(plan.Clusters, req.From, req.To)
	if err != nil {
		return r.fail(temporal.NewNonRetryableApplicationError(err.Error(), lifecycle.ErrInvalidInput, nil))
	}

	r.at(StepAdd, "placing %s on %v", req.App, both)
	added, err := r.place(ctx, req, both)
	if err == nil {
		r.at(StepAwaitReady, "waiting until %s is Ready on %s", req.App, req.To)
		err = AwaitAppReady.Execute(waiting(ctx, timeout), AwaitAppReadyInput{
			DIG: req.DIG, ContextID: added, App: req.App, Cluster: req.To, Timeout: timeout}).Get(ctx, nil)
	}
	if err != nil {
		return r.rollBack(ctx, req, plan.Clusters, err)
	}

	r.at(StepRemove, "placing %s on %v, removing it from %s", req.App, final, req.From)
	if _, err := r.place(ctx, req, final); err != nil {
		// The app runs, Ready, on the new cluster: nothing to undo; the DIG's status says
		// what the update could not do on the old one.
		return r.fail(failure(err, "%s is Ready on %s, but its removal from %s failed: %s", req.App, req.To, req.From, lifecycle.ErrorMessage(err)))
	}
	r.at(StepDone, "%s moved from %s to %s", req.App, req.From, req.To)
	return r.progress, nil
}

// place pins the app to clusters and updates the DIG; it returns the new context.
func (r *relocation) place(ctx workflow.Context, req RelocateRequest, clusters []string) (string, error) {
	err := PlaceApp.Execute(briefly(ctx),
		PlaceAppInput{DIG: req.DIG, App: req.App, Clusters: clusters}).Get(ctx, nil)
	if err != nil {
		return "", err
	}
	ctxID := lifecycle.DrawContextID(ctx)
	r.progress.Updates = append(r.progress.Updates, req.DIG.OpWorkflowID(lifecycle.OpUpdate, ctxID))
	err = lifecycle.UpdateDIG.Execute(updating(ctx),
		lifecycle.UpdateDIGInput{DIG: req.DIG, ContextID: ctxID}).Get(ctx, nil)
	return ctxID, err
}

// rollBack places the app back on the clusters it ran on (also after a cancel) and fails
// with cause.
func (r *relocation) rollBack(ctx workflow.Context, req RelocateRequest, clusters []string, cause error) (Progress, error) {
	dctx, _ := workflow.NewDisconnectedContext(ctx)
	r.at(StepRollBack, "%s did not come up on %s (%s): placing it back on %v", req.App, req.To, lifecycle.ErrorMessage(cause), clusters)
	if _, err := r.place(dctx, req, clusters); err != nil {
		return r.fail(failure(cause, "%s; placing it back on %v failed too: %s", lifecycle.ErrorMessage(cause), clusters, lifecycle.ErrorMessage(err)))
	}
	if ctx.Err() != nil {
		r.at(StepFailed, "cancelled; %s placed back on %v", req.App, clusters)
		return r.progress, temporal.NewCanceledError()
	}
	return r.fail(failure(cause, "%s; %s placed back on %v", lifecycle.ErrorMessage(cause), req.App, clusters))
}

// failure is the workflow's error: the message given, with the type of cause (what
// failed: ApplyFailed, NotReady, ...).
func failure(cause error, format string, args ...any) error {
	typ := lifecycle.ErrApplyFailed
	var appErr *temporal.ApplicationError
	if errors.As(cause, &appErr) {
		typ = appErr.Type()
	}
	return temporal.NewNonRetryableApplicationError(fmt.Sprintf(format, args...), typ, nil)
}

// ParseInput reads the move from a workflow intent's workflowParams; a problem is a
// non-retryable InvalidInput naming the parameter.
func ParseInput(in Input) (RelocateRequest, time.Duration, error) {
	invalid := func(format string, args ...any) error {
		return temporal.NewNonRetryableApplicationError(fmt.Sprintf(format, args...), lifecycle.ErrInvalidInput, nil)
	}
	p, ok := in.ActivityParams[ParamsKey]
	if !ok {
		return RelocateRequest{}, 0, invalid("workflowParams.activityParams.%s is missing: it names the DIG, the app, from and to", ParamsKey)
	}
	var missing []string
	for _, k := range []string{"project", "compositeApp", "compositeAppVersion", "deploymentIntentGroup", "app", "from", "to"} {
		if p[k] == "" {
			missing = append(missing, k)
		}
	}
	if len(missing) > 0 {
		return RelocateRequest{}, 0, invalid("workflowParams.activityParams.%s lacks %v", ParamsKey, missing)
	}
	req := RelocateRequest{App: p["app"], From: p["from"], To: p["to"], DIG: lifecycle.Target{Project: p["project"],
		CompositeApp: p["compositeApp"], Version: p["compositeAppVersion"], DIG: p["deploymentIntentGroup"]}}
	for _, k := range []string{"from", "to"} {
		if prov, cl := lifecycle.SplitClusterKey(p[k]); prov == "" || cl == "" {
			return req, 0, invalid("workflowParams.activityParams.%s.%s %q is not a cluster: write provider+cluster", ParamsKey, k, p[k])
		}
	}
	if req.From == req.To {
		return req, 0, invalid("workflowParams.activityParams.%s: from and to are both %s", ParamsKey, req.From)
	}
	timeout := DefaultReadyTimeout
	if s := p["readyTimeout"]; s != "" {
		d, err := time.ParseDuration(s)
		if err != nil || d <= 0 {
			return req, 0, invalid("workflowParams.activityParams.%s.readyTimeout %q is not a positive duration (e.g. 5m)", ParamsKey, s)
		}
		timeout = d
	}
	return req, timeout, nil
}

// Placements plans the two placements of a move from the clusters the app runs on: on
// both clusters, then on the new one instead of the old one. Both are sorted.
func Placements(clusters []string, from, to string) (both, final []string, err error) {
	if !slices.Contains(clusters, from) {
		return nil, nil, fmt.Errorf("the app does not run on %s (it runs on %v)", from, clusters)
	}
	if slices.Contains(clusters, to) {
		return nil, nil, fmt.Errorf("the app runs on %s already (and on %v)", to, clusters)
	}
	both = slices.Sorted(slices.Values(append(slices.Clone(clusters), to)))
	for _, c := range both {
		if c != from {
			final = append(final, c)
		}
	}
	return both, final, nil
}

// Failures no retry can fix.
var permanent = []string{lifecycle.ErrInvalidInput, lifecycle.ErrInvalidState, lifecycle.ErrApplyFailed, ErrNotReady}

// briefly is for the store-only steps.
func briefly(ctx workflow.Context) workflow.Context {
	return workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: time.Minute,
		RetryPolicy: &temporal.RetryPolicy{MaximumInterval: 30 * time.Second, NonRetryableErrorTypes: permanent}})
}

// updating is for a DIG update: it waits while another operation runs on the DIG, and
// for the update itself, heartbeating.
func updating(ctx workflow.Context) workflow.Context {
	return workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: 24 * time.Hour, HeartbeatTimeout: time.Minute,
		RetryPolicy: &temporal.RetryPolicy{MaximumInterval: 30 * time.Second, NonRetryableErrorTypes: permanent}})
}

// waiting is for the wait until Ready, bounded by timeout.
func waiting(ctx workflow.Context, timeout time.Duration) workflow.Context {
	return workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: timeout + 2*time.Minute,
		HeartbeatTimeout: time.Minute, RetryPolicy: &temporal.RetryPolicy{MaximumInterval: 30 * time.Second, NonRetryableErrorTypes: permanent}})
}
