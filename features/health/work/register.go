package work

import (
	"github.com/temco/temco/activities/cluster"
	"github.com/temco/temco/activities/deps"
	"github.com/temco/temco/features/health/flow"
	core "github.com/temco/temco/internal/core/health"
	"github.com/temco/temco/internal/core/lifecycle"
)

// Register registers Activities' methods on r, each as the activity it implements, on the
// worker's shared cluster machinery.
func Register(r lifecycle.Registry, d *deps.Deps) {
	a := &Activities{Store: d.Store, Clusters: cluster.AccessOf(cluster.Shared(d)), Events: d.Events}
	if d.Store != nil { // nil: registered only to be listed (workers' tests)
		a.Health = core.Open(d.Store.Database())
	}
	lifecycle.Register(r, flow.ProbeClusters, a.ProbeClusters)
	lifecycle.RegisterNoResult(r, flow.RecordProbeRound, a.RecordProbeRound)
}
