package render

import (
	"runtime"

	"github.com/temco/temco/activities/cluster"
	"github.com/temco/temco/activities/deps"
	"github.com/temco/temco/internal/core/artifact/blobs"
	"github.com/temco/temco/internal/core/lifecycle"
)

// Register registers Activities' methods on r, each as the activity it implements; charts
// render in a child process when d.RenderMemory is set.
func Register(r lifecycle.Registry, d *deps.Deps) {
	a := &Activities{Store: d.Store, Contexts: d.Contexts, Capabilities: cluster.Shared(d).Clients.Capabilities,
		Blobs: deps.Shared(d, func() *blobs.Store { return blobs.StoreOf(d.Store) })}
	if d.RenderMemory > 0 {
		a.Sandbox = &Sandbox{Memory: d.RenderMemory, Spares: max(runtime.GOMAXPROCS(0), minSpares)}
	}
	lifecycle.Register(r, lifecycle.RenderApps, a.RenderApps)
	lifecycle.RegisterNoResult(r, lifecycle.RenderVariants, a.RenderVariants)
}
