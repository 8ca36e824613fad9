package placement

import (
	"go.temporal.io/sdk/worker"

	"github.com/temco/temco/activities/deps"
	"github.com/temco/temco/controllers"
	"github.com/temco/temco/internal/core/lifecycle"
)

// ActivityNames are the activities Register registers: placement, the commit of the
// controllers' edits, and the autoscaler's view of its capacity placement and its record.
var ActivityNames = []string{lifecycle.ActivityPlaceApps, lifecycle.ActivityCommitControllers,
	lifecycle.ActivityObserveCapacity, lifecycle.ActivityRecordCapacity}

// Register registers Activities on r.
func Register(r worker.Registry, d *deps.Deps) {
	r.RegisterActivity(&Activities{Store: d.Store, Contexts: d.Contexts, ClustersPerBatch: d.ClustersPerBatch,
		FanOut: controllers.FanOuts(d.Controllers)})
}
