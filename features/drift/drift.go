// Package drift is drift detection (temco's own; EMCO has none): a Temporal Schedule per
// DIG whose spec asks for it starts a Drift workflow every interval (flow), which compares
// the live objects on the DIG's clusters with what its running context applied (work),
// and corrects them when asked. Here: the feature, the starting of its checks and its
// routes (routes.go).
package drift

import (
	"context"
	"errors"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/temco/temco/api"
	"github.com/temco/temco/features"
	"github.com/temco/temco/features/drift/flow"
	"github.com/temco/temco/features/drift/work"
	"github.com/temco/temco/internal/core/lifecycle"
	"github.com/temco/temco/starter"
)

// Feature is drift detection.
var Feature = features.Feature{
	Name:       "drift",
	Workflows:  map[string]any{flow.WorkflowDrift: flow.Drift, flow.WorkflowDriftBatch: flow.DriftBatch},
	Activities: work.Register,
	TakeOver:   []string{flow.WorkflowDrift, flow.WorkflowDriftBatch},
	API:        extension,
}

// extension is drift detection's part of the api (routes.go); in.Starter nil: switched off.
func extension(in features.Mounting) api.Extension {
	st := in.Starter
	if st == nil {
		return Extension(nil)
	}
	return Extension(Starter{st})
}

// Starter starts the drift checks: the routes' Scheduler.
type Starter struct{ *starter.Starter }

// driftCheckTimeout ends a drift check that runs for longer (the schedule starts none
// while one runs: overlap policy Skip).
const driftCheckTimeout = time.Hour

// SyncDrift makes the Temporal Schedule of dig's drift checks (flow.ScheduleID)
// start a Drift workflow every interval, creating or updating it; interval 0 deletes it.
// A check that is still running when the next is due makes that one skip.
func (s Starter) SyncDrift(ctx context.Context, dig lifecycle.Target, interval time.Duration) error {
	schedules := s.Client.ScheduleClient()
	id := flow.ScheduleID(dig)
	if interval == 0 {
		err := schedules.GetHandle(ctx, id).Delete(ctx)
		var notFound *serviceerror.NotFound
		if errors.As(err, &notFound) {
			return nil
		}
		return err
	}
	spec := client.ScheduleSpec{Intervals: []client.ScheduleIntervalSpec{{Every: interval}}}
	action := &client.ScheduleWorkflowAction{
		ID: flow.WorkflowID(dig), Workflow: flow.WorkflowDrift, Args: []any{flow.DriftInput{DIG: dig}},
		TaskQueue: s.TaskQueue, WorkflowExecutionTimeout: driftCheckTimeout,
		TypedSearchAttributes: lifecycle.SearchAttributes(dig, flow.OpDrift),
		StaticSummary:         "drift check of " + dig.String(),
	}
	_, err := schedules.Create(ctx, client.ScheduleOptions{
		ID: id, Spec: spec, Action: action, Overlap: enumspb.SCHEDULE_OVERLAP_POLICY_SKIP,
		Note: "drift detection of " + dig.String(),
	})
	if !errors.Is(err, temporal.ErrScheduleAlreadyRunning) {
		return err
	}
	return schedules.GetHandle(ctx, id).Update(ctx, client.ScheduleUpdateOptions{
		DoUpdate: func(in client.ScheduleUpdateInput) (*client.ScheduleUpdate, error) {
			sch := in.Description.Schedule
			sch.Spec, sch.Action = &spec, action
			if sch.Policy == nil {
				sch.Policy = &client.SchedulePolicies{}
			}
			sch.Policy.Overlap = enumspb.SCHEDULE_OVERLAP_POLICY_SKIP
			return &client.ScheduleUpdate{Schedule: &sch}, nil
		},
	})
}

// CheckDrift starts a drift check of dig now, correcting what it finds when correct,
// beside its schedule (if any); it returns the check's workflow id.
func (s Starter) CheckDrift(ctx context.Context, dig lifecycle.Target, correct bool) (string, error) {
	id := flow.WorkflowID(dig) + "-asked-" + time.Now().UTC().Format("2006-01-02T15:04:05.000Z")
	what := "drift check"
	if correct {
		what = "drift correction"
	}
	_, err := s.Client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: s.TaskQueue,
		WorkflowExecutionTimeout: driftCheckTimeout, TypedSearchAttributes: lifecycle.SearchAttributes(dig, flow.OpDrift),
		StaticSummary: what + " of " + dig.String() + ", asked"},
		flow.WorkflowDrift, flow.DriftInput{DIG: dig, Asked: true, Correct: correct})
	return id, err
}
