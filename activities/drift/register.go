package drift

import (
	"go.temporal.io/sdk/worker"

	"github.com/temco/temco/activities/cluster"
	"github.com/temco/temco/activities/deps"
	"github.com/temco/temco/internal/core/lifecycle"
)

// ActivityNames are the activities Register registers: a drift check's store steps and
// its per-cluster (and per-group) ones.
var ActivityNames = []string{
	lifecycle.ActivityPlanDriftCheck, lifecycle.ActivityRecordDriftCheck,
	lifecycle.ActivityDriftBatch, lifecycle.ActivityDetectDrift, lifecycle.ActivityDetectDriftGroup,
}

// Register registers Activities on r, on the worker's shared cluster machinery.
func Register(r worker.Registry, d *deps.Deps) {
	r.RegisterActivity(&Activities{Store: d.Store, Contexts: d.Contexts, Clusters: cluster.AccessOf(cluster.Shared(d))})
}
