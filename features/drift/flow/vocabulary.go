package flow

import (
	"github.com/temco/temco/internal/core/lifecycle"
)

// Drift detection (temco's own; EMCO has none): a Temporal Schedule per DIG whose spec
// asks for it starts the Drift workflow every interval. It compares the live objects on
// every cluster of the DIG's running context with what the context applied, per batch of
// clusters (DriftBatch), and records the differences in the AppContext; with correctDrift
// it applies the drifted objects again.
const (
	WorkflowDrift      = "Drift"
	WorkflowDriftBatch = "DriftBatch"

	OpDrift                   = "drift" // the operation search attribute of drift checks
	driftSchedulePrefix       = "drift/"
	driftCheckWorkflowPostfix = "/check"
)

// ChildDriftBatch is a drift check's batch of clusters, which the check starts as a child.
var ChildDriftBatch = lifecycle.DeclareChild[lifecycle.BatchInput, lifecycle.BatchResult](WorkflowDriftBatch)

// DriftInput starts a drift check of a DIG (the schedule's argument).
type DriftInput struct {
	DIG lifecycle.Target `json:"dig"`
	// Asked is a check an operator asked for now (POST DIG/drift-check): it runs whether
	// the DIG's drift detection is on or not, and corrects what it finds when Correct.
	Asked   bool `json:"asked,omitempty"`
	Correct bool `json:"correct,omitempty"`
}

// DriftPlan is what a drift check works on, read from the DIG as it starts: Skip says
// why it checks nothing (not instantiated, an operation runs, no drift detection).
type DriftPlan struct {
	Skip      string `json:"skip,omitempty"`
	ContextID string `json:"contextId,omitempty"`
	Batches   int    `json:"batches,omitempty"`
	Correct   bool   `json:"correct,omitempty"`
}

// DriftRecordInput records the end of a check in the context.
type DriftRecordInput struct {
	DIG       lifecycle.Target      `json:"dig"`
	ContextID string                `json:"contextId"`
	Check     lifecycle.DriftCheck  `json:"check"`
	Result    lifecycle.BatchResult `json:"result"`
	Error     string                `json:"error,omitempty"` // a batch that failed
}

// DriftResult is what a drift check ends with: Skipped, or the counts of its clusters'
// objects (Done in sync, Failed drifted, NotReady not checked).
type DriftResult struct {
	Skipped   string                `json:"skipped,omitempty"`
	ContextID string                `json:"contextId,omitempty"`
	Result    lifecycle.BatchResult `json:"result"`
}

// ScheduleID is the id of the Temporal Schedule of a DIG's drift checks.
func ScheduleID(d lifecycle.Target) string {
	return driftSchedulePrefix + d.WorkflowID()[len("dig/"):]
}

// WorkflowID is the id of the drift checks' workflows (the schedule adds each run's time
// to it).
func WorkflowID(d lifecycle.Target) string { return ScheduleID(d) + driftCheckWorkflowPostfix }

func init() { lifecycle.DeclareWorkflows(WorkflowDrift, WorkflowDriftBatch) }

// work (work.Activities): a drift check's plan and record, and per batch its
// clusters and per cluster (and group) the drift detection (detect.go).
var byDrift = lifecycle.Implementer{Package: "features/drift/work", Struct: "Activities"}

var (
	PlanDriftCheck     = lifecycle.Declare[DriftInput, DriftPlan](byDrift, "PlanDriftCheck")
	RecordDriftCheck   = lifecycle.Declare[DriftRecordInput, lifecycle.None](byDrift, "RecordDriftCheck")
	DriftBatchClusters = lifecycle.Declare[lifecycle.BatchInput, []string](byDrift, "DriftBatchClusters")
	DetectDrift        = lifecycle.Declare[lifecycle.ClusterInput, lifecycle.ClusterResult](byDrift, "DetectDrift")
	DetectDriftGroup   = lifecycle.Declare[lifecycle.GroupInput, lifecycle.GroupResult](byDrift, "DetectDriftGroup")
)
