// Package health is the probes of every registered cluster's API server (docs/api.md,
// "Cluster reachability"): one ClusterHealth workflow per temco (flow), a page of clusters
// per activity (work), started and woken by the api as it starts (Serve).
package health

import (
	"context"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/temco/temco/features"
	"github.com/temco/temco/features/health/flow"
	"github.com/temco/temco/features/health/work"
	"github.com/temco/temco/internal/core/lifecycle"
	"github.com/temco/temco/starter"
)

// Feature is the cluster probes.
var Feature = features.Feature{
	Name:       "health",
	Workflows:  map[string]any{flow.WorkflowClusterHealth: flow.ClusterHealth},
	Activities: work.Register,
	Serve: func(ctx context.Context, in features.Serving) {
		if in.ProbeInterval > 0 {
			keepWoken(ctx, in, flow.HealthInput{Interval: in.ProbeInterval})
		}
	},
}

// Wake starts the ClusterHealth workflow, or has the running one probe now and take in's
// pace.
func Wake(ctx context.Context, s *starter.Starter, in flow.HealthInput) error {
	o := client.StartWorkflowOptions{ID: flow.ClusterHealthID, TaskQueue: s.TaskQueue, StaticSummary: "probes of every cluster's API server"}
	_, err := s.Client.SignalWithStartWorkflow(ctx, o.ID, lifecycle.SignalWake, in, o, flow.WorkflowClusterHealth, in)
	return err
}

// keepWoken wakes the ClusterHealth workflow, trying again while Temporal does not
// answer: the probes must run whichever api started first.
func keepWoken(ctx context.Context, s features.Serving, in flow.HealthInput) {
	for wait := time.Second; ; wait = min(2*wait, time.Minute) {
		err := Wake(ctx, s.Starter, in)
		if err == nil {
			return
		}
		s.Log.Warn("start the cluster probes; trying again", "in", wait, "error", err)
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
	}
}
