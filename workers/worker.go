// Package workers registers temco's workflows and activities on a Temporal worker.
package workers

import (
	"context"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/temco/temco/activities/actions"
	"github.com/temco/temco/activities/cluster"
	driftchecks "github.com/temco/temco/activities/drift"
	"github.com/temco/temco/activities/logicalcloud"
	"github.com/temco/temco/activities/operation"
	"github.com/temco/temco/activities/placement"
	previews "github.com/temco/temco/activities/preview"
	relocations "github.com/temco/temco/activities/relocate"
	"github.com/temco/temco/activities/render"
	"github.com/temco/temco/controllers"
	"github.com/temco/temco/controllers/cacerts"
	"github.com/temco/temco/controllers/ncm"
	"github.com/temco/temco/internal/appctx"
	"github.com/temco/temco/internal/credentials"
	"github.com/temco/temco/internal/gitops"
	"github.com/temco/temco/internal/lifecycle"
	"github.com/temco/temco/internal/metrics"
	"github.com/temco/temco/internal/seal"
	"github.com/temco/temco/internal/store"
	"github.com/temco/temco/starter"
	"github.com/temco/temco/workflows/deploy"
	"github.com/temco/temco/workflows/dig"
	"github.com/temco/temco/workflows/drift"
	"github.com/temco/temco/workflows/preview"
	"github.com/temco/temco/workflows/relocate"
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
	Metrics          *metrics.Clusters // nil: not recorded
	// Ops operates on DIGs from activities (tac's worker DIGs, migrate, relocate); New
	// sets it from the worker's client when nil.
	Ops *starter.Starter
	// Git commits the desired state of clusters reached through GitOps (nil: they fail).
	Git *gitops.Writer
	// Render runs each chart's rendering in a child process (nil: in the worker's own).
	Render *render.Sandbox
	report func(context.Context, string, string, lifecycle.ClusterRetry) error
}

// Workflows maps each workflow type name to its function; replay tests use it too.
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
	lifecycle.WorkflowRelocate:    relocate.Relocate,
	lifecycle.WorkflowDrift:       drift.Drift,
	lifecycle.WorkflowDriftBatch:  deploy.DriftBatch,

	lifecycle.WorkflowPreviewRollout: preview.PreviewRollout, // POST DIG/rollout-preview
}

// Options tune the worker: cluster activities mostly wait on the network, so many run at once.
var Options = worker.Options{
	MaxConcurrentActivityExecutionSize:     400,
	MaxConcurrentWorkflowTaskExecutionSize: 100,
}

// New creates a worker on taskQueue with everything registered; its activities report
// retrying clusters to their workflows through c.
func New(c client.Client, taskQueue string, d Deps) worker.Worker {
	w := worker.New(c, taskQueue, Options)
	if d.Ops == nil {
		d.Ops = &starter.Starter{Client: c, TaskQueue: taskQueue}
	}
	d.report = func(ctx context.Context, workflowID, runID string, r lifecycle.ClusterRetry) error {
		return c.SignalWorkflow(ctx, workflowID, runID, lifecycle.SignalClusterRetrying, r)
	}
	Register(w, d)
	return w
}

// Register adds the workflows and activities to a worker (or a test environment).
func Register(w worker.Registry, d Deps) {
	for name, fn := range Workflows {
		w.RegisterWorkflowWithOptions(fn, workflow.RegisterOptions{Name: name})
	}
	clients := &cluster.Clients{Store: d.Store, Keys: d.Keys, Credentials: d.Credentials, Git: d.Git}
	onClusters := &cluster.Activities{Clients: clients, Contexts: d.Contexts, Metrics: d.Metrics, Report: d.report}
	w.RegisterActivity(&operation.Activities{Store: d.Store, Contexts: d.Contexts, ClustersPerBatch: d.ClustersPerBatch})
	w.RegisterActivity(&operation.Holds{Ops: d.Ops})
	w.RegisterActivity(&driftchecks.Activities{Store: d.Store, Contexts: d.Contexts})
	w.RegisterActivity(&relocations.Activities{Store: d.Store, Contexts: d.Contexts, Ops: d.Ops})
	w.RegisterActivity(&render.Activities{Store: d.Store, Contexts: d.Contexts, Capabilities: clients.Capabilities, Sandbox: d.Render})
	w.RegisterActivity(&previews.Activities{Store: d.Store, Contexts: d.Contexts, Builtin: d.Controllers})
	w.RegisterActivity(&placement.Activities{Store: d.Store, Contexts: d.Contexts, ClustersPerBatch: d.ClustersPerBatch,
		FanOut: controllers.FanOuts(d.Controllers)})
	w.RegisterActivity(&actions.Activities{Store: d.Store, Contexts: d.Contexts, Builtin: d.Controllers,
		Deps: controllers.Deps{Store: d.Store, Contexts: d.Contexts, Keys: d.Keys, Admin: clients.Admin, Ops: d.Ops}})
	w.RegisterActivity(onClusters)
	w.RegisterActivity(&logicalcloud.Activities{Store: d.Store, Contexts: d.Contexts, Credentials: d.Credentials,
		Clients: clients, Cluster: onClusters})
	w.RegisterActivity(&ncm.Activities{Store: d.Store, Contexts: d.Contexts})
	w.RegisterActivity(&cacerts.Activities{Store: d.Store, Contexts: d.Contexts, Keys: cacerts.NewKeys(d.Store, d.Keys),
		Clients: clients, Cluster: onClusters})
}
