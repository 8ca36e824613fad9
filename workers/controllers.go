package workers

import (
	"go.temporal.io/sdk/worker"

	"github.com/temco/temco/activities/cluster"
	"github.com/temco/temco/activities/deps"
	"github.com/temco/temco/controllers/cacerts"
	"github.com/temco/temco/controllers/ncm"
)

// The built-in controllers with lifecycles of their own (ncm, ca-certs) have activities
// too. They are built here, not in a register.go of theirs: a controller is below the
// activities in the layers, and ca-certs is given the cluster layer's operations.

func registerNCM(r worker.Registry, d *deps.Deps) {
	r.RegisterActivity(&ncm.Activities{Store: d.Store, Contexts: d.Contexts})
}

func registerCACerts(r worker.Registry, d *deps.Deps) {
	on := cluster.Shared(d)
	r.RegisterActivity(&cacerts.Activities{Store: d.Store, Contexts: d.Contexts, Keys: cacerts.NewKeys(d.Store, d.Keys),
		Clients: on.Clients, Cluster: on})
}
