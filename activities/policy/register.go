package policy

import (
	"go.temporal.io/sdk/worker"

	"github.com/temco/temco/activities/deps"
	"github.com/temco/temco/internal/adapters/policyengine"
	"github.com/temco/temco/internal/core/lifecycle"
)

// ActivityNames are the activities Register registers.
var ActivityNames = []string{lifecycle.ActivityListenPolicyAgent, lifecycle.ActivityEvaluatePolicy,
	lifecycle.ActivityPolicyAction, lifecycle.ActivityRecordPolicy}

// Register registers Activities on r.
func Register(r worker.Registry, d *deps.Deps) {
	a := &Activities{Store: d.Store, Contexts: d.Contexts, Engines: d.PolicyEngines, Grants: d.TaskQueueGrants, Keys: d.Keys}
	if d.RenderMemory > 0 { // the bound of a tenant's code in the worker: charts' and policies'
		a.Sandbox = &policyengine.Sandbox{Memory: d.RenderMemory}
	}
	if d.Ops != nil {
		a.Signal, a.OwnQueue = d.Ops.SignalPolicyEvent, d.Ops.TaskQueue
	}
	r.RegisterActivity(a)
}
