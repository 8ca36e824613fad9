package logicalcloud

import (
	"github.com/temco/temco/activities/cluster"
	"github.com/temco/temco/activities/deps"
	"github.com/temco/temco/internal/core/lifecycle"
)

// Register registers the methods of d's Activities (New) on r, each as the activity it
// implements.
func Register(r lifecycle.Registry, d *deps.Deps) {
	a := New(d)
	lifecycle.Register(r, lifecycle.PrepareLogicalCloud, a.PrepareLogicalCloud)
	lifecycle.Register(r, lifecycle.SetUpLogicalCloud, a.SetUpLogicalCloud)
	lifecycle.Register(r, lifecycle.TearDownLogicalCloud, a.TearDownLogicalCloud)
	lifecycle.Register(r, lifecycle.PruneLogicalCloud, a.PruneLogicalCloud)
}

// New is the Activities of d, on the worker's shared cluster layer.
func New(d *deps.Deps) *Activities {
	on := cluster.Shared(d)
	return &Activities{Store: d.Store, Contexts: d.Contexts, Credentials: d.Credentials, Clients: on.Clients, Cluster: on}
}
