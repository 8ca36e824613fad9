package events

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// errorsKept is how many of a receiver's last errors its status keeps.
const errorsKept = 10

// Status is a receiver's deliveries as its delivery workflow recorded them.
type Status struct {
	Receiver  string `json:"-" bson:"_id"`
	Delivered int    `json:"delivered" bson:"delivered"`
	// Failed counts the events refused for good (an event not taken for a day is dropped
	// too, its last errors kept, not counted).
	Failed int `json:"failed" bson:"failed"`
	// Queued are the events waiting behind the one being delivered, at the last attempt.
	Queued int `json:"queued" bson:"queued"`
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

// Statuses is the collection "notify_status": one document per receiver.
type Statuses struct{ coll *mongo.Collection }

// OpenStatuses returns the statuses kept in db (it reads nothing).
func OpenStatuses(db *mongo.Database) *Statuses {
	return &Statuses{coll: db.Collection("notify_status")}
}

// Get returns receiver's status (Idle when it has none).
func (s *Statuses) Get(ctx context.Context, receiver string) (Status, error) {
	st := Status{Receiver: receiver, State: StateIdle, LastErrors: []Attempt{}}
	err := s.coll.FindOne(ctx, bson.D{{Key: "_id", Value: receiver}}).Decode(&st)
	if errors.Is(err, mongo.ErrNoDocuments) {
		return st, nil
	}
	if err != nil {
		return st, fmt.Errorf("read the deliveries of %s: %w", receiver, err)
	}
	if st.LastErrors == nil {
		st.LastErrors = []Attempt{}
	}
	return st, nil
}

// Record records attempt a of receiver's delivery: delivered, failed for now (a.Error)
// or given up (gaveUp). One workflow delivers a receiver's events one at a time, so
// reading and replacing its document races with nothing.
func (s *Statuses) Record(ctx context.Context, receiver string, a Attempt, queued int, gaveUp bool) error {
	st, err := s.Get(ctx, receiver)
	if err != nil {
		return err
	}
	st.Queued, st.Updated = queued, time.Now().UTC()
	switch {
	case a.Error == "":
		st.Delivered++
		st.State, st.LastDelivered = StateDelivering, &a
	default:
		st.State = StateRetrying
		if gaveUp {
			st.State = StateRefused
			st.Failed++
		}
		st.LastErrors = append(st.LastErrors, a)
		if len(st.LastErrors) > errorsKept {
			st.LastErrors = st.LastErrors[len(st.LastErrors)-errorsKept:]
		}
	}
	_, err = s.coll.ReplaceOne(ctx, bson.D{{Key: "_id", Value: receiver}}, st, options.Replace().SetUpsert(true))
	if err != nil {
		return fmt.Errorf("record the deliveries of %s: %w", receiver, err)
	}
	return nil
}

// Forget drops receiver's status (it was deleted).
func (s *Statuses) Forget(ctx context.Context, receiver string) error {
	_, err := s.coll.DeleteOne(ctx, bson.D{{Key: "_id", Value: receiver}})
	return err
}
