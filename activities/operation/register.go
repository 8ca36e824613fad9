package operation

import (
	"github.com/temco/temco/activities/deps"
	"github.com/temco/temco/internal/core/lifecycle"
	"github.com/temco/temco/internal/core/snapshot"
)

// Register registers the methods of Activities, Holds and Updates on r, each as the activity it
// implements.
func Register(r lifecycle.Registry, d *deps.Deps) {
	a := &Activities{Store: d.Store, Contexts: d.Contexts, ClustersPerBatch: d.ClustersPerBatch, Events: d.Events}
	if d.Store != nil { // registrations are also listed without a store (workers' tests)
		a.Snapshots = snapshot.Open(d.Store.Database())
	}
	lifecycle.Register(r, lifecycle.BeginOperation, a.BeginOperation)
	lifecycle.RegisterNoResult(r, lifecycle.FinishOperation, a.FinishOperation)
	lifecycle.Register(r, lifecycle.CopyContext, a.CopyContext)
	lifecycle.RegisterNoResult(r, lifecycle.RecordRollout, a.RecordRollout)
	lifecycle.Register(r, lifecycle.RolloutWindow, a.RolloutWindow)
	lifecycle.Register(r, lifecycle.BeginHold, a.BeginHold)
	lifecycle.Register(r, lifecycle.BeginMigrate, a.BeginMigrate)
	lifecycle.RegisterNoResult(r, lifecycle.FinishMigrate, a.FinishMigrate)

	h := &Holds{Ops: d.Ops}
	lifecycle.Register(r, lifecycle.HoldDIG, h.HoldDIG)
	lifecycle.RegisterNoResult(r, lifecycle.AwaitHolder, h.AwaitHolder)

	u := &Updates{Store: d.Store, Contexts: d.Contexts, Ops: d.Ops}
	lifecycle.RegisterNoResult(r, lifecycle.UpdateDIG, u.UpdateDIG)
}
