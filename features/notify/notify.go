// Package notify tells operators what happened: notification receivers (a project's get
// its events, an admin's the fleet's) and the delivery of each event raised
// (internal/core/events) to each receiver that takes it, by one NotifyReceiver workflow
// per receiver (flow), one DeliverEvent activity per attempt (work). Its routes (routes.go)
// serve the receivers, their delivery status and the event feed (docs/notifications.md).
package notify

import (
	"context"
	"errors"

	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"

	"github.com/temco/temco/api"
	"github.com/temco/temco/features"
	"github.com/temco/temco/features/notify/flow"
	"github.com/temco/temco/features/notify/work"
	"github.com/temco/temco/internal/core/events"
	"github.com/temco/temco/internal/core/lifecycle"
	"github.com/temco/temco/starter"
)

// Feature is the notifications.
var Feature = features.Feature{
	Name:       "notify",
	Workflows:  map[string]any{flow.WorkflowNotifyReceiver: flow.NotifyReceiver},
	Activities: work.Register,
	API: func(in features.Mounting) api.Extension {
		var r Receivers
		if in.Starter != nil {
			r = Starter{in.Starter}
		}
		return Extension(r, in.NotifyHosts)
	},
	Deliver: func(s *starter.Starter) func(context.Context, string, events.Event) error {
		return Starter{s}.Deliver
	},
}

// Starter runs the delivery workflows on a *starter.Starter.
type Starter struct{ *starter.Starter }

// Deliver hands e to receiver's delivery workflow, started if none runs.
func (s Starter) Deliver(ctx context.Context, receiver string, e events.Event) error {
	o := client.StartWorkflowOptions{ID: flow.WorkflowID(receiver), TaskQueue: s.TaskQueue,
		StaticSummary: "deliveries to notification receiver " + receiver}
	_, err := s.Client.SignalWithStartWorkflow(ctx, o.ID, flow.SignalEvent, e, o, flow.WorkflowNotifyReceiver,
		flow.ReceiverInput{Receiver: receiver})
	return err
}

// StopDelivering ends receiver's delivery workflow, if one runs (the receiver was deleted).
func (s Starter) StopDelivering(ctx context.Context, receiver string) error {
	err := s.Client.SignalWorkflow(ctx, flow.WorkflowID(receiver), "", lifecycle.SignalStop, nil)
	var notFound *serviceerror.NotFound
	if errors.As(err, &notFound) {
		return nil
	}
	return err
}
