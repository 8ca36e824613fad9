package drift

import (
	"github.com/temco/temco/activities/cluster"
	"github.com/temco/temco/activities/deps"
	"github.com/temco/temco/internal/core/lifecycle"
)

// Register registers Activities' methods on r, each as the activity it implements, on the
// worker's shared cluster machinery.
func Register(r lifecycle.Registry, d *deps.Deps) {
	a := &Activities{Store: d.Store, Contexts: d.Contexts, Clusters: cluster.AccessOf(cluster.Shared(d))}
	lifecycle.Register(r, lifecycle.PlanDriftCheck, a.PlanDriftCheck)
	lifecycle.RegisterNoResult(r, lifecycle.RecordDriftCheck, a.RecordDriftCheck)
	lifecycle.Register(r, lifecycle.DriftBatchClusters, a.DriftBatchClusters)
	lifecycle.Register(r, lifecycle.DetectDrift, a.DetectDrift)
	lifecycle.Register(r, lifecycle.DetectDriftGroup, a.DetectDriftGroup)
}
