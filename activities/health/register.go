package health

import (
	"go.temporal.io/sdk/worker"

	"github.com/temco/temco/activities/cluster"
	"github.com/temco/temco/activities/deps"
	core "github.com/temco/temco/internal/core/health"
	"github.com/temco/temco/internal/core/lifecycle"
)

// ActivityNames are the activities Register registers.
var ActivityNames = []string{lifecycle.ActivityProbeClusters, lifecycle.ActivityRecordRound}

// Register registers Activities on r, on the worker's shared cluster machinery.
func Register(r worker.Registry, d *deps.Deps) {
	a := &Activities{Store: d.Store, Clusters: cluster.AccessOf(cluster.Shared(d))}
	if d.Store != nil { // nil: registered only to be listed (workers' tests)
		a.Health = core.Open(d.Store.Database())
	}
	r.RegisterActivity(a)
}
