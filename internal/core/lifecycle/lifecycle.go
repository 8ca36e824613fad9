// Package lifecycle holds the vocabulary shared by the API, workflows and activities:
// DIG states and their history, AppContext and resource statuses, and the inputs and
// results that travel through Temporal. It has no I/O dependencies, so deterministic
// workflow code can import it.
package lifecycle

import (
	"cmp"
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

// IsResourceStatus tells a resource status from anything else.
func IsResourceStatus(s string) bool {
	switch s {
	case ResPending, ResApplied, ResFailed, ResRetrying, ResDeleted:
		return true
	}
	return false
}

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

// Target names what a lifecycle operation works on, of one of the Kinds: a deployment
// intent group, a logical cloud (LogicalCloud set, the composite app fields empty), a
// cluster's network intents (ClusterNetwork set to "provider+cluster", nothing else:
// ncm's apply), or the enrolment or distribution of a CA certificate intent (CACert and
// CertStage set, with ClusterProvider for a cluster provider's certificate or Project
// for a project's).
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

// ID is the target's store _id (its REST path; a cluster's network intents keep their
// state in the cluster's document, as EMCO's ncm does).
func (d Target) ID() string { return d.Kind().id(d) }

// Name is the name of the target's own resource (a cluster's network intents': its
// "provider+cluster").
func (d Target) Name() string { return cmp.Or(d.DIG, d.LogicalCloud, d.ClusterNetwork, d.CACert) }

// CompositeAppID is the store _id of the DIG's composite app.
func (d Target) CompositeAppID() string {
	return fmt.Sprintf("/projects/%s/composite-apps/%s/%s", d.Project, d.CompositeApp, d.Version)
}

// WorkflowID is the id of the target's lifecycle workflow, which runs its operations one
// at a time.
func (d Target) WorkflowID() string { return d.Kind().workflowID(d) }

// OpWorkflowID is the id of one operation's workflow: deterministic per target,
// operation and context, so a retried start never runs an operation twice.
func (d Target) OpWorkflowID(op, contextID string) string {
	return d.WorkflowID() + "/" + op + "/" + contextID
}

// String is the target's human-readable name.
func (d Target) String() string { return d.Kind().name(d) }

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
