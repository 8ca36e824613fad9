package starter

import (
	"context"
	"errors"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"

	"github.com/temco/temco/internal/core/lifecycle"
)

// Migrate asks the target DIG's lifecycle workflow (started if needed) to take over the
// running deployment of req.Origin, and returns once the migrate's workflow has started.
// Refusals are *Refused (either DIG busy, or in a state that does not allow it) or
// *Invalid.
func (s *Starter) Migrate(ctx context.Context, target lifecycle.Target, req lifecycle.MigrateRequest) (lifecycle.OpAccepted, error) {
	return s.updateWithStart(ctx, target, lifecycle.UpdateMigrate, req)
}

// Hold asks a DIG's lifecycle workflow (started if needed) to run nothing while the
// workflow req.Holder runs; it answers the DIG's running context.
func (s *Starter) Hold(ctx context.Context, dig lifecycle.Target, req lifecycle.HoldRequest) (lifecycle.OpAccepted, error) {
	return s.updateWithStart(ctx, dig, lifecycle.UpdateHold, req)
}

// updateWithStart runs a Workflow Update of a DIG's lifecycle workflow as Operate does,
// sent again when it meets the workflow ending.
func (s *Starter) updateWithStart(ctx context.Context, target lifecycle.Target, update string, arg any) (lifecycle.OpAccepted, error) {
	for attempt := 1; ; attempt++ {
		start := s.Client.NewWithStartWorkflowOperation(client.StartWorkflowOptions{
			ID:                       target.WorkflowID(),
			TaskQueue:                s.TaskQueue,
			WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING,
			TypedSearchAttributes:    lifecycle.SearchAttributes(target, "lifecycle"),
			StaticSummary:            "lifecycle of " + target.String(),
		}, lifecycle.WorkflowDIG, lifecycle.TargetInput{Target: target})
		h, err := s.Client.UpdateWithStartWorkflow(ctx, client.UpdateWithStartWorkflowOptions{
			StartWorkflowOperation: start,
			UpdateOptions: client.UpdateWorkflowOptions{
				UpdateName: update, Args: []any{arg}, WaitForStage: client.WorkflowUpdateStageCompleted,
			},
		})
		var acc lifecycle.OpAccepted
		if err == nil {
			err = h.Get(ctx, &acc)
		}
		var notFound *serviceerror.NotFound
		if attempt < 3 && errors.As(err, &notFound) {
			continue
		}
		return acc, refused(err)
	}
}

// AwaitEnd returns once workflow id has ended, calling alive every few seconds while it
// runs (activities heartbeat there). A workflow not started yet is waited for at most
// startWait; then AwaitEnd returns as if it had ended.
func (s *Starter) AwaitEnd(ctx context.Context, id string, startWait time.Duration, alive func()) error {
	deadline := time.Now().Add(startWait)
	for {
		alive()
		d, err := s.Client.DescribeWorkflowExecution(ctx, id, "")
		var notFound *serviceerror.NotFound
		switch {
		case errors.As(err, &notFound):
			if time.Now().After(deadline) {
				return nil
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(time.Second):
			}
			continue
		case err != nil:
			return err
		case d.GetWorkflowExecutionInfo().GetStatus() != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING:
			return nil
		}
		// Wait for its end (a long poll), then look again.
		wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		_ = s.Client.GetWorkflow(wctx, id, "").Get(wctx, nil)
		cancel()
		if err := ctx.Err(); err != nil {
			return err
		}
	}
}
