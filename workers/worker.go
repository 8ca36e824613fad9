// Package workers registers temco's workflows and activities on a Temporal worker.
package workers

import (
	"context"
	"maps"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/interceptor"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/temco/temco/activities/actions"
	"github.com/temco/temco/activities/artifact"
	"github.com/temco/temco/activities/cluster"
	"github.com/temco/temco/activities/deps"
	"github.com/temco/temco/activities/logicalcloud"
	"github.com/temco/temco/activities/operation"
	"github.com/temco/temco/activities/placement"
	"github.com/temco/temco/activities/render"
	"github.com/temco/temco/features"
	"github.com/temco/temco/features/registry"
	"github.com/temco/temco/internal/core/events/feed"
	"github.com/temco/temco/internal/core/lifecycle"
	"github.com/temco/temco/starter"
	"github.com/temco/temco/workflows/deploy"
	"github.com/temco/temco/workflows/dig"
)

// Deps are what the activities need.
type Deps = deps.Deps

// domains register the core's activities: each builds its structs from the one Deps and
// registers their methods, each as the lifecycle.Activity it implements (its register.go).
// The features' come from the features enabled (Feature.Activities).
var domains = []func(lifecycle.Registry, *deps.Deps){
	operation.Register, artifact.Register, render.Register, placement.Register, actions.Register,
	cluster.Register, logicalcloud.Register, registerNCM, registerCACerts,
}

// Workflows maps each of the core's workflow types to its function; the features' are in
// their Feature.Workflows.
var Workflows = map[string]any{
	lifecycle.WorkflowDIG:         dig.Lifecycle,
	lifecycle.WorkflowInstantiate: deploy.Instantiate,
	lifecycle.WorkflowTerminate:   deploy.Terminate,
	lifecycle.WorkflowUpdate:      deploy.Update,
	lifecycle.WorkflowRollback:    deploy.Rollback,
	lifecycle.WorkflowMigrate:     deploy.Migrate,
	lifecycle.WorkflowPruneBatch:  deploy.PruneBatch,
	lifecycle.WorkflowApplyBatch:  deploy.ApplyBatch,
	lifecycle.WorkflowDeleteBatch: deploy.DeleteBatch,
	lifecycle.WorkflowReadStatus:  deploy.ReadClusterStatus,
	lifecycle.WorkflowReadBatch:   deploy.ReadBatch,
}

// AllWorkflows are every workflow type temco has, the core's and every feature's, whether
// a worker has it enabled or not: replay needs them all, as histories of a feature an
// operator switched off later are still replayed.
func AllWorkflows() map[string]any { return workflowsOf(registry.All) }

// workflowsOf are the core's workflows and those of the features.
func workflowsOf(on []features.Feature) map[string]any {
	out := maps.Clone(Workflows)
	for _, f := range on {
		maps.Copy(out, f.Workflows)
	}
	return out
}

// Options tune the worker: cluster activities mostly wait on the network, so many run at
// once. Heartbeats go out every 3 s at most, and each call is given 3 s (Temporal's client
// waits 80 % of the HeartbeatTimeout otherwise): a cluster activity's 10 s timeout then
// leaves room for a round trip on a loaded server (a group whose clusters all wait for
// slots heartbeats every 8 s against 15 s, workflows/deploy). A workflow task queued for this
// worker alone (its sticky queue: it holds the workflow in memory) goes to any worker
// after 1 s rather than Temporal's 5: a live worker takes one in milliseconds, while one
// queued for a worker that died, or queued when the Temporal server died, held its
// workflow 5 s (bench-restart's timelines).
var Options = worker.Options{
	MaxConcurrentActivityExecutionSize:     400,
	MaxConcurrentWorkflowTaskExecutionSize: 100,
	MaxHeartbeatThrottleInterval:           3 * time.Second,
	StickyScheduleToStartTimeout:           time.Second,
	Interceptors:                           []interceptor.WorkerInterceptor{&keepAlive{}},
}

// New creates a worker on taskQueue, named identity, with the core's workflows and
// activities registered and those of the features on; unless d says otherwise,
// its activities operate on DIGs (d.Ops) and report retrying clusters to their workflows
// (d.Report) through c.
func New(c client.Client, taskQueue, identity string, d Deps, on []features.Feature) worker.Worker {
	o := Options
	o.Identity = identity
	o.BuildID = buildID() // in place of the SDK's checksum of the executable; no versioning
	w := worker.New(c, taskQueue, o)
	if d.Ops == nil {
		d.Ops = &starter.Starter{Client: c, TaskQueue: taskQueue}
	}
	if d.Events == nil && d.Store != nil {
		d.Events = emitter(d, on)
	}
	if d.Report == nil {
		d.Report = func(ctx context.Context, workflowID, runID string, r lifecycle.ClusterRetry) error {
			return c.SignalWorkflow(ctx, workflowID, runID, lifecycle.SignalClusterRetrying, r)
		}
	}
	Register(w, d, on)
	return w
}

// Register adds the core's workflows and activities, and those of the features on, to a
// worker (or a test environment).
func Register(w worker.Registry, d Deps, on []features.Feature) {
	for name, fn := range workflowsOf(on) {
		w.RegisterWorkflowWithOptions(fn, workflow.RegisterOptions{Name: name})
	}
	for _, register := range domains {
		register(w, &d)
	}
	for _, f := range on {
		if f.Activities != nil {
			f.Activities(w, &d)
		}
	}
}

// emitter raises the activities' events into the feed, and hands them to the receivers
// through the feature that delivers them (notify), if it is on.
func emitter(d Deps, on []features.Feature) *feed.Emitter {
	em := &feed.Emitter{Store: d.Store, Feed: feed.Open(d.Store.Database())}
	for _, f := range on {
		if f.Deliver != nil {
			em.Deliver = f.Deliver(d.Ops)
		}
	}
	return em
}
