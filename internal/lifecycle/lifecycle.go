// Package lifecycle holds the vocabulary shared by the API, workflows and activities:
// DIG states and their history, AppContext and resource statuses, and the inputs and
// results that travel through Temporal. It has no I/O dependencies, so deterministic
// workflow code can import it.
package lifecycle

import (
	"fmt"
	"strings"
	"time"
)

// DIG states: the lifecycle action last requested, as in EMCO's state history. Which
// operation may start from which, and what it records, is digstate's (DIG, LogicalCloud).
const (
	StateCreated            = "Created"
	StateApproved           = "Approved"
	StateInstantiated       = "Instantiated"
	StateInstantiateStopped = "InstantiateStopped"
	StateTerminated         = "Terminated"
	StateTerminateStopped   = "TerminateStopped"
	StateUpdated            = "Updated" // a context a newer revision replaced; never current
	StateApplied            = "Applied" // a cluster's network intents (ncm), instantiated
)

// AppContext statuses: how far an operation on one context (instance revision) got.
const (
	StatusInstantiating      = "Instantiating"
	StatusInstantiated       = "Instantiated"
	StatusInstantiateFailed  = "InstantiateFailed"
	StatusInstantiateStopped = "InstantiateStopped"
	StatusTerminating        = "Terminating"
	StatusTerminated         = "Terminated"
	StatusTerminateFailed    = "TerminateFailed"
	StatusTerminateStopped   = "TerminateStopped"
	StatusUpdating           = "Updating"      // a new revision is being applied
	StatusUpdateFailed       = "UpdateFailed"  // ... and some of it failed
	StatusUpdateStopped      = "UpdateStopped" // ... and a stop ended it
	StatusUpdated            = "Updated"       // a revision a later one replaced on the clusters
)

// Resource (rsync) statuses.
const (
	ResPending  = "Pending"
	ResApplied  = "Applied"
	ResFailed   = "Failed"
	ResRetrying = "Retrying"
	ResDeleted  = "Deleted"
)

// Action is one entry of a DIG's state history.
type Action struct {
	State     string    `json:"State"`
	ContextID string    `json:"ContextId"`
	TimeStamp time.Time `json:"TimeStamp"`
	Revision  int64     `json:"revision"`
}

// StateInfo is a DIG's state history, oldest first.
type StateInfo struct {
	Actions []Action `json:"Actions"`
}

// Current is the state of the last action ("" when there is none).
func (s StateInfo) Current() string {
	if len(s.Actions) == 0 {
		return ""
	}
	return s.Actions[len(s.Actions)-1].State
}

// ContextID is the context of the last action that has one.
func (s StateInfo) ContextID() string {
	for i := len(s.Actions) - 1; i >= 0; i-- {
		if s.Actions[i].ContextID != "" {
			return s.Actions[i].ContextID
		}
	}
	return ""
}

// Operations on a DIG.
const (
	OpInstantiate = "instantiate"
	OpTerminate   = "terminate"
	OpStop        = "stop"
	OpUpdate      = "update"
	OpRollback    = "rollback"
)

// InstanceStart is the index of the action that began the current instance: the last
// instantiate (the only action recording revision 1 as Instantiated); -1 when none.
func (s StateInfo) InstanceStart() int {
	for i := len(s.Actions) - 1; i >= 0; i-- {
		if a := s.Actions[i]; a.State == StateInstantiated && a.Revision == 1 {
			return i
		}
	}
	return -1
}

// LatestRevision is the highest revision of the current instance.
func (s StateInfo) LatestRevision() int64 {
	var rev int64
	if start := s.InstanceStart(); start >= 0 {
		for _, a := range s.Actions[start:] {
			rev = max(rev, a.Revision)
		}
	}
	return rev
}

// RevisionContext finds the context of revision n of the current instance: the most
// recent record of n (EMCO took the first, which may belong to an earlier instance).
func (s StateInfo) RevisionContext(n int64) (string, bool) {
	start := s.InstanceStart()
	for i := len(s.Actions) - 1; i >= start && start >= 0; i-- {
		if a := s.Actions[i]; a.Revision == n && a.ContextID != "" {
			return a.ContextID, true
		}
	}
	return "", false
}

// Target names what a lifecycle operation works on: a deployment intent group, a logical
// cloud (LogicalCloud set, the composite app fields empty), a cluster's network
// intents (ClusterNetwork set to "provider+cluster", nothing else: ncm's apply), or the
// enrolment or distribution of a CA certificate intent (CACert and CertStage set, with
// ClusterProvider for a cluster provider's certificate or Project for a project's).
type Target struct {
	Project        string `json:"project"`
	CompositeApp   string `json:"compositeApp,omitempty"`
	Version        string `json:"version,omitempty"`
	DIG            string `json:"dig,omitempty"`
	LogicalCloud   string `json:"logicalCloud,omitempty"`
	ClusterNetwork string `json:"clusterNetwork,omitempty"`

	ClusterProvider string `json:"clusterProvider,omitempty"`
	CACert          string `json:"caCert,omitempty"`
	CertStage       string `json:"certStage,omitempty"` // CertEnrollment or CertDistribution
}

// The two lifecycles of a CA certificate intent (EMCO's ca-certs), as its paths name them.
const (
	CertEnrollment   = "enrollment"
	CertDistribution = "distribution"
)

// IsCACert tells a CA certificate intent's enrolment or distribution from the other targets.
func (d Target) IsCACert() bool { return d.CACert != "" }

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

// IsLogicalCloud tells a logical cloud from a DIG.
func (d Target) IsLogicalCloud() bool { return d.LogicalCloud != "" }

// IsClusterNetwork tells a cluster's network intents from the other targets.
func (d Target) IsClusterNetwork() bool { return d.ClusterNetwork != "" }

// ID is the target's store _id (its REST path; a cluster's network intents keep their
// state in the cluster's document, as EMCO's ncm does).
func (d Target) ID() string {
	switch {
	case d.IsLogicalCloud():
		return LogicalCloudID(d.Project, d.LogicalCloud)
	case d.IsClusterNetwork():
		return ClusterID(d.ClusterNetwork)
	case d.IsCACert(): // the state of each lifecycle is a child of the certificate intent
		return d.CertID() + "/" + d.CertStage
	}
	return fmt.Sprintf("/projects/%s/composite-apps/%s/%s/deployment-intent-groups/%s", d.Project, d.CompositeApp, d.Version, d.DIG)
}

// LogicalCloudID is the store _id of a logical cloud.
func LogicalCloudID(project, name string) string {
	return fmt.Sprintf("/projects/%s/logical-clouds/%s", project, name)
}

// ClusterID is the store _id of a cluster ("provider+cluster").
func ClusterID(key string) string {
	p, c := SplitClusterKey(key)
	return fmt.Sprintf("/cluster-providers/%s/clusters/%s", p, c)
}

// CompositeAppID is the store _id of the DIG's composite app.
func (d Target) CompositeAppID() string {
	return fmt.Sprintf("/projects/%s/composite-apps/%s/%s", d.Project, d.CompositeApp, d.Version)
}

// WorkflowID is the id of the target's lifecycle workflow, which runs its operations one
// at a time.
func (d Target) WorkflowID() string {
	switch {
	case d.IsLogicalCloud():
		return "logical-cloud/" + d.Project + "/" + d.LogicalCloud
	case d.IsClusterNetwork():
		p, c := SplitClusterKey(d.ClusterNetwork)
		return "cluster-network/" + p + "/" + c
	case d.IsCACert(): // e.g. ca-cert/cluster-provider/local/edge-ca/enrollment
		owner := "project/" + d.Project
		if d.ClusterProvider != "" {
			owner = "cluster-provider/" + d.ClusterProvider
		}
		return "ca-cert/" + owner + "/" + d.CACert + "/" + d.CertStage
	}
	return "dig/" + strings.Join([]string{d.Project, d.CompositeApp, d.Version, d.DIG}, "/")
}

// OpWorkflowID is the id of one operation's workflow: deterministic per target,
// operation and context, so a retried start never runs an operation twice.
func (d Target) OpWorkflowID(op, contextID string) string {
	return d.WorkflowID() + "/" + op + "/" + contextID
}

// String is the target's human-readable name.
func (d Target) String() string {
	switch {
	case d.IsLogicalCloud():
		return fmt.Sprintf("logical cloud %q (project %q)", d.LogicalCloud, d.Project)
	case d.IsClusterNetwork():
		p, c := SplitClusterKey(d.ClusterNetwork)
		return fmt.Sprintf("network intents of cluster %q (provider %q)", c, p)
	case d.IsCACert():
		owner := fmt.Sprintf("project %q", d.Project)
		if d.ClusterProvider != "" {
			owner = fmt.Sprintf("cluster provider %q", d.ClusterProvider)
		}
		return fmt.Sprintf("%s of CA certificate intent %q (%s)", d.CertStage, d.CACert, owner)
	}
	return fmt.Sprintf("deployment intent group %q (project %q, composite app %q %q)", d.DIG, d.Project, d.CompositeApp, d.Version)
}

// DeploymentIDLabel marks every object temco applies with "<instance context>-<app>", as
// EMCO does; the instance is the context of the instantiate, kept by every later revision.
const DeploymentIDLabel = "emco/deployment-id"

// ClusterKey names a cluster as EMCO does in status and AppContext: "provider+cluster".
func ClusterKey(provider, cluster string) string { return provider + "+" + cluster }

// SplitClusterKey reverses ClusterKey.
func SplitClusterKey(key string) (provider, cluster string) {
	provider, cluster, _ = strings.Cut(key, "+")
	return provider, cluster
}
