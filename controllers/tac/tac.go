// Package tac is EMCO's temporal action controller in temco: a DIG's hook intents name
// users' Temporal workflows to run at points of its lifecycle (pre/post install, update
// and termination), and worker intents name DIGs that run what those workflows need.
//
// tac is an action controller through the public contract: its step of an instantiate or
// update, and its terminate hook, ask the operation (contract.Context.StartWorkflows) to
// run the DIG's hooks of the matching types as child workflows — pre-hooks at once,
// before anything is applied or deleted; post-hooks once the apply or deletion has
// finished (and every object is Ready, with waitForReady). The workflows carry the DIG's
// search attributes and are listed in the DIG's status with their workflow and run ids.
//
// Where temco departs from EMCO, deliberately:
//   - temco starts the hook workflow itself on its Temporal (type workflowClientName, or
//     the task queue when empty, as EMCO's sample client does); workflowClient is kept for
//     EMCO's files but not called: EMCO's HTTP client starts a workflow and returns, so its
//     hooks never block.
//   - hookBlocking and hookBlockingTimeout are honoured (EMCO's struct drops them): a
//     blocking pre-hook holds the operation until its workflow ends, fails it when the
//     workflow fails or times out (nothing applied), and is cancelled when the operation is
//     stopped. A blocking post-hook's failure fails the operation too (the objects stay).
//   - The workflow's argument is EMCO's workflowParams with activityParams.emco set to the
//     DIG, context, hook type and operation, as EMCO's documentation says tac does.
//   - Worker DIGs are instantiated before the hooks and waited for until Ready (EMCO
//     looks once); only those tac instantiated are terminated after (EMCO terminates all).
//   - Hooks run in creation order, as EMCO reads them; like EMCO, every hook of the
//     matching type runs, whatever intent name the DIG gives tac.
package tac

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"time"

	"github.com/temco/temco/api"
	"github.com/temco/temco/contract"
	"github.com/temco/temco/controllers"
	"github.com/temco/temco/controllers/workflowmgr"
	"github.com/temco/temco/internal/core/lifecycle"
	"github.com/temco/temco/internal/core/store"
)

// Stored kinds.
const (
	KindHook   = "tac-workflow-hook-intent"
	KindWorker = "tac-worker-intent"
)

// Routes below the DIG, as EMCO's.
const (
	hooksPath   = "/temporal-action-controller"
	workersPath = hooksPath + "/:tacIntent/workers"
)

// Controller is tac as built into temco; EMCO's files register it as tac.
var Controller = controllers.Builtin{
	Name:  "tac",
	Type:  contract.TypeAction,
	Hosts: []string{"tac"},
	Kinds: []api.ResourceKind{
		api.DIGKind(api.KindDef[WorkerSpec]{Name: KindWorker, Path: workersPath, Param: "workerIntent", Check: checkWorker}),
	},
	Routes: func(d controllers.APIDeps) []api.ResourceKind {
		return []api.ResourceKind{api.OwnKind[Spec]{
			KindDef: api.KindDef[Spec]{Name: KindHook, Path: api.RouteDIG + hooksPath, Param: "tacIntent", Check: hookCheck(d.Workflows)},
			Actions: []api.Action{workflowmgr.StatusAction(d.Workflows, "hook intent"), workflowmgr.CancelAction(d.Workflows, "hook intent")},
		}.Mount()}
	},
	New: func(d controllers.Deps) contract.Controller { return &tac{deps: d, workers: newWorkers(d)} },
}

// hookCheck validates a hook intent, and refuses what its caller may not start (w's
// rules; none when w is nil).
func hookCheck(w *workflowmgr.Temporal) func(context.Context, *api.Request[Spec]) error {
	return func(ctx context.Context, r *api.Request[Spec]) error {
		spec := &r.Resource().Spec
		if err := spec.Validate(); err != nil {
			return api.BadRequest("%v", err)
		}
		if w == nil {
			return nil
		}
		return w.CheckHook(ctx, &spec.Spec, workflowmgr.ScopeOf(r.ID()))
	}
}

func checkWorker(_ context.Context, r *api.Request[WorkerSpec]) error {
	if err := r.Resource().Spec.validate(); err != nil {
		return api.BadRequest("%v", err)
	}
	return nil
}

type tac struct {
	deps    controllers.Deps
	workers *workers
}

// The hook types each operation runs: before, and after.
var hooksOf = map[string][2]string{
	contract.OpInstantiate: {PreInstall, PostInstall},
	contract.OpUpdate:      {PreUpdate, PostUpdate},
	contract.OpMigrate:     {PreUpdate, PostUpdate}, // as EMCO's tac sees a migrate
	contract.OpTerminate:   {PreTermination, PostTermination},
}

// Run asks for the hooks of an instantiate or update, once their workers are Ready.
func (t *tac) Run(ctx context.Context, c contract.Context) error {
	return t.ask(ctx, c)
}

// Terminate asks for the hooks of a terminate, as Run.
func (t *tac) Terminate(ctx context.Context, c contract.Context) error {
	return t.ask(ctx, c)
}

// Finished terminates the worker DIGs tac instantiated for the operation.
func (t *tac) Finished(ctx context.Context, c contract.Context) error {
	return t.workers.release(ctx, c.Input())
}

func (t *tac) ask(ctx context.Context, c contract.Context) error {
	in := c.Input()
	types, ok := hooksOf[in.Operation]
	if !ok {
		return nil
	}
	dig := digOf(in)
	hooks, err := controllers.List[Spec](ctx, t.deps.Store, store.Query{Parent: dig.ID(), Kind: KindHook})
	if err != nil {
		return err
	}
	var asked []contract.Workflow
	var withWorkers []string
	for _, h := range hooks {
		when := ""
		switch h.Spec.HookType {
		case types[0]:
			when = contract.WhenNow
		case types[1]:
			when = contract.WhenApplied
			if h.Spec.WaitForReady {
				when = contract.WhenReady
			}
		default:
			continue
		}
		w, err := workflowOf(in, dig, h, when, t.ownQueue())
		if err != nil {
			return err
		}
		asked = append(asked, w)
		withWorkers = append(withWorkers, h.Name)
	}
	if err := t.workers.ensure(ctx, in, dig, withWorkers); err != nil {
		return err
	}
	return c.StartWorkflows(asked...)
}

// ownQueue is temco's task queue, where no hook may run.
func (t *tac) ownQueue() string {
	if t.deps.Ops == nil {
		return ""
	}
	return t.deps.Ops.TaskQueue
}

func digOf(in contract.Input) lifecycle.Target {
	return lifecycle.Target{Project: in.Project, CompositeApp: in.CompositeApp, Version: in.CompositeAppVersion, DIG: in.DeploymentIntentGroup}
}

// hookID is a hook intent's store id.
func hookID(dig lifecycle.Target, name string) string { return dig.ID() + hooksPath + "/" + name }

// workflowOf turns a hook intent into the workflow the operation runs: its id under the
// DIG's (workflowmgr.Scope), never on temco's task queue ownQueue nor of temco's types,
// whoever wrote the intent and whenever (the API checked it against the rules then).
func workflowOf(in contract.Input, dig lifecycle.Target, h controllers.Named[Spec], when, ownQueue string) (contract.Workflow, error) {
	if h.Spec.Temporal == nil {
		return contract.Workflow{}, contract.Refuse("hook intent %s has no spec.temporal", h.Name)
	}
	scope := workflowmgr.Scope{DIG: dig}
	if err := (workflowmgr.Rules{OwnTaskQueue: ownQueue}).Check(&h.Spec.Spec, scope, true, true); err != nil {
		return contract.Workflow{}, contract.Refuse("hook intent %s: %v", h.Name, err)
	}
	t := h.Spec.Temporal
	o := t.StartOptions
	params := t.Params
	params.ActivityParams = maps.Clone(params.ActivityParams)
	if params.ActivityParams == nil {
		params.ActivityParams = map[string]map[string]string{}
	}
	params.ActivityParams["emco"] = map[string]string{"project": in.Project, "compositeApp": in.CompositeApp,
		"compositeAppVersion": in.CompositeAppVersion, "deploymentIntentGroup": in.DeploymentIntentGroup,
		"appContextId": in.ContextID, "hookType": h.Spec.HookType, "operation": in.Operation, "hook": h.Name}
	arg, err := json.Marshal(params)
	if err != nil {
		return contract.Workflow{}, fmt.Errorf("hook intent %s: %w", h.Name, err)
	}
	w := contract.Workflow{Name: h.Name, Kind: h.Spec.HookType, When: when, Type: t.WorkflowClientName, TaskQueue: o.TaskQueue,
		ID: o.ID, Arg: arg, Blocking: h.Spec.HookBlocking, Timeout: time.Duration(h.Spec.HookBlockingTimeout),
		ExecutionTimeout: o.WorkflowExecutionTimeout, RunTimeout: o.WorkflowRunTimeout, TaskTimeout: o.WorkflowTaskTimeout,
		IDReusePolicy: o.WorkflowIDReusePolicy}
	if w.Type == "" {
		w.Type = o.TaskQueue
	}
	if w.ID == "" {
		w.ID = scope.Default(workflowmgr.KindHook, h.Name)
	}
	w.ID = scope.ID(w.ID)
	if p := o.RetryPolicy; p != nil {
		w.Retry = &contract.RetryPolicy{InitialInterval: p.InitialInterval, BackoffCoefficient: p.BackoffCoefficient,
			MaximumInterval: p.MaximumInterval, MaximumAttempts: p.MaximumAttempts, NonRetryableErrorTypes: p.NonRetryableErrorTypes}
	}
	return w, nil
}
