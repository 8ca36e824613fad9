// Package artifact is the workflow side of the artifact pipeline: the charts a context's
// apps name by reference are pinned to digests, then the ones not stored yet fetched,
// verified and stored, each as its own activity (activities/artifact), before anything is
// rendered from them. Workflow code only.
package artifact

import (
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/temco/temco/internal/core/lifecycle"
)

// Fetch runs the pipeline for the context ref: every artifact pinned, then those not
// stored fetched at once. A registry or repository that fails is tried again with the
// deploy workflows' backoff until it answers or the operation is stopped; what cannot
// succeed (not found, refused, a digest that does not match) fails at once. It returns
// whether the DIG pins its images (Pin, once the context's objects are final).
func Fetch(ctx workflow.Context, ref lifecycle.ContextRef) (pinImages bool, err error) {
	var plan lifecycle.ArtifactPlan
	if err := lifecycle.ResolveArtifacts.Execute(options(ctx, 10*time.Minute), ref).Get(ctx, &plan); err != nil {
		return false, err
	}
	futures := make([]lifecycle.Future[lifecycle.None], len(plan.Fetch))
	for i, r := range plan.Fetch {
		actx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{ActivityID: "artifact/" + r.App,
			StartToCloseTimeout: 20 * time.Minute, HeartbeatTimeout: time.Minute, RetryPolicy: retry})
		futures[i] = lifecycle.FetchArtifact.Execute(actx, lifecycle.FetchInput{ContextRef: ref, Artifact: r})
	}
	for _, f := range futures {
		if ferr := f.Get(ctx, nil); ferr != nil && err == nil {
			err = ferr
		}
	}
	return plan.PinImages, err
}

// Pin resolves the images of the context's objects to digests and writes them so: every
// cluster of the revision gets the same bits, whatever a tag does later.
func Pin(ctx workflow.Context, ref lifecycle.ContextRef) error {
	return lifecycle.PinImages.Execute(options(ctx, 10*time.Minute), ref).Get(ctx, nil)
}

// retry is the deploy workflows' policy: capped exponential backoff, forever, but not
// for what the user configured wrong.
var retry = &temporal.RetryPolicy{
	InitialInterval:        lifecycle.RetryInitialInterval,
	BackoffCoefficient:     lifecycle.RetryBackoff,
	MaximumInterval:        lifecycle.RetryMaximumInterval,
	NonRetryableErrorTypes: []string{lifecycle.ErrInvalidInput, lifecycle.ErrInvalidState},
}

// options: the worker heartbeats for these activities (workers' keepAlive), so one on a
// worker that dies moves to another within a minute.
func options(ctx workflow.Context, timeout time.Duration) workflow.Context {
	return workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: timeout, HeartbeatTimeout: time.Minute, RetryPolicy: retry})
}
