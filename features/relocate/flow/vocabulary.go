package flow

import (
	"time"

	"github.com/temco/temco/internal/core/lifecycle"
)

// Relocate is a built-in workflow that moves one app of an instantiated DIG from one
// cluster to another without downtime: the app is placed on the new cluster too, and
// removed from the old one only once it is Ready on the new one. Operators start it
// through a workflow intent (workflowmgr), with the intent's workflowParams as argument.
const QueryStep = "step"

// RelocateRequest is one move: App of DIG, from cluster From to cluster To
// ("provider+cluster" both).
type RelocateRequest struct {
	DIG  lifecycle.Target `json:"dig"`
	App  string           `json:"app"`
	From string           `json:"from"`
	To   string           `json:"to"`
}

// RelocationPlan is where the app runs now, in the DIG's running context.
type RelocationPlan struct {
	ContextID string   `json:"contextId"`
	Clusters  []string `json:"clusters"` // sorted
}

// PlaceAppInput pins App of DIG to exactly Clusters, through its app placement intent.
type PlaceAppInput struct {
	DIG      lifecycle.Target `json:"dig"`
	App      string           `json:"app"`
	Clusters []string         `json:"clusters"`
}

// AwaitAppReadyInput waits until every object of App on Cluster, in context ContextID of
// DIG, is Ready on the live cluster, for at most Timeout.
type AwaitAppReadyInput struct {
	DIG       lifecycle.Target `json:"dig"`
	ContextID string           `json:"contextId"`
	App       string           `json:"app"`
	Cluster   string           `json:"cluster"`
	Timeout   time.Duration    `json:"timeout"`
}

// ErrNotReady: an app did not become Ready on a cluster in time.
const ErrNotReady = "NotReady"

func init() { lifecycle.DeclareWorkflows(lifecycle.WorkflowRelocate) }

// work (work.Activities): the Relocate workflow's steps (see
// relocate.go).
var byRelocate = lifecycle.Implementer{Package: "features/relocate/work", Struct: "Activities"}

var (
	PlanRelocation = lifecycle.Declare[RelocateRequest, RelocationPlan](byRelocate, "PlanRelocation")
	PlaceApp       = lifecycle.Declare[PlaceAppInput, lifecycle.None](byRelocate, "PlaceApp")
	AwaitAppReady  = lifecycle.Declare[AwaitAppReadyInput, lifecycle.None](byRelocate, "AwaitAppReady")
)
