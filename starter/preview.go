package starter

import (
	"context"
	"errors"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/temco/temco/internal/core/lifecycle"
)

// previewRunTimeout ends a preview stuck on a worker that never comes back. Its activities
// give up after a few attempts well before: a run that ends by this timeout is the only
// one that leaves its scratch context behind.
const previewRunTimeout = time.Hour

// PreviewFailed is a preview that could not finish: a step failed after its attempts (a
// store or worker that did not answer). Nothing was changed; it may be asked again.
type PreviewFailed struct{ Message string }

func (e *PreviewFailed) Error() string { return e.Message }

// Preview runs a PreviewRollout workflow (lifecycle.RolloutPreview: what the DIG's next
// operation would change, stage by stage) and returns its answer once it has ended, or
// the context's error. Its id is the DIG's operation id for "preview" and the scratch
// context, which the caller draws (NewContextID). What the DIG's state or configuration
// does not allow is *Refused; a step that failed after its attempts is *PreviewFailed.
func (s *Starter) Preview(ctx context.Context, in lifecycle.PreviewInput) (lifecycle.RolloutPreview, error) {
	run, err := s.Client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID:                       in.DIG.OpWorkflowID(lifecycle.OpPreview, in.ContextID),
		TaskQueue:                s.TaskQueue,
		WorkflowExecutionTimeout: previewRunTimeout,
		TypedSearchAttributes:    lifecycle.SearchAttributes(in.DIG, lifecycle.OpPreview),
		StaticSummary:            "rollout preview of " + in.DIG.String(),
	}, lifecycle.WorkflowPreviewRollout, in)
	if err != nil {
		return lifecycle.RolloutPreview{}, err
	}
	var out lifecycle.RolloutPreview
	if err := run.Get(ctx, &out); err != nil {
		return out, previewErr(ctx, err)
	}
	return out, nil
}

// previewErr sorts a preview's failure: what the DIG's state or configuration does not
// allow — a bad placement or chart, a strategy leaving a cluster out, a controller's
// refusal — (409; the api checks the revision asked for before it starts one), or a step
// that failed (503).
func previewErr(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	var appErr *temporal.ApplicationError
	if errors.As(err, &appErr) {
		switch appErr.Type() {
		case lifecycle.ErrInvalidInput, lifecycle.ErrInvalidState, lifecycle.ErrBusy:
			return &Refused{Message: appErr.Message()}
		}
	}
	var wfErr *temporal.WorkflowExecutionError
	if errors.As(err, &wfErr) {
		msg := err.Error()
		if errors.As(err, &appErr) {
			msg = appErr.Message()
		}
		return &PreviewFailed{Message: msg}
	}
	return err
}
