package lifecycle

import "time"

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
var ChildDriftBatch = DeclareChild[BatchInput, BatchResult](WorkflowDriftBatch)

// DriftInput starts a drift check of a DIG (the schedule's argument).
type DriftInput struct {
	DIG Target `json:"dig"`
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

// DriftCheck is one check of one context, as its batches and clusters see it.
type DriftCheck struct {
	ID      string    `json:"id"` // the Drift workflow's run id: records of this check carry it
	Started time.Time `json:"started"`
	Correct bool      `json:"correct,omitempty"`
}

// DriftRecordInput records the end of a check in the context.
type DriftRecordInput struct {
	DIG       Target      `json:"dig"`
	ContextID string      `json:"contextId"`
	Check     DriftCheck  `json:"check"`
	Result    BatchResult `json:"result"`
	Error     string      `json:"error,omitempty"` // a batch that failed
}

// DriftResult is what a drift check ends with: Skipped, or the counts of its clusters'
// objects (Done in sync, Failed drifted, NotReady not checked).
type DriftResult struct {
	Skipped   string      `json:"skipped,omitempty"`
	ContextID string      `json:"contextId,omitempty"`
	Result    BatchResult `json:"result"`
}

// DriftScheduleID is the id of the Temporal Schedule of a DIG's drift checks.
func (d Target) DriftScheduleID() string {
	return driftSchedulePrefix + d.WorkflowID()[len("dig/"):]
}

// DriftWorkflowID is the id of the drift checks' workflows (the schedule adds each
// run's time to it).
func (d Target) DriftWorkflowID() string { return d.DriftScheduleID() + driftCheckWorkflowPostfix }
