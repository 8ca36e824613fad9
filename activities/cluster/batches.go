package cluster

import (
	"cmp"
	"context"

	"github.com/temco/temco/internal/core/lifecycle"
)

// ContextBatches returns how many cluster batches a context has.
func (a *Activities) ContextBatches(ctx context.Context, ctxID string) (int, error) {
	return a.Contexts.Batches(ctx, ctxID)
}

// ListBatch returns the clusters of one batch (at most ClustersPerBatch names) as its
// batch workflow starts, dropping the batch's stored counts. The batch is in.ClustersOf's
// when set (a rollout working on another revision on a stage's clusters).
func (a *Activities) ListBatch(ctx context.Context, in lifecycle.BatchInput) ([]string, error) {
	return a.Contexts.StartBatch(ctx, cmp.Or(in.ClustersOf, in.ContextID), in.Batch)
}

// CountBatch stores the status counts of a batch whose clusters are all done.
func (a *Activities) CountBatch(ctx context.Context, in lifecycle.BatchInput) error {
	return a.Contexts.CountBatch(ctx, in.ContextID, in.Batch)
}
