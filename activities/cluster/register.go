package cluster

import (
	"go.temporal.io/sdk/worker"

	"github.com/temco/temco/activities/deps"
	"github.com/temco/temco/internal/core/lifecycle"
)

// ActivityNames are the activities Register registers: a batch's clusters, and per
// cluster (and per group of clusters) the apply, delete, read and prune.
var ActivityNames = []string{
	lifecycle.ActivityContextBatches, lifecycle.ActivityListBatch, lifecycle.ActivityCountBatch,
	lifecycle.ActivityApplyCluster, lifecycle.ActivityDeleteCluster, lifecycle.ActivityReadCluster,
	lifecycle.ActivityPruneCluster,
	lifecycle.ActivityApplyGroup, lifecycle.ActivityDeleteGroup, lifecycle.ActivityReadGroup,
	lifecycle.ActivityPruneGroup,
}

// Register registers the worker's Activities (Shared) on r.
func Register(r worker.Registry, d *deps.Deps) { r.RegisterActivity(Shared(d)) }

// Shared is the worker's one Activities, and in it its one Clients: they pool connections
// and cache contexts, and logicalcloud, cacerts, render, actions and drift (AccessOf) use
// them too.
func Shared(d *deps.Deps) *Activities {
	return deps.Shared(d, func() *Activities {
		clients := &Clients{Store: d.Store, Keys: d.Keys, Credentials: d.Credentials, Git: d.Git, MaxConns: d.MaxConns}
		return &Activities{Clients: clients, Contexts: d.Contexts, Metrics: d.Metrics, Report: d.Report}
	})
}
