package lifecycle

import (
	"time"

	"github.com/temco/temco/internal/core/capacity"
)

// A DIG's capacity placement and its autoscaler's record (docs/autoscaling.md): the
// autoscaler is the autoscale feature's (features/autoscale), but placement, in the core,
// places a capacity placement's apps on the members it recorded, and reads and writes that
// record for it (ObserveCapacity, RecordCapacity), so the record's vocabulary is here.

// SignalWake has a long-running workflow act now rather than at its next turn: the
// autoscaler evaluates, an inventory syncs, the cluster probes start a round.
const SignalWake = "wake"

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

// CapacityRecord records an autoscaler's state for placement and status.
type CapacityRecord struct {
	DIG   Target         `json:"dig"`
	Name  string         `json:"name"`
	State AutoscaleState `json:"state"`
}
