package relocate

import (
	"github.com/temco/temco/activities/deps"
	"github.com/temco/temco/internal/core/lifecycle"
)

// Register registers Activities' methods on r, each as the activity it implements.
func Register(r lifecycle.Registry, d *deps.Deps) {
	a := &Activities{Store: d.Store, Contexts: d.Contexts, Ops: d.Ops}
	lifecycle.Register(r, lifecycle.PlanRelocation, a.PlanRelocation)
	lifecycle.RegisterNoResult(r, lifecycle.PlaceApp, a.PlaceApp)
	lifecycle.RegisterNoResult(r, lifecycle.UpdateDIG, a.UpdateDIG)
	lifecycle.RegisterNoResult(r, lifecycle.AwaitAppReady, a.AwaitAppReady)
}
