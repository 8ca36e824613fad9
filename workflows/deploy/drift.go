package deploy

import (
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/temco/temco/internal/core/lifecycle"
)

// A drift check (workflows/drift) fans out over a context's batches as the operations do,
// with DriftBatch children running DetectDrift on each cluster. It changes no status, so
// its batches are listed without dropping their counts and not counted again.

// DriftBatch is the child workflow checking one batch of clusters for drift.
func DriftBatch(ctx workflow.Context, in lifecycle.BatchInput) (lifecycle.BatchResult, error) {
	return batch(ctx, in, lifecycle.WorkflowDriftBatch)
}

// FanOutDrift runs a drift check (in.Drift) over the context's batches: inline when there
// is one, else as DriftBatch children, BatchWindow at a time; the counts are summed.
func FanOutDrift(ctx workflow.Context, in lifecycle.BatchInput, batches int) (lifecycle.BatchResult, error) {
	f := fan{kind: lifecycle.WorkflowDriftBatch, in: in, batches: batches, prefix: "drift-batch", gates: newGates(ctx)}
	return f.run(ctx, sum)
}

// listBatch is the activity listing a batch's clusters for a batch kind.
func listBatch(kind string) string {
	if kind == lifecycle.WorkflowDriftBatch {
		return lifecycle.ActivityDriftBatch
	}
	return lifecycle.ActivityListBatch
}

// checking is for DetectDrift: a cluster that does not answer is recorded by the activity
// itself; other failures (the store) are tried a few times, and the next check comes.
func checking(ctx workflow.Context) workflow.Context {
	return workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: 10 * time.Minute, RetryPolicy: &temporal.RetryPolicy{MaximumAttempts: 3},
	})
}
