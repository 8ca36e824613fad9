package work

import (
	"github.com/temco/temco/activities/cluster"
	"github.com/temco/temco/activities/deps"
	"github.com/temco/temco/features/autoscale/flow"
	"github.com/temco/temco/internal/core/lifecycle"
)

// Register registers Activities' methods on r, each as the activity it implements, on the
// worker's shared cluster machinery.
func Register(r lifecycle.Registry, d *deps.Deps) {
	a := &Activities{Clusters: cluster.AccessOf(cluster.Shared(d))}
	lifecycle.Register(r, flow.CapacitySignals, a.CapacitySignals)
	lifecycle.RegisterNoResult(r, flow.DrainCapacity, a.DrainCapacity)
}
