package logicalcloud

import (
	"go.temporal.io/sdk/worker"

	"github.com/temco/temco/activities/cluster"
	"github.com/temco/temco/activities/deps"
	"github.com/temco/temco/internal/core/lifecycle"
)

// ActivityNames are the activities Register registers: a logical cloud's preparation, and
// its objects' set-up, tear-down and prune on each cluster.
var ActivityNames = []string{lifecycle.ActivityPrepareLogicalCloud, lifecycle.ActivitySetUpLogicalCloud,
	lifecycle.ActivityTearDownLogicalCloud, lifecycle.ActivityPruneLogicalCloud}

// Register registers Activities on r.
func Register(r worker.Registry, d *deps.Deps) {
	on := cluster.Shared(d)
	r.RegisterActivity(&Activities{Store: d.Store, Contexts: d.Contexts, Credentials: d.Credentials,
		Clients: on.Clients, Cluster: on})
}
