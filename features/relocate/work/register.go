package work

import (
	"github.com/temco/temco/activities/deps"
	"github.com/temco/temco/features/relocate/flow"
	"github.com/temco/temco/internal/core/lifecycle"
)

// Register registers Activities' methods on r, each as the activity it implements.
func Register(r lifecycle.Registry, d *deps.Deps) {
	a := &Activities{Store: d.Store, Contexts: d.Contexts, Ops: d.Ops}
	lifecycle.Register(r, flow.PlanRelocation, a.PlanRelocation)
	lifecycle.RegisterNoResult(r, flow.PlaceApp, a.PlaceApp)
	lifecycle.RegisterNoResult(r, flow.AwaitAppReady, a.AwaitAppReady)
}
