package deploy

import (
	"go.temporal.io/sdk/workflow"

	"github.com/temco/temco/internal/lifecycle"
)

// ReadClusterStatus reads the live state of a context's objects from its clusters into
// the AppContext, for status queries of type=cluster.
func ReadClusterStatus(ctx workflow.Context, in lifecycle.ReadInput) error {
	g := newGates(ctx)
	var batches int
	if err := workflow.ExecuteActivity(bookkeeping(ctx), lifecycle.ActivityContextBatches, in.ContextID).Get(ctx, &batches); err != nil {
		return err
	}
	f := fan{kind: lifecycle.WorkflowReadBatch, in: lifecycle.BatchInput{ContextID: in.ContextID, Detail: in.Detail}, batches: batches, gates: g}
	_, err := f.run(ctx, sum)
	return err
}
