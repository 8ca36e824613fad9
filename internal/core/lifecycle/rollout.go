package lifecycle

import (
	"time"

	"github.com/temco/temco/internal/core/rollout"
)

// RolloutCommand is an operator's command to a running rollout: approve a stage's
// pending approval (Stage names it; empty means the one waiting), pause before the next
// batch of clusters, resume (also: go on past a failed stage under a manual
// rollback policy), or roll back what the operation changed.
type RolloutCommand struct {
	Action string `json:"action,omitempty"` // the update's; a signal's is its name
	Stage  string `json:"stage,omitempty"`
}

// Rollout command actions, the same words as the signals.
const (
	RolloutApprove  = SignalApprove
	RolloutPause    = SignalPause
	RolloutResume   = SignalResume
	RolloutRollback = SignalRollback
)

// RolloutStatus is where a staged rollout stands: the operation records it in its
// context at every change, and the status API shows it.
type RolloutStatus struct {
	Strategy string `json:"strategy"`
	Rollback string `json:"rollback"` // auto or manual
	// State is Running, Paused, AwaitingDecision (a stage failed under a manual policy),
	// RollingBack, Succeeded, Failed or RolledBack.
	State  string        `json:"state"`
	Cause  string        `json:"cause,omitempty"` // why it failed
	Stages []StageStatus `json:"stages"`
}

// Rollout states.
const (
	RolloutRunning          = "Running"
	RolloutPaused           = "Paused"
	RolloutAwaitingDecision = "AwaitingDecision"
	RolloutRollingBack      = "RollingBack"
	RolloutSucceeded        = "Succeeded"
	RolloutFailed           = "Failed"
	RolloutRolledBack       = "RolledBack"
)

// StageStatus is one stage of a rollout.
type StageStatus struct {
	Name string `json:"name"`
	// State is Pending, WaitingForWindow, WaitingForApproval, Waiting (a timed wait),
	// Applying, Verifying (the health gate), Baking, Succeeded, Failed, RolledBack or
	// Skipped (no cluster).
	State    string `json:"state"`
	Clusters int    `json:"clusters"`
	// Changed counts the clusters the stage has applied to so far; Ready and NotReady
	// are from the last read of their live state, Failed counts failed applies.
	Changed  int `json:"changed"`
	Ready    int `json:"ready"`
	NotReady int `json:"notReady"`
	Failed   int `json:"failed"`
	// Budget is the stage's maxFailures.
	Budget int `json:"budget"`
	// Until is when the stage's current wait ends: the window opens, the wait or bake
	// ends, or the progress deadline passes.
	Until    *time.Time `json:"until,omitempty"`
	Started  *time.Time `json:"started,omitempty"`
	Ended    *time.Time `json:"ended,omitempty"`
	Approved []string   `json:"approved,omitempty"` // "before", "after": approvals given
	// FirstBatch and Batches locate its clusters among the context's batches.
	FirstBatch int    `json:"firstBatch"`
	Batches    int    `json:"batches"`
	Message    string `json:"message,omitempty"`
}

// Stage states.
const (
	StagePending            = "Pending"
	StageWaitingForWindow   = "WaitingForWindow"
	StageWaitingForApproval = "WaitingForApproval"
	StageWaiting            = "Waiting"
	StageApplying           = "Applying"
	StageVerifying          = "Verifying"
	StageBaking             = "Baking"
	StageSucceeded          = "Succeeded"
	StageFailed             = "Failed"
	StageRolledBack         = "RolledBack"
	StageSkipped            = "Skipped"
)

// RolloutRecord stores a rollout's status in its context.
type RolloutRecord struct {
	ContextID string        `json:"contextId"`
	Status    RolloutStatus `json:"status"`
}

// WindowInput asks where a stage's maintenance window stands at Now.
type WindowInput struct {
	Window rollout.Window `json:"window"`
	Now    time.Time      `json:"now"`
}

// NewRolloutStatus is the status of a rollout about to start: every stage Pending, or
// Skipped when it has no cluster.
func NewRolloutStatus(p *rollout.Plan) RolloutStatus {
	s := RolloutStatus{Strategy: p.Strategy, Rollback: p.Rollback, State: RolloutRunning}
	for _, st := range p.Stages {
		state := StagePending
		if st.Clusters == 0 {
			state = StageSkipped
		}
		s.Stages = append(s.Stages, StageStatus{Name: st.Name, State: state, Clusters: st.Clusters, Budget: st.MaxFailures,
			FirstBatch: st.FirstBatch, Batches: st.Batches})
	}
	return s
}
