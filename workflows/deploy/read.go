package deploy

import (
	"go.temporal.io/sdk/workflow"

	"github.com/temco/temco/internal/core/lifecycle"
)

// ReadClusterStatus reads the live state of a context's objects from its clusters into
// the AppContext, for status queries of type=cluster, and counts what is not Ready.
func ReadClusterStatus(ctx workflow.Context, in lifecycle.ReadInput) (lifecycle.BatchResult, error) {
	g := newGates(ctx)
	if len(in.Clusters) > 0 {
		return runBatch(ctx, g, lifecycle.BatchInput{ContextID: in.ContextID, Detail: in.Detail}, readBatch, in.Clusters, nil)
	}
	var batches int
	if err := lifecycle.ContextBatches.Execute(bookkeeping(ctx), in.ContextID).Get(ctx, &batches); err != nil {
		return lifecycle.BatchResult{}, err
	}
	f := fan{kind: readBatch, in: lifecycle.BatchInput{ContextID: in.ContextID, Detail: in.Detail}, batches: batches, gates: g}
	return f.run(ctx, sum)
}
