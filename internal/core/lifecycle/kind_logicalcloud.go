package lifecycle

import (
	"fmt"

	"go.temporal.io/sdk/temporal"
)

// LogicalClouds are logical clouds (dcm). Their lifecycle is a DIG's without approval or
// rollback; DIGs instantiate into one only while it is instantiated (OpHost), and its
// terminate waits until none does. Its context is prepared from its own resources, and
// its per-cluster activities set up and tear down its namespace, quotas and users.
var LogicalClouds = &Kind{
	Name: "logical-cloud",
	of:   func(d Target) bool { return d.LogicalCloud != "" },
	Machine: &Machine{
		Kind:   "logical cloud",
		States: []string{created, instantiated, instantiateStopped, terminated, terminateStopped, updated},
		Ops:    []string{OpInstantiate, OpTerminate, OpUpdate, OpDelete, OpHost},
		Rules: []Rule{
			{Op: OpInstantiate, From: []string{created, terminated}, To: instantiated, Stopped: instantiateStopped},
			{Op: OpTerminate, From: []string{instantiated, instantiateStopped, terminateStopped}, To: terminated, Stopped: terminateStopped},
			{Op: OpUpdate, From: []string{instantiated}, To: instantiated, Replaced: updated, Stopped: instantiateStopped},
			{Op: OpDelete, From: []string{created}},
			{Op: OpDelete, From: []string{terminated}, Unless: OpTerminate},
			{Op: OpHost, From: []string{instantiated}},
		},
	},
	id:         func(d Target) string { return LogicalCloudID(d.Project, d.LogicalCloud) },
	workflowID: func(d Target) string { return "logical-cloud/" + d.Project + "/" + d.LogicalCloud },
	name: func(d Target) string {
		return fmt.Sprintf("logical cloud %q (project %q)", d.LogicalCloud, d.Project)
	},
	attrs: func(d Target) []temporal.SearchAttributeUpdate {
		return []temporal.SearchAttributeUpdate{AttrProject.ValueSet(d.Project), AttrLogicalCloud.ValueSet(d.LogicalCloud)}
	},
	Prepare: func(Target) Activity[ContextRef, Plan] { return PrepareLogicalCloud },
	PerCluster: func(_ Target, batch string) Activity[ClusterInput, ClusterResult] {
		return map[string]Activity[ClusterInput, ClusterResult]{
			WorkflowApplyBatch:  SetUpLogicalCloud,
			WorkflowDeleteBatch: TearDownLogicalCloud,
			WorkflowPruneBatch:  PruneLogicalCloud,
		}[batch]
	},
	Scope:  ScopeOwn,
	Hosts:  true,
	Status: ByCluster,
	Routes: []Route{{
		Path: RouteLogicalCloud,
		Target: func(p func(string) string) Target {
			return Target{Project: p("project"), LogicalCloud: p("logicalCloud")}
		},
		Endpoints: Endpoints("a logical cloud"),
	}},
}

// RouteLogicalCloud is the REST path of a logical cloud.
const RouteLogicalCloud = "/projects/:project/logical-clouds/:logicalCloud"

// LogicalCloudID is the store _id of a logical cloud.
func LogicalCloudID(project, name string) string {
	return fmt.Sprintf("/projects/%s/logical-clouds/%s", project, name)
}
