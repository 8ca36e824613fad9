package actions

import (
	"github.com/temco/temco/activities/cluster"
	"github.com/temco/temco/activities/deps"
	"github.com/temco/temco/controllers"
	"github.com/temco/temco/internal/core/lifecycle"
)

// Register registers Activities' methods on r, each as the activity it implements.
func Register(r lifecycle.Registry, d *deps.Deps) {
	a := &Activities{Store: d.Store, Contexts: d.Contexts, Builtin: d.Controllers,
		Deps: controllers.Deps{Store: d.Store, Contexts: d.Contexts, Keys: d.Keys, Admin: cluster.Shared(d).Clients.Admin, Ops: d.Ops}}
	lifecycle.Register(r, lifecycle.RunController, a.RunController)
	lifecycle.Register(r, lifecycle.ContextControllers, a.ContextControllers)
}
