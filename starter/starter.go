// Package starter is the one place where the API talks to Temporal: it starts lifecycle
// operations, stops them and runs status reads, and owns the workflow ids, search
// attributes and summaries they carry.
package starter

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/temco/temco/internal/core/lifecycle"
)

// Starter starts and signals lifecycle workflows.
type Starter struct {
	Client    client.Client
	TaskQueue string
}

// Refused is an operation the DIG's lifecycle workflow turned down (HTTP 409): another
// operation runs, or the DIG's state does not allow it.
type Refused struct{ Message string }

func (e *Refused) Error() string { return e.Message }

// Operate asks the target's lifecycle workflow (started if needed) to run an operation and
// returns once the operation's own workflow has started. The lifecycle workflow ends
// after a while without operations; a request that meets it ending is sent again, to the
// next run.
func (s *Starter) Operate(ctx context.Context, target lifecycle.Target, req lifecycle.OpRequest) (lifecycle.OpAccepted, error) {
	return s.updateWithStart(ctx, target, lifecycle.UpdateOperate, req)
}

// Start runs op on dig as the API's route does, for the processes that operate on other
// DIGs (tac's worker DIGs, migrate, relocate): a new context for anything but terminate.
// The DIG's lifecycle workflow checks its state and refuses what it does not allow.
func (s *Starter) Start(ctx context.Context, target lifecycle.Target, op string) (lifecycle.OpAccepted, error) {
	req := lifecycle.OpRequest{Op: op, Requested: time.Now().UTC().Format(time.RFC3339Nano)}
	if op != lifecycle.OpTerminate {
		req.ContextID = lifecycle.NewContextID()
	}
	return s.Operate(ctx, target, req)
}

// Await waits until an accepted operation's workflow has ended: a failed or cancelled
// operation is an error, a stopped one is not (the DIG's state tells).
func (s *Starter) Await(ctx context.Context, acc lifecycle.OpAccepted) error {
	return s.Client.GetWorkflow(ctx, acc.WorkflowID, "").Get(ctx, nil)
}

// Stop stops the running operation of a DIG; without one it is refused.
func (s *Starter) Stop(ctx context.Context, target lifecycle.Target) (lifecycle.OpAccepted, error) {
	h, err := s.Client.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{
		WorkflowID: target.WorkflowID(), UpdateName: lifecycle.UpdateOperate,
		Args: []any{lifecycle.OpRequest{Op: lifecycle.OpStop}}, WaitForStage: client.WorkflowUpdateStageCompleted,
	})
	var notFound *serviceerror.NotFound
	if errors.As(err, &notFound) {
		return lifecycle.OpAccepted{}, &Refused{Message: fmt.Sprintf("%s has no running operation to stop", target)}
	}
	if err != nil {
		return lifecycle.OpAccepted{}, refused(err)
	}
	var acc lifecycle.OpAccepted
	err = h.Get(ctx, &acc)
	// The operation ended between the update's validation and its signal to it.
	var appErr *temporal.ApplicationError
	if errors.As(err, &appErr) && appErr.Type() == unknownExternalWorkflow {
		return lifecycle.OpAccepted{}, &Refused{Message: fmt.Sprintf("%s has no running operation to stop: it has just ended", target)}
	}
	return acc, refused(err)
}

// unknownExternalWorkflow is the error type of a signal to a workflow that has ended.
const unknownExternalWorkflow = "UnknownExternalWorkflowExecutionError"

// ReadClusters reads the live state of a context's objects (all, or in.Clusters') into
// the AppContext and returns when done. Concurrent reads of the same clusters of a
// context share one workflow run.
func (s *Starter) ReadClusters(ctx context.Context, target lifecycle.Target, in lifecycle.ReadInput) error {
	_, err := s.read(ctx, target, in)
	return err
}

// Progress queries a running operation's workflow for its progress.
func (s *Starter) Progress(ctx context.Context, op *lifecycle.RunningOp) (lifecycle.Progress, error) {
	var p lifecycle.Progress
	v, err := s.Client.QueryWorkflow(ctx, op.WorkflowID, op.RunID, lifecycle.QueryProgress)
	if err == nil {
		err = v.Get(&p)
	}
	return p, err
}

// Readiness reads the live state of a context's objects, as ReadClusters, and counts them:
// NotReady is what is missing, not Ready or on a cluster that did not answer.
func (s *Starter) Readiness(ctx context.Context, target lifecycle.Target, ctxID string) (lifecycle.BatchResult, error) {
	return s.read(ctx, target, lifecycle.ReadInput{ContextID: ctxID})
}

// ReadWorkflowID is the id of the workflow reading in's clusters: concurrent reads of the
// same clusters of a context share one run.
func ReadWorkflowID(target lifecycle.Target, in lifecycle.ReadInput) string {
	kind := "read"
	if in.Detail {
		kind = "read-detail"
	}
	if len(in.Clusters) > 0 {
		h := sha256.Sum256([]byte(strings.Join(in.Clusters, "\n")))
		kind += "-" + hex.EncodeToString(h[:8])
	}
	return target.OpWorkflowID(kind, in.ContextID)
}

func (s *Starter) read(ctx context.Context, target lifecycle.Target, in lifecycle.ReadInput) (lifecycle.BatchResult, error) {
	run, err := s.Client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID:                       ReadWorkflowID(target, in),
		TaskQueue:                s.TaskQueue,
		WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING,
		WorkflowExecutionTimeout: 5 * time.Minute,
		TypedSearchAttributes:    lifecycle.SearchAttributes(target, "status"),
		StaticSummary:            "cluster status of " + target.String(),
	}, lifecycle.WorkflowReadStatus, in)
	if err != nil {
		return lifecycle.BatchResult{}, err
	}
	var res lifecycle.BatchResult
	return res, run.Get(ctx, &res)
}

// Invalid is an operation the request itself got wrong (HTTP 400), e.g. an unknown revision.
type Invalid struct{ Message string }

func (e *Invalid) Error() string { return e.Message }

// refused turns the workflow's refusals into *Refused or *Invalid; other errors pass through.
func refused(err error) error {
	var appErr *temporal.ApplicationError
	if errors.As(err, &appErr) {
		switch appErr.Type() {
		case lifecycle.ErrBusy, lifecycle.ErrInvalidState, lifecycle.ErrRefused:
			return &Refused{Message: appErr.Message()}
		case lifecycle.ErrInvalidInput:
			return &Invalid{Message: appErr.Message()}
		}
	}
	return err
}

// opsOfStatus names the operations whose workflow runs while a context has a status.
var opsOfStatus = map[string][]string{
	lifecycle.StatusInstantiating: {lifecycle.OpInstantiate, lifecycle.OpMigrate},
	lifecycle.StatusTerminating:   {lifecycle.OpTerminate},
	lifecycle.StatusUpdating:      {lifecycle.OpUpdate, lifecycle.OpRollback},
}

// clusterActivities are shown by the per-resource statuses, not as waiting steps.
var clusterActivities = []string{lifecycle.ApplyCluster.Name(), lifecycle.DeleteCluster.Name(),
	lifecycle.PruneCluster.Name(), lifecycle.ReadCluster.Name(), lifecycle.ApplyGroup.Name(), lifecycle.DeleteGroup.Name(),
	lifecycle.PruneGroup.Name(), lifecycle.ReadGroup.Name()}

// batchWorkflows are an operation's own children; the others run for its controllers.
var batchWorkflows = []string{lifecycle.WorkflowApplyBatch, lifecycle.WorkflowDeleteBatch, lifecycle.WorkflowPruneBatch,
	lifecycle.WorkflowReadBatch}

// Running describes the operation running on a context with the given status (nil when
// none runs): its workflow, and its controller steps and retried steps. It reads only
// Temporal's record of the run, so it answers while every worker is down.
func (s *Starter) Running(ctx context.Context, target lifecycle.Target, status, ctxID string) (*lifecycle.RunningOp, error) {
	for _, op := range opsOfStatus[status] {
		id := target.OpWorkflowID(op, ctxID)
		d, err := s.Client.DescribeWorkflowExecution(ctx, id, "")
		var notFound *serviceerror.NotFound
		if errors.As(err, &notFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		info := d.GetWorkflowExecutionInfo()
		if info.GetStatus() != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
			continue
		}
		run := &lifecycle.RunningOp{WorkflowID: id, RunID: info.GetExecution().GetRunId()}
		for _, p := range d.GetPendingActivities() {
			ctrl := lifecycle.ControllerOfActivity(p.GetActivityId())
			typ := p.GetActivityType().GetName()
			if ctrl == "" && (p.GetAttempt() < 2 || slices.Contains(clusterActivities, typ)) {
				continue
			}
			w := lifecycle.WaitingStep{Activity: typ, Controller: ctrl, State: pendingState(p.GetState()),
				Attempt: p.GetAttempt(), LastError: p.GetLastFailure().GetMessage(), Worker: p.GetLastWorkerIdentity()}
			if t := p.GetScheduledTime(); t != nil {
				at := t.AsTime()
				w.Scheduled = &at
			}
			run.Waiting = append(run.Waiting, w)
		}
		for _, c := range d.GetPendingChildren() {
			if slices.Contains(batchWorkflows, c.GetWorkflowTypeName()) {
				continue
			}
			run.Hooks = append(run.Hooks, lifecycle.HookRun{Type: c.GetWorkflowTypeName(), WorkflowID: c.GetWorkflowId(),
				RunID: c.GetRunId(), State: "Running"})
		}
		return run, nil
	}
	return nil, nil
}

func pendingState(s enumspb.PendingActivityState) string {
	switch s {
	case enumspb.PENDING_ACTIVITY_STATE_SCHEDULED:
		return "Scheduled"
	case enumspb.PENDING_ACTIVITY_STATE_STARTED:
		return "Started"
	case enumspb.PENDING_ACTIVITY_STATE_CANCEL_REQUESTED:
		return "CancelRequested"
	}
	return s.String()
}

// Command gives an operator's command to the staged rollout of the operation running on
// a context with the given status; the rollout's validator refuses what does not fit.
func (s *Starter) Command(ctx context.Context, dig lifecycle.Target, status, ctxID string, cmd lifecycle.RolloutCommand) (lifecycle.RolloutStatus, error) {
	for _, op := range opsOfStatus[status] {
		h, err := s.Client.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{
			WorkflowID: dig.OpWorkflowID(op, ctxID), UpdateName: lifecycle.UpdateRollout,
			Args: []any{cmd}, WaitForStage: client.WorkflowUpdateStageCompleted,
		})
		var notFound *serviceerror.NotFound
		if errors.As(err, &notFound) {
			continue
		}
		if err != nil {
			return lifecycle.RolloutStatus{}, refused(err)
		}
		var st lifecycle.RolloutStatus
		if err := h.Get(ctx, &st); err != nil {
			return st, refused(err)
		}
		return st, nil
	}
	return lifecycle.RolloutStatus{}, &Refused{Message: fmt.Sprintf("%s has no running operation to %s", dig, cmd.Action)}
}

// Wake sends lifecycle.SignalWake to workflow o.ID (a feature's long-running workflow), with start starting it (with arg) when none runs;
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
