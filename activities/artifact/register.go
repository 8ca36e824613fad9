package artifact

import (
	"github.com/temco/temco/activities/deps"
	"github.com/temco/temco/internal/core/artifact/blobs"
	"github.com/temco/temco/internal/core/lifecycle"
)

// Register registers Activities' methods on r, each as the activity it implements.
func Register(r lifecycle.Registry, d *deps.Deps) {
	a := &Activities{Store: d.Store, Contexts: d.Contexts, Keys: d.Keys, Allow: d.ArtifactHosts, Events: d.Events,
		Keyring: d.ChartKeyring, Blobs: deps.Shared(d, func() *blobs.Store { return blobs.StoreOf(d.Store) })}
	lifecycle.Register(r, lifecycle.ResolveArtifacts, a.ResolveArtifacts)
	lifecycle.RegisterNoResult(r, lifecycle.FetchArtifact, a.FetchArtifact)
	lifecycle.RegisterNoResult(r, lifecycle.PinImages, a.PinImages)
}
