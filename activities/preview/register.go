package preview

import (
	"go.temporal.io/sdk/worker"

	"github.com/temco/temco/activities/deps"
	"github.com/temco/temco/internal/core/lifecycle"
)

// ActivityNames are the activities Register registers: a rollout preview's steps.
var ActivityNames = []string{lifecycle.ActivityBeginPreview, lifecycle.ActivityPreviewControllers, lifecycle.ActivityDiffPreview,
	lifecycle.ActivityDeletePreview}

// Register registers Activities on r.
func Register(r worker.Registry, d *deps.Deps) {
	r.RegisterActivity(&Activities{Store: d.Store, Contexts: d.Contexts, Builtin: d.Controllers})
}
