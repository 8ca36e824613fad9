// Package localfirst runs a workflow's short store writes (recording a transition or an
// outcome) as local activities: in the workflow task that needs them, sparing a round
// trip through the server. A local activity's retries are not free, though: once its
// backoff outgrows the workflow task timeout, each retry costs the history a marker, a
// timer and a workflow task (about 17,000 events for a day of store outage, where the
// history limit is 51,200). So the local activity gets a few quick attempts, and a write
// the store keeps refusing becomes a regular activity, whose retries cost no events.
package localfirst

import (
	"errors"
	"slices"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/temco/temco/internal/core/lifecycle"
)

// Attempts is how often the local activity runs before the write becomes a regular
// activity: backoffs of 0.2, 0.4, 0.8 and 1.6 s, all within one workflow task.
const Attempts = 5

// Execute runs a with in, into out: locally first, then, if the local attempts end in a
// failure retry would retry, as a regular activity with retry. timeout bounds each
// attempt.
func Execute[In, Out any](ctx workflow.Context, timeout time.Duration, retry *temporal.RetryPolicy,
	a lifecycle.Activity[In, Out], in In, out *Out) error {
	local := *retry
	local.InitialInterval, local.BackoffCoefficient, local.MaximumInterval, local.MaximumAttempts = 200*time.Millisecond, 2, 0, Attempts
	lctx := workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{StartToCloseTimeout: timeout, RetryPolicy: &local})
	err := a.ExecuteLocal(lctx, in).Get(ctx, out)
	if err == nil || !retryable(err, retry) {
		return err
	}
	actx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: timeout, RetryPolicy: retry})
	return a.Execute(actx, in).Get(ctx, out)
}

// retryable reports whether policy would retry err.
func retryable(err error, policy *temporal.RetryPolicy) bool {
	if temporal.IsCanceledError(err) {
		return false
	}
	var appErr *temporal.ApplicationError
	return !errors.As(err, &appErr) || !appErr.NonRetryable() && !slices.Contains(policy.NonRetryableErrorTypes, appErr.Type())
}
