package flow

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"testing"
	"time"

	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/temco/temco/internal/core/events"
	"github.com/temco/temco/internal/core/lifecycle"
)

const receiverID = "/projects/p1/notification-receivers/r1"

// receiverSide stands for DeliverEvent: it records each attempt ("id#n") and answers
// with what answer says for it.
type receiverSide struct {
	attempts []string
	tries    map[string]int
	// answer is an attempt's outcome (nil: delivered).
	answer func(id string, try int) (Delivered, error)
}

func (r *receiverSide) env(t *testing.T) *testsuite.TestWorkflowEnvironment {
	t.Helper()
	var s testsuite.WorkflowTestSuite
	s.SetLogger(log.NewStructuredLogger(slog.New(slog.DiscardHandler)))
	env := s.NewTestWorkflowEnvironment()
	env.SetTestTimeout(30 * time.Second)
	r.tries = map[string]int{}
	lifecycle.Register(env, DeliverEvent, func(_ context.Context, in DeliverInput) (Delivered, error) {
		if in.Receiver != receiverID {
			return Delivered{}, fmt.Errorf("delivered to %s", in.Receiver)
		}
		r.tries[in.Event.ID]++
		r.attempts = append(r.attempts, fmt.Sprintf("%s#%d", in.Event.ID, r.tries[in.Event.ID]))
		if r.answer == nil {
			return Delivered{}, nil
		}
		return r.answer(in.Event.ID, r.tries[in.Event.ID])
	})
	return env
}

func ev(id string) events.Event { return events.Event{ID: id, Type: events.OperationFailed} }

// signal sends the events with ids at d.
func signal(env *testsuite.TestWorkflowEnvironment, d time.Duration, ids ...string) {
	env.RegisterDelayedCallback(func() {
		for _, id := range ids {
			env.SignalWorkflow(SignalEvent, ev(id))
		}
	}, d)
}

// stopAt signals the receiver's deletion at d.
func stopAt(env *testsuite.TestWorkflowEnvironment, d time.Duration) {
	env.RegisterDelayedCallback(func() { env.SignalWorkflow(lifecycle.SignalStop, nil) }, d)
}

func run(t *testing.T, env *testsuite.TestWorkflowEnvironment, in ReceiverInput) {
	t.Helper()
	env.ExecuteWorkflow(NotifyReceiver, in)
	if !env.IsWorkflowCompleted() {
		t.Fatal("the workflow did not complete")
	}
	if err := env.GetWorkflowError(); err != nil {
		t.Fatalf("the workflow failed: %v", err)
	}
}

func wantAttempts(t *testing.T, r *receiverSide, want ...string) {
	t.Helper()
	if !slices.Equal(r.attempts, want) {
		t.Errorf("attempts %q, want %q", r.attempts, want)
	}
}

// Events are delivered in the order they came, whether they came at once, while idle or
// during a delivery.
func TestEventsAreDeliveredInOrder(t *testing.T) {
	r := &receiverSide{}
	env := r.env(t)
	signal(env, 0, "e1", "e2", "e3")
	signal(env, time.Minute, "e4")
	signal(env, 2*time.Minute, "e5", "e6")
	stopAt(env, time.Hour)
	run(t, env, ReceiverInput{Receiver: receiverID})
	wantAttempts(t, r, "e1#1", "e2#1", "e3#1", "e4#1", "e5#1", "e6#1")
}

// An event raised twice (its activity retried) is delivered once: queued twice, or raised
// again after its delivery.
func TestADuplicateEventIsDeliveredOnce(t *testing.T) {
	r := &receiverSide{}
	env := r.env(t)
	signal(env, 0, "e1", "e1", "e2", "e1")
	signal(env, time.Minute, "e2", "e3", "e1")
	stopAt(env, time.Hour)
	run(t, env, ReceiverInput{Receiver: receiverID})
	wantAttempts(t, r, "e1#1", "e2#1", "e3#1")
}

// The ids a run carries (Recent) are dropped as duplicates too: an event raised again
// after a continue-as-new is not delivered again.
func TestRecentIDsFromThePreviousRunAreDropped(t *testing.T) {
	r := &receiverSide{}
	env := r.env(t)
	signal(env, 0, "e0", "e1")
	stopAt(env, time.Hour)
	run(t, env, ReceiverInput{Receiver: receiverID, Recent: []string{"e0"}})
	wantAttempts(t, r, "e1#1")
}

// A delivery that fails for now is retried with backoff until it is taken; the events
// raised meanwhile wait behind it, in order.
func TestARetriedDeliveryKeepsTheNextEventsBehindIt(t *testing.T) {
	r := &receiverSide{answer: func(id string, try int) (Delivered, error) {
		if id == "e1" && try < 4 {
			return Delivered{}, errors.New("hooks.example.com answered 500 Internal Server Error")
		}
		return Delivered{}, nil
	}}
	env := r.env(t)
	signal(env, 0, "e1")
	signal(env, time.Second/2, "e2", "e3") // during e1's first backoff
	stopAt(env, time.Hour)
	run(t, env, ReceiverInput{Receiver: receiverID})
	wantAttempts(t, r, "e1#1", "e1#2", "e1#3", "e1#4", "e2#1", "e3#1")
}

// A delivery refused for good is not retried: the next event goes.
func TestARefusedDeliveryMovesOnToTheNext(t *testing.T) {
	r := &receiverSide{answer: func(id string, _ int) (Delivered, error) {
		if id == "e1" {
			return Delivered{}, temporal.NewNonRetryableApplicationError("hooks.example.com refused the event: 400 Bad Request", "DeliveryRefused", nil)
		}
		return Delivered{}, nil
	}}
	env := r.env(t)
	signal(env, 0, "e1", "e2")
	stopAt(env, time.Hour)
	run(t, env, ReceiverInput{Receiver: receiverID})
	wantAttempts(t, r, "e1#1", "e2#1")
}

// A receiver deleted while its delivery is retried (a receiver down for hours) ends the
// workflow at once: no more attempts, the events behind it dropped.
func TestStopEndsTheWorkflowDuringARetriedDelivery(t *testing.T) {
	r := &receiverSide{answer: func(string, int) (Delivered, error) {
		return Delivered{}, errors.New("hooks.example.com did not answer")
	}}
	env := r.env(t)
	signal(env, 0, "e1", "e2")
	// Before the test environment's 10 attempts run out (1, 2, 4, ... s apart: the 9th at
	// 121 s), which would move on to e2.
	stopAt(env, 100*time.Second)
	run(t, env, ReceiverInput{Receiver: receiverID})
	if n := len(r.attempts); n < 5 || n > 8 || slices.ContainsFunc(r.attempts, func(a string) bool { return a[:2] != "e1" }) {
		t.Errorf("attempts %q, want 5 to 8 of e1's and none after the stop", r.attempts)
	}
}

// A delivery finding its receiver gone ends the workflow: the next events are not tried.
func TestAGoneReceiverEndsTheWorkflow(t *testing.T) {
	r := &receiverSide{answer: func(id string, _ int) (Delivered, error) {
		return Delivered{Gone: id == "e2"}, nil
	}}
	env := r.env(t)
	signal(env, 0, "e1", "e2", "e3")
	run(t, env, ReceiverInput{Receiver: receiverID})
	wantAttempts(t, r, "e1#1", "e2#1")
}

// After deliveriesPerRun deliveries a run continues as new, carrying the events not
// delivered yet (in order) and the ids it took, so that none is lost or told twice.
func TestContinueAsNewCarriesTheQueueAndRecentIDs(t *testing.T) {
	r := &receiverSide{}
	env := r.env(t)
	const extra = 3
	var sent []string
	for i := range deliveriesPerRun + extra {
		sent = append(sent, fmt.Sprintf("e%03d", i))
	}
	signal(env, 0, sent...)
	env.ExecuteWorkflow(NotifyReceiver, ReceiverInput{Receiver: receiverID, Recent: []string{"old"}})
	var can *workflow.ContinueAsNewError
	if err := env.GetWorkflowError(); !errors.As(err, &can) {
		t.Fatalf("error %v, want a continue-as-new", err)
	}
	if can.WorkflowType.Name != WorkflowNotifyReceiver {
		t.Errorf("continued as %s", can.WorkflowType.Name)
	}
	var next ReceiverInput
	if err := converter.GetDefaultDataConverter().FromPayloads(can.Input, &next); err != nil {
		t.Fatal(err)
	}
	if len(r.attempts) != deliveriesPerRun || r.attempts[deliveriesPerRun-1] != sent[deliveriesPerRun-1]+"#1" {
		t.Errorf("%d delivered before continuing, the last %q", len(r.attempts), r.attempts[len(r.attempts)-1])
	}
	var queued []string
	for _, e := range next.Queue {
		queued = append(queued, e.ID)
	}
	if next.Receiver != receiverID || !slices.Equal(queued, sent[deliveriesPerRun:]) {
		t.Errorf("carried receiver %s, queue %q; want %s, %q", next.Receiver, queued, receiverID, sent[deliveriesPerRun:])
	}
	if want := append([]string{"old"}, sent...); !slices.Equal(next.Recent, want) {
		t.Errorf("carried %d recent ids, want %d (%q ... %q)", len(next.Recent), len(want), want[0], want[len(want)-1])
	}
}

// The ids remembered are bounded: the oldest is forgotten first.
func TestRecentIDsAreBounded(t *testing.T) {
	r := &receiver{in: ReceiverInput{Receiver: receiverID}, recent: map[string]bool{}}
	for i := range recentKept + 2 {
		r.take(ev(fmt.Sprint(i)))
	}
	if len(r.in.Recent) != recentKept || len(r.recent) != recentKept || r.in.Recent[0] != "2" {
		t.Errorf("%d ids kept (%d in the set), the oldest %q; want %d from \"2\"", len(r.in.Recent), len(r.recent), r.in.Recent[0], recentKept)
	}
	r.in.Queue, r.in.Dropped = nil, 0 // the queue's own bound aside (TestAFullQueueDropsTheOldestWaiting)
	r.take(ev("0"))                   // forgotten: taken again
	r.take(ev("5"))                   // remembered: dropped
	if n := len(r.in.Queue); n != 1 || r.in.Queue[0].ID != "0" {
		t.Errorf("queue of %d, want the one forgotten id taken again", n)
	}
}

// A receiver down long keeps at most maxQueued events waiting: beyond, the oldest waiting
// (not the head, which may be being delivered) are dropped and counted, and the newest kept.
func TestAFullQueueDropsTheOldestWaiting(t *testing.T) {
	r := &receiver{recent: map[string]bool{}}
	for i := range maxQueued + 2 {
		r.take(events.Event{ID: fmt.Sprint("e", i)})
	}
	q := r.in.Queue
	if len(q) != maxQueued || r.in.Dropped != 2 || q[0].ID != "e0" || q[1].ID != "e3" || q[len(q)-1].ID != fmt.Sprint("e", maxQueued+1) {
		t.Errorf("queue of %d (%s, %s ... %s), dropped %d", len(q), q[0].ID, q[1].ID, q[len(q)-1].ID, r.in.Dropped)
	}
}
