package lifecycle

import (
	"fmt"

	"go.temporal.io/sdk/temporal"
)

// CACerts are the enrolment or the distribution of a CA certificate intent (EMCO's
// ca-certs; CACert and CertStage set, with ClusterProvider for a cluster provider's
// certificate or Project for a project's). Each has a logical cloud's lifecycle, kept in
// a child of the intent. OpModify is a change of the certificate intent itself, allowed
// while neither has anything on clusters (EMCO allows it only before the first
// instantiate). The enrolment signs each cluster's certificate and forgets the keys when
// it is terminated; the distribution installs them.
var CACerts = &Kind{
	Name: "ca-cert",
	of:   func(d Target) bool { return d.CACert != "" },
	Machine: &Machine{
		Kind:    "CA certificate intent's lifecycle",
		States:  []string{created, instantiated, instantiateStopped, terminated, terminateStopped, updated},
		Initial: created,
		Ops:     []string{OpInstantiate, OpTerminate, OpUpdate, OpModify, OpDelete},
		Rules: []Rule{
			{Op: OpInstantiate, From: []string{created, terminated}, To: instantiated, Stopped: instantiateStopped},
			{Op: OpTerminate, From: []string{instantiated, instantiateStopped, terminateStopped}, To: terminated, Stopped: terminateStopped},
			{Op: OpUpdate, From: []string{instantiated}, To: instantiated, Replaced: updated, Stopped: instantiateStopped},
			{Op: OpModify, From: []string{created}},
			{Op: OpModify, From: []string{terminated}, Unless: OpTerminate},
			{Op: OpDelete, From: []string{created}},
			{Op: OpDelete, From: []string{terminated}, Unless: OpTerminate},
		},
	},
	id: func(d Target) string { return d.CertID() + "/" + d.CertStage },
	workflowID: func(d Target) string { // e.g. ca-cert/cluster-provider/local/edge-ca/enrollment
		owner := "project/" + d.Project
		if d.ClusterProvider != "" {
			owner = "cluster-provider/" + d.ClusterProvider
		}
		return "ca-cert/" + owner + "/" + d.CACert + "/" + d.CertStage
	},
	name: func(d Target) string {
		owner := fmt.Sprintf("project %q", d.Project)
		if d.ClusterProvider != "" {
			owner = fmt.Sprintf("cluster provider %q", d.ClusterProvider)
		}
		return fmt.Sprintf("%s of CA certificate intent %q (%s)", d.CertStage, d.CACert, owner)
	},
	// A project's certificate carries project, a provider's clusterProvider; the
	// workflow id says enrolment or distribution.
	attrs: func(d Target) []temporal.SearchAttributeUpdate {
		owner := AttrProject.ValueSet(d.Project)
		if d.ClusterProvider != "" {
			owner = AttrClusterProvider.ValueSet(d.ClusterProvider)
		}
		return []temporal.SearchAttributeUpdate{owner, AttrCACert.ValueSet(d.CACert)}
	},
	Prepare: func(d Target) Activity[ContextRef, Plan] {
		if d.CertStage == CertEnrollment {
			return PrepareCertEnrollment
		}
		return PrepareCertDistribution
	},
	PerCluster: func(d Target, batch string) Activity[ClusterInput, ClusterResult] {
		if d.CertStage == CertEnrollment { // signs, and forgets keys
			return map[string]Activity[ClusterInput, ClusterResult]{
				WorkflowApplyBatch:  EnrollCertificates,
				WorkflowDeleteBatch: WithdrawCertificates,
				WorkflowPruneBatch:  PruneCertificates,
			}[batch]
		}
		if batch == WorkflowApplyBatch { // installs the keys
			return DistributeCertificates
		}
		return Activity[ClusterInput, ClusterResult]{}
	},
	Scope:  ScopeDefault,
	Status: ByCluster,
	Routes: certRoutes(),
}

// The two lifecycles of a CA certificate intent, as its paths name them.
const (
	CertEnrollment   = "enrollment"
	CertDistribution = "distribution"
)

// certRoutes are the enrolment and distribution of a cluster provider's and of a
// project's certificate intent.
func certRoutes() []Route {
	var routes []Route
	for _, owner := range []struct{ path, what string }{
		{"/cluster-providers/:clusterProvider/ca-certs/:caCert", "a cluster provider's CA certificate intent"},
		{"/projects/:project/ca-certs/:caCert", "a project's CA certificate intent"},
	} {
		for _, stage := range []string{CertEnrollment, CertDistribution} {
			routes = append(routes, Route{
				Path: owner.path + "/" + stage,
				Target: func(p func(string) string) Target {
					return Target{ClusterProvider: p("clusterProvider"), Project: p("project"), CACert: p("caCert"), CertStage: stage}
				},
				Endpoints: Endpoints("the " + stage + " of " + owner.what),
			})
		}
	}
	return routes
}

// CertOwner is the store _id of what a CA certificate intent belongs to: its cluster
// provider or its project.
func (d Target) CertOwner() string {
	if d.ClusterProvider != "" {
		return "/cluster-providers/" + d.ClusterProvider
	}
	return "/projects/" + d.Project
}

// CertID is the store _id of a CA certificate intent.
func (d Target) CertID() string { return d.CertOwner() + "/ca-certs/" + d.CACert }

// Stage is the same certificate intent's other lifecycle: its enrolment or distribution.
func (d Target) Stage(stage string) Target {
	d.CertStage = stage
	return d
}
