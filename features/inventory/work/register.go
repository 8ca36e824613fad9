package work

import (
	"github.com/temco/temco/activities/deps"
	"github.com/temco/temco/features/inventory/flow"
	"github.com/temco/temco/internal/core/lifecycle"
)

// Register registers Activities' methods on r, each as the activity it implements.
func Register(r lifecycle.Registry, d *deps.Deps) {
	a := &Activities{Store: d.Store, Contexts: d.Contexts, Keys: d.Keys}
	lifecycle.Register(r, flow.SyncInventory, a.SyncInventory)
}
