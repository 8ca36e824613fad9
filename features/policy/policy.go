// Package policy is EMCO's policy controller in temco (docs/policy.md): a PolicyAgent
// workflow per registered agent holds its event stream open, and a Policy workflow per DIG
// evaluates the DIG's policy intents and starts the workflow a decision asks for (flow);
// work holds their activities. Here: the feature, and the waking of the agents' listeners.
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

// extension wires the api's routes for it, still in api/; st nil: switched off.
func extension(st *starter.Starter) api.Extension {
	if st == nil {
		return api.Extension{Name: "policy"}
	}
	return api.Extension{Name: "policy", Wire: func(s *api.Server) { s.PolicyAgents = Starter{st} }}
}

// Starter wakes the agents' listeners: the api's api.PolicyAgents.
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
