// Package policy is EMCO's policy controller in temco (docs/policy.md): a PolicyAgent
// workflow per registered agent holds its event stream open, and a Policy workflow per DIG
// evaluates the DIG's policy intents and starts the workflow a decision asks for (flow);
// work holds their activities. Here: the feature, the waking of the agents' listeners and
// its routes (routes.go, agents.go).
package policy

import (
	"context"
	"errors"

	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"

	"github.com/temco/temco/api"
	"github.com/temco/temco/features"
	"github.com/temco/temco/features/policy/flow"
	"github.com/temco/temco/features/policy/work"
	"github.com/temco/temco/internal/core/lifecycle"
	"github.com/temco/temco/starter"
)

// Feature is policy intents.
var Feature = features.Feature{
	Name:       "policy",
	Workflows:  map[string]any{flow.WorkflowPolicyAgent: flow.PolicyAgent, flow.WorkflowPolicy: flow.Policy},
	Activities: work.Register,
	API:        extension,
}

// extension is its part of the api (routes.go), with the configuration's engines;
// in.Starter nil: switched off.
func extension(in features.Mounting) api.Extension {
	if in.Starter == nil {
		return Extension(nil, in.PolicyEngines)
	}
	return Extension(Starter{in.Starter}, in.PolicyEngines)
}

// Starter wakes the agents' listeners: the routes' Agents.
type Starter struct{ *starter.Starter }

// WakePolicyAgent has a policy agent's listener (flow.WorkflowPolicyAgent) open its
// stream again, at the agent's current address; with start, one is started when none
// runs (the agent was registered), else a deleted agent's is stopped.
func (s Starter) WakePolicyAgent(ctx context.Context, in flow.PolicyAgentInput, start bool) error {
	if !start {
		err := s.Client.SignalWorkflow(ctx, in.WorkflowID(), "", lifecycle.SignalStop, nil)
		var notFound *serviceerror.NotFound
		if errors.As(err, &notFound) {
			return nil
		}
		return err
	}
	return s.Wake(ctx, true, client.StartWorkflowOptions{ID: in.WorkflowID(), StaticSummary: "policy agent " + in.Name},
		flow.WorkflowPolicyAgent, in)
}
