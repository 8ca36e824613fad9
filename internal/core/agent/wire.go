package agent

import (
	"github.com/temco/temco/internal/core/appctx"
	"github.com/temco/temco/internal/core/lifecycle"
)

// What the api and temco agent send each other on /v2/agent/... (the agent's side is
// edgeagent, the api's api/agent.go).

// Joined answers a join: the agent's credential, shown once.
type Joined struct {
	Cluster    string `json:"cluster"`
	Credential string `json:"credential"`
}

// Work is an agent's work: every item published to its cluster, with what it last
// reported of each. Version names it: sent back as ?known with ?wait (up to Hold
// seconds), the poll is held until the work changes. Poll is when to ask again (seconds)
// from an api that holds none (Hold 0).
type Work struct {
	Cluster string     `json:"cluster"`
	Items   []WorkItem `json:"items"`
	Poll    int        `json:"poll"`
	Version string     `json:"version,omitempty"`
	Hold    int        `json:"hold,omitempty"`
}

// WorkItem is one item of Work.
type WorkItem struct {
	Item
	Reported *Outcome `json:"reported,omitempty"`
}

// Outcome is what an agent finished of an item: the generation it worked on, the counts
// of the apply or delete, and which revision the cluster now holds ("": none).
type Outcome struct {
	Gen     int64                   `json:"gen"`
	Result  lifecycle.ClusterResult `json:"result"`
	Applied string                  `json:"applied"`
	Error   string                  `json:"error,omitempty"`
}

// LiveApp is what an agent's cluster shows of one app's objects, index-aligned with the
// app's resources there.
type LiveApp struct {
	App     string        `json:"app"`
	Objects []appctx.Live `json:"objects"`
}
