package work

import (
	"context"
	"runtime"

	"go.temporal.io/sdk/client"

	"github.com/temco/temco/activities/deps"
	"github.com/temco/temco/features/policy/flow"
	"github.com/temco/temco/internal/adapters/policyengine"
	"github.com/temco/temco/internal/core/lifecycle"
	"github.com/temco/temco/starter"
)

// Register registers Activities' methods on r, each as the activity it implements.
func Register(r lifecycle.Registry, d *deps.Deps) {
	a := &Activities{Store: d.Store, Contexts: d.Contexts, Engines: d.PolicyEngines, Grants: d.TaskQueueGrants, Keys: d.Keys, Events: d.Events}
	if d.RenderMemory > 0 { // the bound of a tenant's code in the worker: charts' and policies'
		a.Sandbox = &policyengine.Sandbox{Memory: d.RenderMemory, Spares: runtime.GOMAXPROCS(0)}
	}
	if d.Ops != nil {
		ops := d.Ops
		a.Signal = func(ctx context.Context, dig lifecycle.Target, ev flow.PolicyEvent) error {
			return signalEvent(ctx, ops, dig, ev)
		}
		a.OwnQueue = ops.TaskQueue
	}
	lifecycle.Register(r, flow.ListenPolicyAgent, a.ListenPolicyAgent)
	lifecycle.Register(r, flow.EvaluatePolicy, a.EvaluatePolicy)
	lifecycle.Register(r, flow.PolicyAction, a.PolicyAction)
	lifecycle.RegisterNoResult(r, flow.RecordPolicy, a.RecordPolicy)
}

// signalEvent hands an agent's event to the DIG's Policy workflow, started when none
// runs.
func signalEvent(ctx context.Context, s *starter.Starter, dig lifecycle.Target, ev flow.PolicyEvent) error {
	o := client.StartWorkflowOptions{ID: flow.WorkflowID(dig), TaskQueue: s.TaskQueue,
		TypedSearchAttributes: lifecycle.SearchAttributes(dig, flow.OpPolicy),
		StaticSummary:         "policy intents of " + dig.String()}
	_, err := s.Client.SignalWithStartWorkflow(ctx, o.ID, flow.SignalPolicyEvent, ev, o, flow.WorkflowPolicy,
		flow.PolicyInput{DIG: dig})
	return err
}
