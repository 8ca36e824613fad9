package agent

import (
	"github.com/temco/temco/internal/core/appctx"
	"github.com/temco/temco/internal/core/drift"
)

// Drift is what an agent found comparing the objects a revision applied on its cluster
// with the live ones (features/drift/detect, the drift check's own comparison): POST
// /v2/agent/revisions/{context}/drift, sent only when it changed since the agent's last.
type Drift struct {
	InSync  int           `json:"inSync"`          // objects as applied
	Error   string        `json:"error,omitempty"` // why the cluster could not be compared
	Objects []DriftObject `json:"objects,omitempty"`
}

// DriftObject is one object of the revision that is not as applied: deleted, or the
// fields that differ.
type DriftObject struct {
	App     string        `json:"app"`
	Ref     appctx.Ref    `json:"ref"` // as the revision's statuses name it: the namespace it was applied to
	Missing bool          `json:"missing,omitempty"`
	Fields  []drift.Field `json:"fields,omitempty"`
	Error   string        `json:"error,omitempty"`
}

// The bounds of a drift report, which the api refuses past and the agent keeps within: a
// report names what changed, it is no copy of the objects.
const (
	MaxDriftFields       = 100  // fields of one object
	MaxDriftReportFields = 500  // fields of one report
	MaxDriftPath         = 512  // bytes of a field's path
	MaxDriftValue        = 1024 // bytes of a live or desired value (drift.Compare cuts them at 512 and an ellipsis)
	MaxDriftError        = 4096 // bytes of an error (the agent cuts; the api clips)
)
