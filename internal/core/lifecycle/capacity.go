package lifecycle

import (
	"time"

	"github.com/temco/temco/internal/core/capacity"
)

// The autoscaler of a DIG with a capacity placement (temco's own; docs/autoscaling.md): one
// Autoscale workflow per DIG, started when the capacity placement is stored, that reads its
// clusters' signals every evaluation interval, decides (capacity.Decide) and changes the
// DIG's clusters through the DIG's ordinary update (UpdateDIG).
const (
	WorkflowAutoscale = "Autoscale"
	OpAutoscale       = "autoscale" // the operation search attribute of autoscalers

	// SignalWake makes the autoscaler evaluate now (its capacity placement changed);
	// SignalPause, SignalResume and SignalStop pause it, resume it and end it.
	SignalWake = "wake"
	// QueryAutoscaler answers the autoscaler's AutoscaleState.
	QueryAutoscaler = "autoscaler"

	autoscalePrefix = "autoscale/"
)

// AutoscaleWorkflowID is the id of the DIG's autoscaler.
func (d Target) AutoscaleWorkflowID() string {
	return autoscalePrefix + d.WorkflowID()[len("dig/"):]
}

// AutoscaleInput starts an autoscaler; Name (its capacity placement) and State carry it
// over a continue-as-new.
type AutoscaleInput struct {
	DIG   Target          `json:"dig"`
	Name  string          `json:"name,omitempty"`
	State *AutoscaleState `json:"state,omitempty"`
}

// AutoscaleState is where the autoscaler stands: its members, whether it is paused, the
// update it started and waits for, and its last evaluation. The workflow holds it; every
// evaluation records it in the store, where placement reads the members and the status
// shows it.
type AutoscaleState struct {
	Members []capacity.Member `json:"members"`
	Paused  bool              `json:"paused,omitempty"`
	// Update is the context of the update carrying the last change of the members, until
	// that update has ended.
	Update string `json:"update,omitempty"`
	// Last is the last evaluation; Events the decisions that changed something, newest
	// last (at most AutoscaleEventsKept).
	Last   *Evaluation  `json:"last,omitempty"`
	Events []Evaluation `json:"events,omitempty"`
}

// AutoscaleEventsKept bounds the decisions an autoscaler's record keeps (the workflow's
// history has them all).
const AutoscaleEventsKept = 50

// Evaluation is one evaluation: when, what it read, what it decided and why (Waiting:
// why it decided nothing), and how the update that carried it ended.
type Evaluation struct {
	At       time.Time                   `json:"at"`
	Waiting  string                      `json:"waiting,omitempty"`
	Signals  map[string]capacity.Signals `json:"signals,omitempty"`
	Decision *capacity.Decision          `json:"decision,omitempty"`
	Summary  string                      `json:"summary,omitempty"`
	Update   string                      `json:"update,omitempty"` // the update's context
	Outcome  string                      `json:"outcome,omitempty"`
}

// CapacityView is what an evaluation starts from, read from the store: the capacity
// placement (Name "" when there is none: the autoscaler ends), whether the DIG can be
// changed now (Waiting says why not), its running context and the clusters the
// workloads run on there, and the eligible clusters in order of preference.
type CapacityView struct {
	Name string        `json:"name,omitempty"`
	Spec capacity.Spec `json:"spec"`
	// Waiting: the DIG is not Instantiated, or an operation runs or failed on it.
	Waiting string `json:"waiting,omitempty"`
	// Deployed: the DIG is Instantiated (a DIG that is not forgets its members).
	Deployed  bool     `json:"deployed,omitempty"`
	ContextID string   `json:"contextId,omitempty"`
	Placed    []string `json:"placed,omitempty"` // only when asked to Seed
	Eligible  []string `json:"eligible,omitempty"`
}

// CapacityObserveInput asks for a DIG's CapacityView; Seed asks for its Placed clusters too
// (the autoscaler has no members yet), which reads every placement of the context. The DIG
// is inline: the input of a Target alone reads the same.
type CapacityObserveInput struct {
	Target
	Seed bool `json:"seed,omitempty"`
}

// CapacitySignalsInput reads one cluster's signals for a DIG's workloads.
type CapacitySignalsInput struct {
	DIG       Target              `json:"dig"`
	ContextID string              `json:"contextId"`
	Cluster   string              `json:"cluster"`
	Workloads []capacity.Workload `json:"workloads"`
	Floor     int                 `json:"floor,omitempty"` // the drain's maximum (0: the HPA's minimum)
}

// CapacityDrainInput lowers (Restore: gives back) the maximum of the workloads' HPAs on a
// cluster.
type CapacityDrainInput struct {
	CapacitySignalsInput
	Restore bool `json:"restore,omitempty"`
}

// CapacityRecord records an autoscaler's state for placement and status.
type CapacityRecord struct {
	DIG   Target         `json:"dig"`
	Name  string         `json:"name"`
	State AutoscaleState `json:"state"`
}
