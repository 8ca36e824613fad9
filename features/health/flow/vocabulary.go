package flow

import (
	"time"

	"github.com/temco/temco/internal/core/lifecycle"
)

// Cluster health (docs/api.md, "Cluster reachability"): one ClusterHealth workflow per temco,
// started by the api (the feature's Wake), that probes every registered cluster's
// API server round after round, a page of clusters per activity (ProbeClusters),
// and stores what changed (internal/core/health). SignalWake starts a round at once.
const (
	WorkflowClusterHealth = "ClusterHealth"
	ClusterHealthID       = "cluster-health" // its workflow id: one per namespace
)

// HealthInput paces the probes: a round every Interval (from one's start to the next's),
// PageSize clusters per activity.
type HealthInput struct {
	Interval time.Duration `json:"interval"`
	PageSize int           `json:"pageSize"`
}

// ProbePage asks for the page of clusters after the key After (provider+cluster; "" for
// the first), at most Limit of them.
type ProbePage struct {
	After string `json:"after"`
	Limit int    `json:"limit"`
}

// ProbedPage is what a page's probes found: Last is the page's last key ("" when there
// was no cluster after After: the round is over), and counts by reachability.
type ProbedPage struct {
	Last   string         `json:"last"`
	States map[string]int `json:"states,omitempty"`
}

func init() { lifecycle.DeclareWorkflows(WorkflowClusterHealth) }

// work (work.Activities): a page of clusters probed, and the end of a round
// of probes recorded (when it started).
var byHealth = lifecycle.Implementer{Package: "features/health/work", Struct: "Activities"}

var (
	ProbeClusters    = lifecycle.Declare[ProbePage, ProbedPage](byHealth, "ProbeClusters")
	RecordProbeRound = lifecycle.Declare[time.Time, lifecycle.None](byHealth, "RecordProbeRound")
)
