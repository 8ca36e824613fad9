package operation

import (
	"go.temporal.io/sdk/worker"

	"github.com/temco/temco/activities/deps"
	"github.com/temco/temco/internal/core/lifecycle"
	"github.com/temco/temco/internal/core/snapshot"
)

// ActivityNames are the activities Register registers: Activities' record of operations,
// migrates and rollouts, and Holds', the hold of a migrate's origin.
var ActivityNames = []string{
	lifecycle.ActivityBeginOperation, lifecycle.ActivityFinishOperation, lifecycle.ActivityCopyContext,
	lifecycle.ActivityRecordRollout, lifecycle.ActivityRolloutWindow,
	lifecycle.ActivityBeginHold, lifecycle.ActivityBeginMigrate, lifecycle.ActivityFinishMigrate,
	lifecycle.ActivityHoldDIG, lifecycle.ActivityAwaitHolder,
}

// Register registers Activities and Holds on r.
func Register(r worker.Registry, d *deps.Deps) {
	a := &Activities{Store: d.Store, Contexts: d.Contexts, ClustersPerBatch: d.ClustersPerBatch}
	if d.Store != nil { // registrations are also listed without a store (workers' tests)
		a.Snapshots = snapshot.Open(d.Store.Database())
	}
	r.RegisterActivity(a)
	r.RegisterActivity(&Holds{Ops: d.Ops})
}
