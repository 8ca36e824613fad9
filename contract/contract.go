// Package contract is what an intent controller sees of temco. A controller is a Temporal
// activity named ActivityName; temco's lifecycle workflows call it once per intent named in
// a DIG, placement controllers first, then action controllers, each group by priority.
// Built-in controllers run in temco's worker; a controller outside this repository imports
// this package and contract/remote, runs a worker on its own task queue (remote.Serve) and
// is registered with that queue in spec.taskQueue of /v2/controllers.
//
// A controller reads the new AppContext through Context and records edits there. temco
// keeps each controller's edits as one layer of the context, replaced as a whole on every
// attempt: a retried activity sees exactly what the first attempt saw, and the edits reach
// the clusters only after every controller has succeeded.
package contract

import (
	"context"
	"encoding/json"
	"fmt"
	"time"
)

// ActivityName is the activity every controller implements.
const ActivityName = "RunController"

// ErrorRefused is the type of the non-retryable error a refusal becomes: the operation
// fails with its message.
const ErrorRefused = "InvalidInput"

// Operations a controller is called for.
const (
	OpInstantiate = "instantiate"
	OpUpdate      = "update"
	OpTerminate   = "terminate"
	// OpMigrate moves a running deployment to another DIG (POST <DIG>/migrate): Run is
	// called for the target DIG, PreviousContextID is the origin DIG's running context.
	OpMigrate = "migrate"
)

// Controller types, as registered in /v2/controllers.
const (
	TypePlacement = "placement"
	TypeAction    = "action"
)

// Input is what a controller activity gets: references, never the context itself.
type Input struct {
	Project               string `json:"project"`
	CompositeApp          string `json:"compositeApp"`
	CompositeAppVersion   string `json:"compositeAppVersion"`
	DeploymentIntentGroup string `json:"deploymentIntentGroup"`
	Controller            string `json:"controller"` // the name it is registered under
	// Parent is the controller that runs this one as a sub-controller, for its intent (dtc
	// for nps, its, sds and swc: Intent is then dtc's traffic group intent); this one is
	// registered in the parent's own registry (/v2/dtc-controllers). "" for a controller
	// the DIG names.
	Parent    string `json:"parent,omitempty"`
	Type      string `json:"type"`   // placement or action
	Intent    string `json:"intent"` // the intent the DIG names for it
	ContextID string `json:"contextId"`
	// PreviousContextID is the running context an update replaces ("" on instantiate).
	PreviousContextID string `json:"previousContextId,omitempty"`
	Operation         string `json:"operation"`
	// Step is the controller's place in this run: it sees the edits of the steps before.
	Step int `json:"step"`
	// Hook is what this call is for: HookRun (the controller's Run) or one of the hooks
	// that see the deployed context and may not edit it.
	Hook string `json:"hook,omitempty"`
}

// Hooks: what a call of a controller is for (Input.Hook).
const (
	// HookRun calls Run to edit the new context of an instantiate or update.
	HookRun = ""
	// HookTerminate calls Terminator.Terminate before a terminate deletes anything:
	// action controllers, in priority order. An error stops the terminate (a Refusal
	// fails it; any other error is retried).
	HookTerminate = "terminate"
	// HookFinished calls Observer.Finished once Operation's apply (or deletion) has
	// finished on the clusters, for every controller of the context in order. Its errors
	// are logged and do not change the operation's outcome; it is tried for a few minutes.
	HookFinished = "finished"
)

// Terminator is a controller with work to do before a deployment is deleted (EMCO's
// TerminateAppContext).
type Terminator interface {
	Terminate(ctx context.Context, c Context) error
}

// Observer is a controller told when an operation has finished on the clusters (EMCO's
// PostEvent, sent here after the apply has finished rather than when it was accepted).
type Observer interface {
	Finished(ctx context.Context, c Context) error
}

// Dispatch calls what c.Input().Hook asks of ctrl; a controller without that hook has
// nothing to do.
func Dispatch(ctx context.Context, ctrl Controller, c Context) error {
	switch c.Input().Hook {
	case HookRun:
		return ctrl.Run(ctx, c)
	case HookTerminate:
		if t, ok := ctrl.(Terminator); ok {
			return t.Terminate(ctx, c)
		}
	case HookFinished:
		if o, ok := ctrl.(Observer); ok {
			return o.Finished(ctx, c)
		}
	default:
		return Refuse("temco called controller %s with hook %q, which this controller does not know: upgrade it",
			c.Input().Controller, c.Input().Hook)
	}
	return nil
}

// Result is what a controller activity returns.
type Result struct {
	Edits int `json:"edits"`
	// Workflows are what the call asked the operation to run (Context.StartWorkflows).
	Workflows []Workflow `json:"workflows,omitempty"`
}

// Workflow is a Temporal workflow a controller asks the operation to run as its child
// (EMCO's tac hooks): temco starts it in its own namespace, with the DIG's search
// attributes, so that it shows beside the operation in the Temporal UI, and reports its
// workflow and run ids in the DIG's status.
type Workflow struct {
	Name string `json:"name"`           // for status and errors, e.g. the hook intent's name
	Kind string `json:"kind,omitempty"` // what it is for, shown in status (e.g. "pre-install")
	When string `json:"when"`           // WhenNow, WhenApplied or WhenReady
	Type string `json:"type"`           // the workflow type
	// TaskQueue is where the workflow's worker polls; ID its workflow id ("" for
	// "<operation's workflow id>/hook/<Name>").
	TaskQueue string `json:"taskQueue"`
	ID        string `json:"id,omitempty"`
	// Arg is the workflow's one argument, as JSON (none when empty).
	Arg json.RawMessage `json:"arg,omitempty"`
	// Blocking: the operation waits until the workflow ends, at most Timeout (0: as long
	// as it takes); its failure or timeout fails the operation, and a stop of the operation
	// cancels it. A workflow that does not block is started and left to run on its own.
	Blocking bool          `json:"blocking,omitempty"`
	Timeout  time.Duration `json:"timeout,omitempty"`
	// Temporal's start options (client.StartWorkflowOptions).
	ExecutionTimeout time.Duration `json:"executionTimeout,omitempty"`
	RunTimeout       time.Duration `json:"runTimeout,omitempty"`
	TaskTimeout      time.Duration `json:"taskTimeout,omitempty"`
	IDReusePolicy    int32         `json:"idReusePolicy,omitempty"` // enums.WorkflowIdReusePolicy
	Retry            *RetryPolicy  `json:"retry,omitempty"`
}

// When a Workflow runs.
const (
	// WhenNow: right after the controller's call, before the next controller runs, so
	// before anything is applied (Run) or deleted (Terminate).
	WhenNow = "now"
	// WhenApplied: once the operation's apply, or deletion, has finished on the clusters.
	WhenApplied = "applied"
	// WhenReady: as WhenApplied, once every object is also Ready on its clusters (waiting
	// at most Timeout, or ten minutes); instantiate and update only.
	WhenReady = "ready"
)

// RetryPolicy is Temporal's retry policy of a Workflow.
type RetryPolicy struct {
	InitialInterval        time.Duration `json:"initialInterval,omitempty"`
	BackoffCoefficient     float64       `json:"backoffCoefficient,omitempty"`
	MaximumInterval        time.Duration `json:"maximumInterval,omitempty"`
	MaximumAttempts        int32         `json:"maximumAttempts,omitempty"`
	NonRetryableErrorTypes []string      `json:"nonRetryableErrorTypes,omitempty"`
}

// App is one app of the context and the clusters ("provider+cluster") it is placed on.
type App struct {
	Name     string   `json:"name"`
	Clusters []string `json:"clusters"`
	// Groups are the placement's choices before they are made, for placement controllers:
	// each group ends on its first remaining cluster by name (an allOf cluster is a group
	// of its own). Clusters is what the groups resolve to now.
	Groups [][]string `json:"groups,omitempty"`
}

// Resource is one object of an app as it would be applied.
type Resource struct {
	APIVersion string          `json:"apiVersion"`
	Kind       string          `json:"kind"`
	Name       string          `json:"name"`
	Namespace  string          `json:"namespace,omitempty"`
	Manifest   json.RawMessage `json:"manifest"`
}

// Cluster describes a registered cluster.
type Cluster struct {
	Provider string   `json:"provider"`
	Name     string   `json:"name"`
	Labels   []string `json:"labels,omitempty"`
}

// Key is the cluster's key in a context: "provider+cluster".
func (c Cluster) Key() string { return c.Provider + "+" + c.Name }

// Patch types.
const (
	PatchJSON  = "json"  // RFC 6902
	PatchMerge = "merge" // RFC 7386
	// PatchStrategic is Kubernetes' strategic merge patch (built-in kinds; others get a
	// JSON merge patch).
	PatchStrategic = "strategic"
)

// Edit is one change a controller makes to the context. Clusters limits it to some of the
// app's clusters; empty means all of them.
type Edit struct {
	Op       string          `json:"op"` // one of the Edit* constants
	App      string          `json:"app"`
	Clusters []string        `json:"clusters,omitempty"`
	Kind     string          `json:"kind,omitempty"` // patch: the object's kind and name
	Name     string          `json:"name,omitempty"`
	Type     string          `json:"type,omitempty"` // patch: PatchJSON or PatchMerge
	Data     json.RawMessage `json:"data,omitempty"` // add: the manifest; patch: the patch
}

// Edit operations. Placement controllers may only remove or add clusters; action
// controllers may only add apps and add and patch resources.
const (
	EditAddResource    = "addResource"
	EditPatch          = "patch"
	EditRemoveClusters = "removeClusters"
	EditAddClusters    = "addClusters"
	// EditAddApp adds an app of the controller's own, with no objects yet, placed on
	// Clusters (one each), after the context's apps (EMCO's apporder); addResource edits
	// then give it objects. It is applied, shown in the status and deleted like the others.
	EditAddApp = "addApp"
)

// Context is the view of the new AppContext a controller works on.
type Context interface {
	Input() Input
	// Apps lists the context's apps in apply order, with their clusters as the edits of
	// the earlier steps left them. Reads never show this step's own edits.
	Apps(ctx context.Context) ([]App, error)
	// Resources returns an app's objects as they would be applied on cluster, with the
	// edits so far.
	Resources(ctx context.Context, app, cluster string) ([]Resource, error)
	// Clusters describes the clusters of a provider (all of them when label is "", else
	// those carrying the label).
	Clusters(ctx context.Context, provider, label string) ([]Cluster, error)
	// Edit records edits; they are checked and become visible to the later steps. Hooks
	// see the deployed context and may not edit it.
	Edit(edits ...Edit) error
	// StartWorkflows asks the operation to run workflows as its children, each at its
	// When (Run and the terminate hook only; a retried call replaces what the earlier
	// attempt asked).
	StartWorkflows(w ...Workflow) error
}

// CheckWorkflows refuses what StartWorkflows may not be asked in a call of in.
func CheckWorkflows(in Input, w []Workflow) error {
	if in.Hook != HookRun && in.Hook != HookTerminate {
		return Refuse("controller %s: the %s hook may not start workflows", in.Controller, in.Hook)
	}
	for _, x := range w {
		switch {
		case x.Name == "" || x.Type == "" || x.TaskQueue == "":
			return Refuse("controller %s: a workflow needs a name, a type and a task queue (got %q, %q, %q)", in.Controller, x.Name, x.Type, x.TaskQueue)
		case x.When != WhenNow && x.When != WhenApplied && x.When != WhenReady:
			return Refuse("controller %s: workflow %s: when is %q, not %s, %s or %s", in.Controller, x.Name, x.When, WhenNow, WhenApplied, WhenReady)
		case x.When == WhenReady && in.Hook == HookTerminate:
			return Refuse("controller %s: workflow %s: a terminate has nothing to wait Ready for", in.Controller, x.Name)
		case x.Timeout < 0:
			return Refuse("controller %s: workflow %s: negative timeout", in.Controller, x.Name)
		}
	}
	return nil
}

// Controller is a controller's code: it reads the context and records its edits.
type Controller interface {
	Run(ctx context.Context, c Context) error
}

// Func adapts a function to Controller.
type Func func(ctx context.Context, c Context) error

// Run calls f.
func (f Func) Run(ctx context.Context, c Context) error { return f(ctx, c) }

// Refusal is a controller's verdict that the operation cannot go on as specified (no
// cluster qualifies, an intent names a missing object): the operation fails at once with
// its message, without retries. Any other error is retried.
type Refusal struct{ Message string }

func (r *Refusal) Error() string { return r.Message }

// Refuse returns a Refusal.
func Refuse(format string, args ...any) error {
	return &Refusal{Message: fmt.Sprintf(format, args...)}
}
