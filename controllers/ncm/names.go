package ncm

import (
	"github.com/temco/temco/internal/core/lifecycle"
)

// ActivityNames are the activities this package implements (workers registers them): a cluster network's preparation.
var ActivityNames = []string{lifecycle.ActivityPrepareClusterNetwork}
