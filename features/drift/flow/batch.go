package flow

import (
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/temco/temco/internal/core/lifecycle"
	"github.com/temco/temco/workflows/deploy"
)

// A drift check fans out over a context's batches with deploy's batch engine, as the
// operations do, with DriftBatch children running DetectDrift on each cluster. It changes
// no status, so its batches are listed without dropping their counts (DriftBatchClusters,
// not ListBatch) and not counted again.
var batchKind = deploy.BatchKind{
	Workflow:    ChildDriftBatch,
	List:        DriftBatchClusters,
	PerCluster:  DetectDrift,
	Group:       DetectDriftGroup,
	Options:     checking,
	KeepsCounts: true,
}

// batchPrefix begins the ids of a check's DriftBatch children, after the check's own.
const batchPrefix = "drift-batch"

// DriftBatch is the child workflow checking one batch of clusters for drift.
func DriftBatch(ctx workflow.Context, in lifecycle.BatchInput) (lifecycle.BatchResult, error) {
	return deploy.RunBatch(ctx, in, batchKind)
}

// fanOut runs a drift check (in.Drift) over the context's batches: inline when there is
// one, else as DriftBatch children, deploy.BatchWindow at a time; the counts are summed.
func fanOut(ctx workflow.Context, in lifecycle.BatchInput, batches int) (lifecycle.BatchResult, error) {
	return deploy.FanOut(ctx, batchKind, in, batches, batchPrefix)
}

// checking is for DetectDrift: a cluster that does not answer is recorded by the activity
// itself; other failures (the store) are tried a few times, and the next check comes.
func checking(ctx workflow.Context) workflow.Context {
	return workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: 10 * time.Minute, RetryPolicy: &temporal.RetryPolicy{MaximumAttempts: 3},
	})
}
