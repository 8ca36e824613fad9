package work

import (
	"github.com/temco/temco/activities/cluster"
	"github.com/temco/temco/activities/deps"
	"github.com/temco/temco/features/drift/flow"
	"github.com/temco/temco/internal/core/lifecycle"
)

// Register registers Activities' methods on r, each as the activity it implements, on the
// worker's shared cluster machinery.
func Register(r lifecycle.Registry, d *deps.Deps) {
	a := &Activities{Store: d.Store, Contexts: d.Contexts, Clusters: cluster.AccessOf(cluster.Shared(d)), Events: d.Events}
	lifecycle.Register(r, flow.PlanDriftCheck, a.PlanDriftCheck)
	lifecycle.RegisterNoResult(r, flow.RecordDriftCheck, a.RecordDriftCheck)
	lifecycle.Register(r, flow.DriftBatchClusters, a.DriftBatchClusters)
	lifecycle.Register(r, flow.DetectDrift, a.DetectDrift)
	lifecycle.Register(r, flow.DetectDriftGroup, a.DetectDriftGroup)
}
