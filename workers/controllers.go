package workers

import (
	"github.com/temco/temco/activities/cluster"
	"github.com/temco/temco/activities/deps"
	"github.com/temco/temco/controllers/cacerts"
	"github.com/temco/temco/controllers/ncm"
	"github.com/temco/temco/internal/core/lifecycle"
)

// The built-in controllers with lifecycles of their own (ncm, ca-certs) have activities
// too. They are built and registered here, not in a register.go of theirs: a controller
// is below the activities in the layers, and ca-certs is given the cluster layer's
// operations.

func registerNCM(r lifecycle.Registry, d *deps.Deps) {
	a := &ncm.Activities{Store: d.Store, Contexts: d.Contexts}
	lifecycle.Register(r, lifecycle.PrepareClusterNetwork, a.PrepareClusterNetwork)
}

func registerCACerts(r lifecycle.Registry, d *deps.Deps) {
	a := newCACerts(d)
	lifecycle.Register(r, lifecycle.PrepareCertEnrollment, a.PrepareCertEnrollment)
	lifecycle.Register(r, lifecycle.EnrollCertificates, a.EnrollCertificates)
	lifecycle.Register(r, lifecycle.WithdrawCertificates, a.WithdrawCertificates)
	lifecycle.Register(r, lifecycle.PruneCertificates, a.PruneCertificates)
	lifecycle.Register(r, lifecycle.PrepareCertDistribution, a.PrepareCertDistribution)
	lifecycle.Register(r, lifecycle.DistributeCertificates, a.DistributeCertificates)
}

// newCACerts is ca-certs' Activities of d, on the worker's shared cluster layer.
func newCACerts(d *deps.Deps) *cacerts.Activities {
	on := cluster.Shared(d)
	return &cacerts.Activities{Store: d.Store, Contexts: d.Contexts, Keys: cacerts.NewKeys(d.Store, d.Keys),
		Clients: on.Clients, Cluster: on}
}
