package policy

import (
	"github.com/temco/temco/activities/deps"
	"github.com/temco/temco/internal/adapters/policyengine"
	"github.com/temco/temco/internal/core/lifecycle"
)

// Register registers Activities' methods on r, each as the activity it implements.
func Register(r lifecycle.Registry, d *deps.Deps) {
	a := &Activities{Store: d.Store, Contexts: d.Contexts, Engines: d.PolicyEngines, Grants: d.TaskQueueGrants, Keys: d.Keys}
	if d.RenderMemory > 0 { // the bound of a tenant's code in the worker: charts' and policies'
		a.Sandbox = &policyengine.Sandbox{Memory: d.RenderMemory}
	}
	if d.Ops != nil {
		a.Signal, a.OwnQueue = d.Ops.SignalPolicyEvent, d.Ops.TaskQueue
	}
	lifecycle.Register(r, lifecycle.ListenPolicyAgent, a.ListenPolicyAgent)
	lifecycle.Register(r, lifecycle.EvaluatePolicy, a.EvaluatePolicy)
	lifecycle.Register(r, lifecycle.PolicyAction, a.PolicyAction)
	lifecycle.RegisterNoResult(r, lifecycle.RecordPolicy, a.RecordPolicy)
}
