package starter

import (
	"context"
	"errors"

	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"

	"github.com/temco/temco/internal/core/lifecycle"
)

// WakePolicyAgent has a policy agent's listener (lifecycle.WorkflowPolicyAgent) open its
// stream again, at the agent's current address; with start, one is started when none
// runs (the agent was registered), else a deleted agent's is stopped.
func (s *Starter) WakePolicyAgent(ctx context.Context, in lifecycle.PolicyAgentInput, start bool) error {
	if !start {
		err := s.Client.SignalWorkflow(ctx, in.WorkflowID(), "", lifecycle.SignalStop, nil)
		var notFound *serviceerror.NotFound
		if errors.As(err, &notFound) {
			return nil
		}
		return err
	}
	return s.Wake(ctx, true, client.StartWorkflowOptions{ID: in.WorkflowID(), StaticSummary: "policy agent " + in.Name},
		lifecycle.WorkflowPolicyAgent, in)
}

// SignalPolicyEvent hands an agent's event to the DIG's Policy workflow, started when
// none runs.
func (s *Starter) SignalPolicyEvent(ctx context.Context, dig lifecycle.Target, ev lifecycle.PolicyEvent) error {
	o := client.StartWorkflowOptions{ID: dig.PolicyWorkflowID(), TaskQueue: s.TaskQueue,
		TypedSearchAttributes: lifecycle.SearchAttributes(dig, lifecycle.OpPolicy),
		StaticSummary:         "policy intents of " + dig.String()}
	_, err := s.Client.SignalWithStartWorkflow(ctx, o.ID, lifecycle.SignalPolicyEvent, ev, o, lifecycle.WorkflowPolicy,
		lifecycle.PolicyInput{DIG: dig})
	return err
}
