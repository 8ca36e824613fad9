package cluster

import (
	"github.com/temco/temco/activities/deps"
	"github.com/temco/temco/internal/core/lifecycle"
)

// Register registers the methods of the worker's Activities (Shared) on r, each as the
// activity it implements.
func Register(r lifecycle.Registry, d *deps.Deps) {
	a := Shared(d)
	lifecycle.Register(r, lifecycle.ContextBatches, a.ContextBatches)
	lifecycle.Register(r, lifecycle.ListBatch, a.ListBatch)
	lifecycle.RegisterNoResult(r, lifecycle.CountBatch, a.CountBatch)
	lifecycle.Register(r, lifecycle.ApplyCluster, a.ApplyCluster)
	lifecycle.Register(r, lifecycle.DeleteCluster, a.DeleteCluster)
	lifecycle.Register(r, lifecycle.ReadCluster, a.ReadCluster)
	lifecycle.Register(r, lifecycle.PruneCluster, a.PruneCluster)
	lifecycle.Register(r, lifecycle.ApplyGroup, a.ApplyGroup)
	lifecycle.Register(r, lifecycle.DeleteGroup, a.DeleteGroup)
	lifecycle.Register(r, lifecycle.ReadGroup, a.ReadGroup)
	lifecycle.Register(r, lifecycle.PruneGroup, a.PruneGroup)
	lifecycle.Register(r, lifecycle.AwaitAgent, a.AwaitAgent)
}

// Shared is the worker's one Activities, and in it its one Clients: they pool connections
// and cache contexts, and logicalcloud, cacerts, render, actions and drift (AccessOf) use
// them too.
func Shared(d *deps.Deps) *Activities {
	return deps.Shared(d, func() *Activities {
		clients := &Clients{Store: d.Store, Keys: d.Keys, Credentials: d.Credentials, Git: d.Git, MaxConns: d.MaxConns}
		return &Activities{Clients: clients, Contexts: d.Contexts, Metrics: d.Metrics, Report: d.Report}
	})
}
