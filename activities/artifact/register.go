package artifact

import (
	"go.temporal.io/sdk/worker"

	"github.com/temco/temco/activities/deps"
	"github.com/temco/temco/internal/core/artifact"
	"github.com/temco/temco/internal/core/lifecycle"
)

// ActivityNames are the activities Register registers.
var ActivityNames = []string{lifecycle.ActivityResolveArtifacts, lifecycle.ActivityFetchArtifact, lifecycle.ActivityPinImages}

// Register registers Activities on r.
func Register(r worker.Registry, d *deps.Deps) {
	r.RegisterActivity(&Activities{Store: d.Store, Contexts: d.Contexts, Keys: d.Keys, Allow: d.ArtifactHosts,
		Keyring: d.ChartKeyring, Blobs: deps.Shared(d, func() *artifact.Store { return artifact.StoreOf(d.Store) })})
}
