package flow

import (
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/temco/temco/internal/core/events"
	"github.com/temco/temco/internal/core/lifecycle"
)

const (
	// deliveriesPerRun bounds one run's history: the workflow continues as new after
	// them, carrying its queue.
	deliveriesPerRun = 500
	// recentKept is how many event ids a receiver remembers to drop an event raised again.
	recentKept = 1000
	// maxQueued bounds the events waiting for a receiver that is down (about 0.5 MB in a
	// run's input, under Temporal's 2 MB payload limit): beyond it the oldest waiting are
	// dropped and counted.
	maxQueued = 1000
	// The backoff of a delivery: a receiver back from an outage has its events within
	// maxBackoff; one down for giveUpAfter has the event dropped (its error recorded).
	maxBackoff  = 30 * time.Second
	giveUpAfter = 24 * time.Hour
)

// receiver is one NotifyReceiver's state.
type receiver struct {
	in     ReceiverInput
	recent map[string]bool
}

// NotifyReceiver delivers the events signalled to it in order, until its receiver is
// deleted (SignalStop, or a delivery finding it gone).
func NotifyReceiver(ctx workflow.Context, in ReceiverInput) error {
	r := &receiver{in: in, recent: map[string]bool{}}
	for _, id := range in.Recent {
		r.recent[id] = true
	}
	return r.run(ctx)
}

func (r *receiver) run(ctx workflow.Context) error {
	evs := workflow.GetSignalChannel(ctx, SignalEvent)
	stop := workflow.GetSignalChannel(ctx, lifecycle.SignalStop)
	actx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: 30 * time.Second, ScheduleToCloseTimeout: giveUpAfter,
		RetryPolicy: &temporal.RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: maxBackoff},
	})
	stopped := false
	take := func(c workflow.ReceiveChannel, _ bool) {
		var e events.Event
		c.Receive(ctx, &e)
		r.take(e)
	}
	onStop := func(c workflow.ReceiveChannel, _ bool) { c.Receive(ctx, nil); stopped = true }
	for delivered := 0; ; {
		r.drain(ctx, evs)
		if stopped || stop.ReceiveAsync(nil) {
			return nil
		}
		if delivered >= deliveriesPerRun || workflow.GetInfo(ctx).GetContinueAsNewSuggested() {
			return workflow.NewContinueAsNewError(ctx, NotifyReceiver, r.in)
		}
		if len(r.in.Queue) == 0 {
			sel := workflow.NewSelector(ctx)
			sel.AddReceive(evs, take)
			sel.AddReceive(stop, onStop)
			sel.Select(ctx)
			continue
		}
		// Deliver the head, listening for a deletion meanwhile (a delivery may be retried
		// for hours) and taking events as they come.
		dctx, cancel := workflow.WithCancel(actx)
		var out Delivered
		done := false
		f := DeliverEvent.Execute(dctx, DeliverInput{Receiver: r.in.Receiver, Event: r.in.Queue[0], Queued: len(r.in.Queue) - 1,
			Dropped: r.in.Dropped})
		sel := workflow.NewSelector(ctx)
		sel.AddFuture(f.Future, func(workflow.Future) {
			done = true
			if err := f.Get(ctx, &out); err != nil {
				// Given up, or refused for good: the activity recorded why; the next goes.
				workflow.GetLogger(ctx).Warn("event not delivered", "receiver", r.in.Receiver, "event", r.in.Queue[0].ID, "error", err)
			}
		})
		sel.AddReceive(evs, take)
		sel.AddReceive(stop, onStop)
		for !done && !stopped {
			sel.Select(ctx)
		}
		cancel()
		if stopped || out.Gone {
			return nil
		}
		r.in.Queue = r.in.Queue[1:]
		delivered++
	}
}

// drain takes every event signalled already, without blocking.
func (r *receiver) drain(ctx workflow.Context, evs workflow.ReceiveChannel) {
	for {
		var e events.Event
		if !evs.ReceiveAsync(&e) {
			return
		}
		r.take(e)
	}
}

// take queues e unless it was taken already, dropping the oldest waiting when full.
func (r *receiver) take(e events.Event) {
	if r.recent[e.ID] {
		return
	}
	r.recent[e.ID] = true
	r.in.Recent = append(r.in.Recent, e.ID)
	if len(r.in.Recent) > recentKept {
		delete(r.recent, r.in.Recent[0])
		r.in.Recent = r.in.Recent[1:]
	}
	r.in.Queue = append(r.in.Queue, e)
	if len(r.in.Queue) > maxQueued { // the head may be being delivered: the one after goes
		r.in.Queue = append(r.in.Queue[:1], r.in.Queue[2:]...)
		r.in.Dropped++
	}
}
