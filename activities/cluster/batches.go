package cluster

import (
	"context"

	"github.com/temco/temco/internal/lifecycle"
)

// ContextBatches returns how many cluster batches a context has.
func (a *Activities) ContextBatches(ctx context.Context, ctxID string) (int, error) {
	return a.Contexts.Batches(ctx, ctxID)
}

// ListBatch returns the clusters of one batch (at most ClustersPerBatch names) as its
// batch workflow starts, dropping the batch's stored counts.
func (a *Activities) ListBatch(ctx context.Context, in lifecycle.BatchInput) ([]string, error) {
	return a.Contexts.StartBatch(ctx, in.ContextID, in.Batch)
}

// CountBatch stores the status counts of a batch whose clusters are all done.
func (a *Activities) CountBatch(ctx context.Context, in lifecycle.BatchInput) error {
	return a.Contexts.CountBatch(ctx, in.ContextID, in.Batch)
}
