// Package deps is what a worker's activity domains are built from.
//
// Each domain (activities/operation, activities/cluster, ...; controllers/ncm's and
// controllers/cacerts' in workers/controllers.go) has a register.go: Register(r, d) builds
// its activity structs from the one *Deps and registers their methods, each as the
// internal/core/lifecycle activity it implements (lifecycle.Register). workers loops over
// the domains. This package sits below every domain and imports none of them, so what one
// domain owns and others use (activities/cluster's clients and per-cluster activities) is
// built by its owner on first use and kept here (Shared): one per worker, whichever domain
// asks first.
package deps

import (
	"context"
	"reflect"

	"github.com/temco/temco/controllers"
	"github.com/temco/temco/internal/adapters/credentials"
	"github.com/temco/temco/internal/adapters/egress"
	"github.com/temco/temco/internal/adapters/gitops"
	"github.com/temco/temco/internal/adapters/metrics"
	"github.com/temco/temco/internal/core/appctx"
	"github.com/temco/temco/internal/core/events/feed"
	"github.com/temco/temco/internal/core/lifecycle"
	"github.com/temco/temco/internal/core/seal"
	"github.com/temco/temco/internal/core/store"
	"github.com/temco/temco/starter"
)

// Deps are what the activities need.
type Deps struct {
	Store       *store.Store
	Contexts    *appctx.Store
	Credentials *credentials.Store
	Keys        *seal.Keyring
	Controllers []controllers.Builtin // the built-in intent controllers (controllers/registry)
	// ClustersPerBatch sizes the fan-out batches (0: the default).
	ClustersPerBatch int
	// MaxConns bounds the cluster connections and HTTP transports kept (0: the default).
	MaxConns int
	Metrics  *metrics.Clusters // nil: not recorded
	// Ops operates on DIGs from activities (tac's worker DIGs, migrate, relocate).
	Ops *starter.Starter
	// Git commits the desired state of clusters reached through GitOps (nil: they fail).
	Git *gitops.Writer
	// RenderMemory bounds, in bytes, the child process each chart renders in
	// (render.Sandbox); 0: charts render in the worker's own process (tests).
	RenderMemory int64
	// ArtifactHosts are the registries and repositories charts may come from (nil: none).
	ArtifactHosts *egress.Allow
	// ChartKeyring is the path of the public GPG keyring charts' provenance must be signed
	// with ("": provenance is not checked).
	ChartKeyring string
	// PolicyEngines are the OPA servers policy intents may name (nil: none).
	PolicyEngines *egress.Allow
	// NotifyHosts are the hosts notification receivers may be on (nil: none).
	NotifyHosts *egress.Allow
	// Events raises the events activities find (nil: none is raised).
	Events *feed.Emitter
	// TaskQueueGrants are the task queues an admin granted projects besides their own
	// (TEMCO_WORKFLOW_TASK_QUEUES, as the api has them): what a policy's decision may use.
	TaskQueueGrants map[string][]string
	// Report tells a workflow that one of its clusters is being retried (nil: nobody is).
	Report func(ctx context.Context, workflowID, runID string, r lifecycle.ClusterRetry) error

	shared map[reflect.Type]any // see Shared
}

// Shared returns d's one value of type T, made by build the first time it is asked for.
// Registration is sequential, so it takes no lock.
func Shared[T any](d *Deps, build func() T) T {
	key := reflect.TypeFor[T]()
	if v, ok := d.shared[key]; ok {
		return v.(T)
	}
	v := build()
	if d.shared == nil {
		d.shared = map[reflect.Type]any{}
	}
	d.shared[key] = v
	return v
}
