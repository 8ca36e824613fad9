package starter

import (
	"context"

	"go.temporal.io/sdk/client"

	"github.com/temco/temco/internal/core/lifecycle"
)

// WakeClusterHealth starts the ClusterHealth workflow, or has the running one probe now
// and take in's pace.
func (s *Starter) WakeClusterHealth(ctx context.Context, in lifecycle.HealthInput) error {
	o := client.StartWorkflowOptions{ID: lifecycle.ClusterHealthID, TaskQueue: s.TaskQueue, StaticSummary: "probes of every cluster's API server"}
	_, err := s.Client.SignalWithStartWorkflow(ctx, o.ID, lifecycle.SignalWake, in, o, lifecycle.WorkflowClusterHealth, in)
	return err
}
