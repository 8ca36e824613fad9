package drift

import (
	"go.temporal.io/sdk/worker"

	"github.com/temco/temco/activities/deps"
	"github.com/temco/temco/internal/core/lifecycle"
)

// ActivityNames are the activities Register registers: a drift check's store steps (the
// per-cluster ones are activities/cluster's).
var ActivityNames = []string{lifecycle.ActivityPlanDriftCheck, lifecycle.ActivityRecordDriftCheck}

// Register registers Activities on r.
func Register(r worker.Registry, d *deps.Deps) {
	r.RegisterActivity(&Activities{Store: d.Store, Contexts: d.Contexts})
}
