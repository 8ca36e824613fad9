package inventory

import (
	"go.temporal.io/sdk/worker"

	"github.com/temco/temco/activities/deps"
	"github.com/temco/temco/internal/core/lifecycle"
)

// ActivityNames are the activities Register registers: an inventory's sync.
var ActivityNames = []string{lifecycle.ActivitySyncInventory}

// Register registers Activities on r.
func Register(r worker.Registry, d *deps.Deps) {
	r.RegisterActivity(&Activities{Store: d.Store, Contexts: d.Contexts, Keys: d.Keys})
}
