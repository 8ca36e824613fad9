package autoscale

import (
	"go.temporal.io/sdk/worker"

	"github.com/temco/temco/activities/cluster"
	"github.com/temco/temco/activities/deps"
	"github.com/temco/temco/internal/core/lifecycle"
)

// ActivityNames are the activities Register registers: a cluster's signals and drain.
var ActivityNames = []string{lifecycle.ActivityCapacitySignals, lifecycle.ActivityDrainCapacity}

// Register registers Activities on r, on the worker's shared cluster machinery.
func Register(r worker.Registry, d *deps.Deps) {
	r.RegisterActivity(&Activities{Clusters: cluster.AccessOf(cluster.Shared(d))})
}
