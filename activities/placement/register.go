package placement

import (
	"github.com/temco/temco/activities/deps"
	"github.com/temco/temco/controllers"
	"github.com/temco/temco/internal/core/lifecycle"
)

// Register registers Activities' methods on r, each as the activity it implements.
func Register(r lifecycle.Registry, d *deps.Deps) {
	a := &Activities{Store: d.Store, Contexts: d.Contexts, ClustersPerBatch: d.ClustersPerBatch, Events: d.Events,
		FanOut: controllers.FanOuts(d.Controllers)}
	lifecycle.Register(r, lifecycle.PlaceApps, a.PlaceApps)
	lifecycle.Register(r, lifecycle.CommitControllers, a.CommitControllers)
	lifecycle.Register(r, lifecycle.ObserveCapacity, a.ObserveCapacity)
	lifecycle.RegisterNoResult(r, lifecycle.RecordCapacity, a.RecordCapacity)
}
