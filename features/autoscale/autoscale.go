// Package autoscale is capacity-aware autoscaling across clusters (docs/autoscaling.md):
// one Autoscale workflow per DIG with a capacity placement (flow) reads its clusters'
// signals, decides, drains (work) and changes the DIG's clusters through its ordinary
// update. Placement and the capacity placement's record are the core's (activities/
// placement, lifecycle.AutoscaleState). Here: the feature, the waking and signals of
// the autoscalers, and its routes (routes.go).
package autoscale

import (
	"context"
	"errors"
	"fmt"

	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"

	"github.com/temco/temco/api"
	"github.com/temco/temco/features"
	"github.com/temco/temco/features/autoscale/flow"
	"github.com/temco/temco/features/autoscale/work"
	"github.com/temco/temco/internal/core/lifecycle"
	"github.com/temco/temco/starter"
)

// Feature is the autoscaler.
var Feature = features.Feature{
	Name:       "autoscale",
	Workflows:  map[string]any{flow.WorkflowAutoscale: flow.Autoscale},
	Activities: work.Register,
	API:        extension,
}

// extension is its part of the api (routes.go); in.Starter nil: switched off.
func extension(in features.Mounting) api.Extension {
	st := in.Starter
	if st == nil {
		return Extension(nil)
	}
	return Extension(Starter{st})
}

// Starter wakes and signals the autoscalers: the routes' Autoscalers.
type Starter struct{ *starter.Starter }

// WakeAutoscaler has the DIG's autoscaler (flow.WorkflowAutoscale) evaluate now; with
// start, one is started when none runs (its capacity placement was stored), else a DIG
// without one is left alone (its capacity placement was deleted).
func (s Starter) WakeAutoscaler(ctx context.Context, dig lifecycle.Target, start bool) error {
	return s.Wake(ctx, start, client.StartWorkflowOptions{ID: flow.WorkflowID(dig),
		TypedSearchAttributes: lifecycle.SearchAttributes(dig, flow.OpAutoscale),
		StaticSummary:         "autoscaler of " + dig.String(),
	}, flow.WorkflowAutoscale, flow.AutoscaleInput{DIG: dig})
}

// SignalAutoscaler pauses or resumes the DIG's autoscaler; without one running it is
// *starter.Refused.
func (s Starter) SignalAutoscaler(ctx context.Context, dig lifecycle.Target, signal string) error {
	err := s.Client.SignalWorkflow(ctx, flow.WorkflowID(dig), "", signal, nil)
	var notFound *serviceerror.NotFound
	if errors.As(err, &notFound) {
		return &starter.Refused{Message: fmt.Sprintf("%s has no autoscaler running: storing its capacity placement starts one", dig)}
	}
	return err
}
