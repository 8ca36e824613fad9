package cacerts

import (
	"github.com/temco/temco/internal/core/lifecycle"
)

// ActivityNames are the activities this package implements (workers registers them): enrolment (a key per member
// cluster, signed on the issuing cluster) and distribution (the certificates and keys put
// on the member clusters).
var ActivityNames = []string{
	lifecycle.ActivityPrepareCertEnrollment, lifecycle.ActivityEnrollCertificates,
	lifecycle.ActivityWithdrawCertificates, lifecycle.ActivityPruneCertificates,
	lifecycle.ActivityPrepareCertDistribution, lifecycle.ActivityDistributeCertificates,
}
