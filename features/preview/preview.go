// Package preview is rollout previews (temco's own; EMCO has none): POST
// DIG/rollout-preview answers, before anything runs, what the DIG's next operation would
// change on each cluster, stage by stage. The PreviewRollout workflow (flow) builds the
// operation's context as a scratch context, compares it per cluster with the running one
// and deletes it (work). Here: the feature, the running of a preview and its route
// (routes.go).
package preview

import (
	"context"
	"errors"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/temco/temco/api"
	"github.com/temco/temco/features"
	"github.com/temco/temco/features/preview/flow"
	"github.com/temco/temco/features/preview/work"
	"github.com/temco/temco/internal/core/lifecycle"
	"github.com/temco/temco/starter"
)

// Feature is rollout previews.
var Feature = features.Feature{
	Name:       "preview",
	Workflows:  map[string]any{flow.WorkflowPreviewRollout: flow.PreviewRollout}, // POST DIG/rollout-preview
	Activities: work.Register,
	TakeOver:   []string{flow.WorkflowPreviewRollout},
	KeepAlive:  []string{flow.DiffPreview.Name()},
	API:        extension,
}

// extension is rollout previews' part of the api (routes.go); in.Starter nil: switched off.
func extension(in features.Mounting) api.Extension {
	st := in.Starter
	if st == nil {
		return Routes{}.Extension()
	}
	return Routes{Previewer: Starter{st}}.Extension()
}

// Starter runs previews: the routes' Previewer.
type Starter struct{ *starter.Starter }

// previewRunTimeout ends a preview stuck on a worker that never comes back. Its activities
// give up after a few attempts well before: a run that ends by this timeout is the only
// one that leaves its scratch context behind.
const previewRunTimeout = time.Hour

// Preview runs a PreviewRollout workflow (flow.RolloutPreview: what the DIG's next
// operation would change, stage by stage) and returns its answer once it has ended, or
// the context's error. Its id is the DIG's operation id for "preview" and the scratch
// context, which the caller draws (NewContextID). What the DIG's state or configuration
// does not allow is *starter.Refused; a step that failed after its attempts is *flow.PreviewFailed.
func (s Starter) Preview(ctx context.Context, in flow.PreviewInput) (flow.RolloutPreview, error) {
	run, err := s.Client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID:                       in.DIG.OpWorkflowID(flow.OpPreview, in.ContextID),
		TaskQueue:                s.TaskQueue,
		WorkflowExecutionTimeout: previewRunTimeout,
		TypedSearchAttributes:    lifecycle.SearchAttributes(in.DIG, flow.OpPreview),
		StaticSummary:            "rollout preview of " + in.DIG.String(),
	}, flow.WorkflowPreviewRollout, in)
	if err != nil {
		return flow.RolloutPreview{}, err
	}
	var out flow.RolloutPreview
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
			return &starter.Refused{Message: appErr.Message()}
		}
	}
	var wfErr *temporal.WorkflowExecutionError
	if errors.As(err, &wfErr) {
		msg := err.Error()
		if errors.As(err, &appErr) {
			msg = appErr.Message()
		}
		return &flow.PreviewFailed{Message: msg}
	}
	return err
}
