package cacerts

import (
	"go.temporal.io/sdk/worker"

	"github.com/temco/temco/activities/cluster"
	"github.com/temco/temco/activities/deps"
	"github.com/temco/temco/internal/core/lifecycle"
)

// ActivityNames are the activities Register registers: enrolment (a key per member
// cluster, signed on the issuing cluster) and distribution (the certificates and keys put
// on the member clusters).
var ActivityNames = []string{
	lifecycle.ActivityPrepareCertEnrollment, lifecycle.ActivityEnrollCertificates,
	lifecycle.ActivityWithdrawCertificates, lifecycle.ActivityPruneCertificates,
	lifecycle.ActivityPrepareCertDistribution, lifecycle.ActivityDistributeCertificates,
}

// Register registers Activities on r.
func Register(r worker.Registry, d *deps.Deps) {
	on := cluster.Shared(d)
	r.RegisterActivity(&Activities{Store: d.Store, Contexts: d.Contexts, Keys: NewKeys(d.Store, d.Keys),
		Clients: on.Clients, Cluster: on})
}
