package lifecycle

import (
	"fmt"

	"go.temporal.io/sdk/temporal"
)

// ClusterNetworks are a cluster's network intents (ncm), whose state is kept in the
// cluster's document as EMCO's ncm does. Their lifecycle is EMCO's: apply from Created
// or Terminated records Applied, terminate records Terminated, each with its stopped
// variant. As in EMCO, applying what is applied and terminating what is terminated
// change nothing; unlike EMCO, an apply that was stopped must be terminated before it is
// applied again (EMCO answers success and does nothing). Networks are changed
// (OpModify) only while nothing of them is on the cluster.
var ClusterNetworks = &Kind{
	Name: "cluster-network",
	of:   func(d Target) bool { return d.ClusterNetwork != "" },
	Machine: &Machine{
		Kind:    "cluster's network intents",
		States:  []string{created, applied, instantiateStopped, terminated, terminateStopped},
		Initial: created,
		Ops:     []string{OpInstantiate, OpTerminate, OpModify, OpDelete},
		Rules: []Rule{
			{Op: OpInstantiate, From: []string{created, terminated}, To: applied, Stopped: instantiateStopped},
			{Op: OpInstantiate, From: []string{applied}},
			{Op: OpTerminate, From: []string{applied, instantiateStopped, terminateStopped}, To: terminated, Stopped: terminateStopped},
			{Op: OpTerminate, From: []string{terminated}},
			{Op: OpModify, From: []string{created, terminated}}, // a running terminate uses its own context
			{Op: OpDelete, From: []string{created}},
			{Op: OpDelete, From: []string{terminated}, Unless: OpTerminate},
		},
	},
	id: func(d Target) string { return ClusterID(d.ClusterNetwork) },
	workflowID: func(d Target) string {
		p, c := SplitClusterKey(d.ClusterNetwork)
		return "cluster-network/" + p + "/" + c
	},
	name: func(d Target) string {
		p, c := SplitClusterKey(d.ClusterNetwork)
		return fmt.Sprintf("network intents of cluster %q (provider %q)", c, p)
	},
	attrs: func(d Target) []temporal.SearchAttributeUpdate {
		return []temporal.SearchAttributeUpdate{AttrCluster.ValueSet(d.ClusterNetwork)}
	},
	Prepare: func(Target) Activity[ContextRef, Plan] { return PrepareClusterNetwork },
	Scope:   ScopeDefault,
	Status:  OneCluster,
	// Apply is its instantiate, and there is no update.
	Routes: []Route{{
		Path: RouteCluster,
		Target: func(p func(string) string) Target {
			return Target{ClusterNetwork: ClusterKey(p("clusterProvider"), p("cluster"))}
		},
		Endpoints: []Endpoint{
			{"apply", OpInstantiate, "Apply a cluster's networks and provider networks"},
			{"terminate", OpTerminate, "Remove a cluster's networks from it"},
			{"stop", OpStop, "Stop the running apply or terminate of a cluster's networks"},
			{"status", "", "Status of a cluster's network intents"},
		},
	}},
}

// RouteCluster is the REST path of a cluster.
const RouteCluster = "/cluster-providers/:clusterProvider/clusters/:cluster"

// ClusterID is the store _id of a cluster ("provider+cluster").
func ClusterID(key string) string {
	p, c := SplitClusterKey(key)
	return fmt.Sprintf("/cluster-providers/%s/clusters/%s", p, c)
}
