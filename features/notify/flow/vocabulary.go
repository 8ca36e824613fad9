// Package flow holds notify's NotifyReceiver workflow: one per notification receiver,
// which takes the events raised for it (SignalEvent, from internal/core/events' Emitter)
// and delivers them in the order they came, one at a time, each retried with backoff until
// the receiver takes it (DeliverEvent, in work). Workflow code only.
package flow

import (
	"github.com/temco/temco/internal/core/events"
	"github.com/temco/temco/internal/core/lifecycle"
)

// WorkflowNotifyReceiver is the delivery workflow's type.
const WorkflowNotifyReceiver = "NotifyReceiver"

// Signals of a NotifyReceiver: an event to deliver (an events.Event) and the receiver's
// deletion (lifecycle.SignalStop).
const SignalEvent = "event"

// WorkflowID is the delivery workflow of a receiver (its store id).
func WorkflowID(receiver string) string { return "notify" + receiver }

// ReceiverInput is a NotifyReceiver's input, and what a run carries to the next.
type ReceiverInput struct {
	Receiver string `json:"receiver"` // its store id
	// Queue are the events taken and not delivered yet, in order.
	Queue []events.Event `json:"queue,omitempty"`
	// Recent are the ids of the last events taken (delivered or queued), oldest first:
	// an event raised again (its activity retried) is dropped.
	Recent []string `json:"recent,omitempty"`
	// Dropped counts the events dropped because the queue was full, over every run.
	Dropped int `json:"dropped,omitempty"`
}

// DeliverInput is one delivery: the event and how many wait behind it (for the status).
type DeliverInput struct {
	Receiver string       `json:"receiver"`
	Event    events.Event `json:"event"`
	Queued   int          `json:"queued"`
	// Dropped is the receiver's workflow's ReceiverInput.Dropped: the status keeps it (a
	// total, so an attempt retried counts nothing twice).
	Dropped int `json:"dropped,omitempty"`
}

// Delivered says how a delivery ended: Gone, the receiver no longer exists.
type Delivered struct {
	Gone bool `json:"gone,omitempty"`
}

var byWork = lifecycle.Implementer{Package: "features/notify/work", Struct: "Activities"}

// DeliverEvent sends one event to its receiver and records the outcome in the receiver's
// delivery status. A refusal that cannot succeed (a 4xx other than 408 and 429) is not
// retried.
var DeliverEvent = lifecycle.Declare[DeliverInput, Delivered](byWork, "DeliverEvent")

func init() { lifecycle.DeclareWorkflows(WorkflowNotifyReceiver) }
