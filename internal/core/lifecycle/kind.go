package lifecycle

import (
	"go.temporal.io/sdk/temporal"
)

// Kind is one kind of lifecycle target, and everything the layers do differently for
// it: the workflows ask it which activities prepare a context and work on a cluster,
// the activities where its objects go, the api its routes and status layout, and all
// of them its state machine. A kind is one file (kind_<name>.go) and one line of Kinds;
// nothing else tells kinds apart.
type Kind struct {
	Name    string // the first part of its workflow ids
	of      func(Target) bool
	Machine *Machine
	// id, workflowID, name and attrs answer Target's ID, WorkflowID, String and
	// SearchAttributes.
	id, workflowID, name func(Target) string
	attrs                func(Target) []temporal.SearchAttributeUpdate
	// Prepare is the activity that builds a target's context from its own resources;
	// nil for DIGs (rendering, placement and controllers do).
	Prepare func(Target) Activity[ContextRef, Plan]
	// PerCluster is the activity that replaces a batch kind's usual per-cluster one
	// (WorkflowApplyBatch's ApplyCluster…); nil, or the zero Activity for a batch kind:
	// the usual one.
	PerCluster func(t Target, batch string) Activity[ClusterInput, ClusterResult]
	// Staged kinds roll out in stages (a DIG's rollout strategy); the others in batches.
	Staged bool
	// Apps kinds deploy a composite app's apps by intents (a DIG): each revision's
	// configuration is snapshotted (rollbacks, diffs), the fleet's home counts their
	// readiness, and their status shows drift checks, a rollout and an autoscaler.
	Apps  bool
	Scope Scope
	// Hosts: other targets deploy into it, so its terminate waits until none does.
	Hosts  bool
	Status Layout
	Routes []Route
}

// Scope is where a kind's objects go on its clusters.
type Scope int

const (
	// ScopeDefault is namespace "default" with the clusters' own credentials: EMCO's ncm
	// and ca-certs contexts have no meta.
	ScopeDefault Scope = iota
	// ScopeOwn is the target's own namespace with the clusters' own credentials: a
	// logical cloud sets itself up.
	ScopeOwn
	// ScopeHost is the namespace and issued credentials of the logical cloud the target
	// names, which must be instantiated: a DIG's.
	ScopeHost
)

// Layout is how a kind's status lists what its context placed.
type Layout int

const (
	ByApp      Layout = iota // apps, each with its clusters (a DIG)
	ByCluster                // the one app's clusters, at the top (dcm, ca-certs)
	OneCluster               // the one app's one cluster (ncm)
)

// Route is a REST path that serves a kind's lifecycle (echo's :params) and how its
// parameters name a target.
type Route struct {
	Path      string
	Target    func(param func(string) string) Target
	Endpoints []Endpoint
}

// Endpoint is one lifecycle request under a Route.
type Endpoint struct {
	Segment string // the path's last segment
	// Op is the operation it starts; OpStop stops the running one; "" reads the status.
	Op      string
	Summary string
}

// Endpoints are the usual lifecycle requests of what (the API's summaries name it so).
func Endpoints(what string) []Endpoint {
	return []Endpoint{
		{"instantiate", OpInstantiate, "Instantiate " + what},
		{"terminate", OpTerminate, "Terminate " + what},
		{"update", OpUpdate, "Apply the changes of " + what + " as a new revision"},
		{"stop", OpStop, "Stop the running operation of " + what},
		{"status", "", "Status of " + what},
	}
}

// Kinds are every kind of target: adding one is a file and a line here.
var Kinds = []*Kind{DIGs, LogicalClouds, ClusterNetworks, CACerts}

// Kind is the kind of t: the first whose fields t sets; a DIG when none does.
func (t Target) Kind() *Kind {
	for _, k := range Kinds {
		if k.of != nil && k.of(t) {
			return k
		}
	}
	return DIGs
}
