// Package inventory is cluster inventories (temco's own; docs/inventory.md): one
// ClusterInventory workflow per inventory resource (flow) keeps a provider's clusters in
// step with a hub's ClusterProfiles and publishes every DIG's clusters there as
// PlacementDecisions (work). Here: the feature, the waking of its workflows and its
// routes (routes.go).
package inventory

import (
	"context"

	"go.temporal.io/sdk/client"

	"github.com/temco/temco/api"
	"github.com/temco/temco/features"
	"github.com/temco/temco/features/inventory/flow"
	"github.com/temco/temco/features/inventory/work"
	"github.com/temco/temco/starter"
)

// Feature is cluster inventories.
var Feature = features.Feature{
	Name:       "inventory",
	Workflows:  map[string]any{flow.WorkflowInventory: flow.ClusterInventory},
	Activities: work.Register,
	API:        extension,
}

// extension is its part of the api (routes.go); in.Starter nil: switched off.
func extension(in features.Mounting) api.Extension {
	st := in.Starter
	if st == nil {
		return Extension(nil)
	}
	return Extension(Starter{st})
}

// Starter wakes the inventories' workflows: the routes' Inventories.
type Starter struct{ *starter.Starter }

// WakeInventory has a cluster inventory's workflow (flow.WorkflowInventory) sync now;
// with start, one is started when none runs (the inventory was stored), else an
// inventory without one is left alone (it was deleted).
func (s Starter) WakeInventory(ctx context.Context, in flow.InventoryInput, start bool) error {
	return s.Wake(ctx, start, client.StartWorkflowOptions{ID: in.WorkflowID(), StaticSummary: "cluster inventory " + in.ID()},
		flow.WorkflowInventory, in)
}
