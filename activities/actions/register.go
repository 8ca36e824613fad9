package actions

import (
	"go.temporal.io/sdk/worker"

	"github.com/temco/temco/activities/cluster"
	"github.com/temco/temco/activities/deps"
	"github.com/temco/temco/controllers"
	"github.com/temco/temco/internal/core/lifecycle"
)

// ActivityNames are the activities Register registers: a built-in intent controller's
// step, and the controllers of a context.
var ActivityNames = []string{lifecycle.ActivityRunController, lifecycle.ActivityContextControllers}

// Register registers Activities on r.
func Register(r worker.Registry, d *deps.Deps) {
	r.RegisterActivity(&Activities{Store: d.Store, Contexts: d.Contexts, Builtin: d.Controllers,
		Deps: controllers.Deps{Store: d.Store, Contexts: d.Contexts, Keys: d.Keys, Admin: cluster.Shared(d).Clients.Admin, Ops: d.Ops}})
}
