package events

import "time"

// Status is a receiver's deliveries as its delivery workflow recorded them.
type Status struct {
	Receiver  string `json:"-" bson:"_id"`
	Delivered int    `json:"delivered" bson:"delivered"`
	// Failed counts the events refused for good (an event not taken for a day is dropped
	// too, its last errors kept, not counted).
	Failed int `json:"failed" bson:"failed"`
	// Queued are the events waiting behind the one being delivered, at the last attempt.
	Queued int `json:"queued" bson:"queued"`
	// Dropped counts the events dropped because too many waited (the receiver was down
	// long): the oldest waiting go first.
	Dropped int `json:"dropped" bson:"dropped"`
	// State: "Delivering" (the last attempt succeeded), "Retrying" (it failed, the event is
	// tried again), "Refused" (the receiver refused it for good) or "Idle" (never tried).
	State         string    `json:"state" bson:"state"`
	LastDelivered *Attempt  `json:"lastDelivered,omitempty" bson:"lastDelivered,omitempty"`
	LastErrors    []Attempt `json:"lastErrors" bson:"lastErrors"`
	Updated       time.Time `json:"updated" bson:"updated"`
}

// Attempt is one delivery attempt of an event.
type Attempt struct {
	Event   string    `json:"event" bson:"event"`
	Type    string    `json:"type" bson:"type"`
	Time    time.Time `json:"time" bson:"time"`
	Attempt int32     `json:"attempt" bson:"attempt"`
	Error   string    `json:"error,omitempty" bson:"error,omitempty"`
}

// The states of a receiver's deliveries.
const (
	StateIdle       = "Idle"
	StateDelivering = "Delivering"
	StateRetrying   = "Retrying"
	// StateRefused: the last event was refused for good; the next will be tried.
	StateRefused = "Refused"
)

// Waiting is what waits behind an attempt: the events queued, and those dropped so far.
type Waiting struct{ Queued, Dropped int }
