package flow

import (
	"github.com/temco/temco/internal/core/capacity"
	"github.com/temco/temco/internal/core/lifecycle"
)

// The autoscaler of a DIG with a capacity placement (temco's own; docs/autoscaling.md): one
// Autoscale workflow per DIG, started when the capacity placement is stored, that reads its
// clusters' signals every evaluation interval, decides (capacity.Decide) and changes the
// DIG's clusters through the DIG's ordinary update (UpdateDIG).
const (
	WorkflowAutoscale = "Autoscale"
	OpAutoscale       = "autoscale" // the operation search attribute of autoscalers

	// lifecycle.SignalWake makes the autoscaler evaluate now (its capacity placement
	// changed); SignalPause, SignalResume and SignalStop pause it, resume it and end it.
	// QueryAutoscaler answers the autoscaler's AutoscaleState.
	QueryAutoscaler = "autoscaler"

	autoscalePrefix = "autoscale/"
)

// WorkflowID is the id of the DIG's autoscaler.
func WorkflowID(d lifecycle.Target) string {
	return autoscalePrefix + d.WorkflowID()[len("dig/"):]
}

// AutoscaleInput starts an autoscaler; Name (its capacity placement) and State carry it
// over a continue-as-new.
type AutoscaleInput struct {
	DIG   lifecycle.Target          `json:"dig"`
	Name  string                    `json:"name,omitempty"`
	State *lifecycle.AutoscaleState `json:"state,omitempty"`
}

// AutoscaleEventsKept bounds the decisions an autoscaler's record keeps (the workflow's
// history has them all).
const AutoscaleEventsKept = 50

// CapacitySignalsInput reads one cluster's signals for a DIG's workloads.
type CapacitySignalsInput struct {
	DIG       lifecycle.Target    `json:"dig"`
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

func init() { lifecycle.DeclareWorkflows(WorkflowAutoscale) }

// work (work.Activities): a cluster's signals, and the drain of its
// HPAs.
var byAutoscale = lifecycle.Implementer{Package: "features/autoscale/work", Struct: "Activities"}

var (
	CapacitySignals = lifecycle.Declare[CapacitySignalsInput, capacity.Signals](byAutoscale, "CapacitySignals")
	DrainCapacity   = lifecycle.Declare[CapacityDrainInput, lifecycle.None](byAutoscale, "DrainCapacity")
)
