package starter

import (
	"context"

	"go.temporal.io/sdk/client"

	"github.com/temco/temco/internal/core/lifecycle"
)

// WakeInventory has a cluster inventory's workflow (lifecycle.WorkflowInventory) sync now;
// with start, one is started when none runs (the inventory was stored), else an
// inventory without one is left alone (it was deleted).
func (s *Starter) WakeInventory(ctx context.Context, in lifecycle.InventoryInput, start bool) error {
	return s.wake(ctx, start, client.StartWorkflowOptions{ID: in.WorkflowID(), StaticSummary: "cluster inventory " + in.ID()},
		lifecycle.WorkflowInventory, in)
}
