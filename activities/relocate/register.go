package relocate

import (
	"go.temporal.io/sdk/worker"

	"github.com/temco/temco/activities/deps"
	"github.com/temco/temco/internal/core/lifecycle"
)

// ActivityNames are the activities Register registers: the Relocate workflow's steps.
var ActivityNames = []string{lifecycle.ActivityPlanRelocation, lifecycle.ActivityPlaceApp, lifecycle.ActivityUpdateDIG,
	lifecycle.ActivityAwaitAppReady}

// Register registers Activities on r.
func Register(r worker.Registry, d *deps.Deps) {
	r.RegisterActivity(&Activities{Store: d.Store, Contexts: d.Contexts, Ops: d.Ops})
}
