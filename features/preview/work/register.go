package work

import (
	"github.com/temco/temco/activities/deps"
	"github.com/temco/temco/features/preview/flow"
	"github.com/temco/temco/internal/core/lifecycle"
)

// Register registers Activities' methods on r, each as the activity it implements.
func Register(r lifecycle.Registry, d *deps.Deps) {
	a := &Activities{Store: d.Store, Contexts: d.Contexts, Builtin: d.Controllers}
	lifecycle.Register(r, flow.BeginPreview, a.BeginPreview)
	lifecycle.Register(r, flow.PreviewControllers, a.PreviewControllers)
	lifecycle.Register(r, flow.DiffPreview, a.DiffPreview)
	lifecycle.RegisterNoResult(r, flow.DeletePreview, a.DeletePreview)
}
