package render

import (
	"go.temporal.io/sdk/worker"

	"github.com/temco/temco/activities/cluster"
	"github.com/temco/temco/activities/deps"
	"github.com/temco/temco/internal/core/artifact"
	"github.com/temco/temco/internal/core/lifecycle"
)

// ActivityNames are the activities Register registers: the rendering of a context's
// charts, and again per set of cluster capabilities.
var ActivityNames = []string{lifecycle.ActivityRenderApps, lifecycle.ActivityRenderVariants}

// Register registers Activities on r; charts render in a child process when
// d.RenderMemory is set.
func Register(r worker.Registry, d *deps.Deps) {
	a := &Activities{Store: d.Store, Contexts: d.Contexts, Capabilities: cluster.Shared(d).Clients.Capabilities,
		Blobs: deps.Shared(d, func() *artifact.Store { return artifact.StoreOf(d.Store) })}
	if d.RenderMemory > 0 {
		a.Sandbox = &Sandbox{Memory: d.RenderMemory}
	}
	r.RegisterActivity(a)
}
