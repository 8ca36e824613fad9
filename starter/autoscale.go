package starter

import (
	"context"
	"errors"
	"fmt"

	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"

	"github.com/temco/temco/internal/core/lifecycle"
)

// WakeAutoscaler has the DIG's autoscaler (lifecycle.WorkflowAutoscale) evaluate now; with
// start, one is started when none runs (its capacity placement was stored), else a DIG
// without one is left alone (its capacity placement was deleted).
func (s *Starter) WakeAutoscaler(ctx context.Context, dig lifecycle.Target, start bool) error {
	return s.Wake(ctx, start, client.StartWorkflowOptions{ID: dig.AutoscaleWorkflowID(),
		TypedSearchAttributes: lifecycle.SearchAttributes(dig, lifecycle.OpAutoscale),
		StaticSummary:         "autoscaler of " + dig.String(),
	}, lifecycle.WorkflowAutoscale, lifecycle.AutoscaleInput{DIG: dig})
}

// Wake sends SignalWake to workflow o.ID, with start starting it (with arg) when none runs;
// without, a workflow that does not run is left alone.
func (s *Starter) Wake(ctx context.Context, start bool, o client.StartWorkflowOptions, workflowType string, arg any) error {
	if !start {
		err := s.Client.SignalWorkflow(ctx, o.ID, "", lifecycle.SignalWake, nil)
		var notFound *serviceerror.NotFound
		if errors.As(err, &notFound) {
			return nil
		}
		return err
	}
	o.TaskQueue = s.TaskQueue
	_, err := s.Client.SignalWithStartWorkflow(ctx, o.ID, lifecycle.SignalWake, nil, o, workflowType, arg)
	return err
}

// SignalAutoscaler pauses or resumes the DIG's autoscaler; without one running it is
// *Refused.
func (s *Starter) SignalAutoscaler(ctx context.Context, dig lifecycle.Target, signal string) error {
	err := s.Client.SignalWorkflow(ctx, dig.AutoscaleWorkflowID(), "", signal, nil)
	var notFound *serviceerror.NotFound
	if errors.As(err, &notFound) {
		return &Refused{Message: fmt.Sprintf("%s has no autoscaler running: storing its capacity placement starts one", dig)}
	}
	return err
}
