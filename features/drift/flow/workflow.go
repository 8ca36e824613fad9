// Package flow holds the drift check's workflows: Drift, one check of a DIG, started by
// the DIG's Temporal Schedule (see the feature's Starter.SyncDrift), and DriftBatch, its child checking
// one batch of clusters (batch.go). Drift finds the DIG's running context, checks every
// cluster of it for drift in batches (deploy's batch engine with drift's deploy.BatchKind,
// DetectDrift on each cluster) and records the check's summary. Workflow code only: the
// activities (features/drift/work) do the I/O.
package flow

import (
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/temco/temco/internal/core/lifecycle"
)

// Drift checks the DIG's running context once. It checks nothing (and says why) unless
// the DIG is Instantiated, its last operation succeeded and none runs. A cluster that
// fails does not stop the others: the check's summary is recorded however the batches
// ended.
func Drift(ctx workflow.Context, in DriftInput) (DriftResult, error) {
	var plan DriftPlan
	if err := PlanDriftCheck.Execute(bookkeeping(ctx), in).Get(ctx, &plan); err != nil {
		return DriftResult{}, err
	}
	log := workflow.GetLogger(ctx)
	if plan.Skip != "" {
		log.Info("drift check skipped", "dig", in.DIG.String(), "reason", plan.Skip)
		return DriftResult{Skipped: plan.Skip}, nil
	}
	check := lifecycle.DriftCheck{ID: workflow.GetInfo(ctx).WorkflowExecution.ID, Started: workflow.Now(ctx).UTC(), Correct: plan.Correct}
	total, err := fanOut(ctx, lifecycle.BatchInput{ContextID: plan.ContextID, Drift: &check}, plan.Batches)
	rec := DriftRecordInput{DIG: in.DIG, ContextID: plan.ContextID, Check: check, Result: total}
	if err != nil {
		rec.Error = err.Error()
	}
	if rerr := RecordDriftCheck.Execute(bookkeeping(ctx), rec).Get(ctx, nil); rerr != nil {
		return DriftResult{}, rerr
	}
	log.Info("drift check ended", "dig", in.DIG.String(), "context", plan.ContextID, "clusters", total.Clusters,
		"inSync", total.Done, "drifted", total.Failed, "notChecked", total.NotReady)
	return DriftResult{ContextID: plan.ContextID, Result: total}, err
}

// bookkeeping is for the store-only steps: retried until the store answers.
func bookkeeping(ctx workflow.Context) workflow.Context {
	return workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: time.Minute,
		RetryPolicy: &temporal.RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: 30 * time.Second,
			NonRetryableErrorTypes: []string{lifecycle.ErrInvalidInput}},
	})
}
