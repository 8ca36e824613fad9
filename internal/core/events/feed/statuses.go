package feed

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/temco/temco/internal/core/events"
)

// errorsKept is how many of a receiver's last errors its status keeps.
const errorsKept = 10

// Statuses is the collection "notify_status": one document per receiver.
type Statuses struct{ coll *mongo.Collection }

// OpenStatuses returns the statuses kept in db (it reads nothing).
func OpenStatuses(db *mongo.Database) *Statuses {
	return &Statuses{coll: db.Collection("notify_status")}
}

// Get returns receiver's status (Idle when it has none).
func (s *Statuses) Get(ctx context.Context, receiver string) (events.Status, error) {
	st := events.Status{Receiver: receiver, State: events.StateIdle, LastErrors: []events.Attempt{}}
	err := s.coll.FindOne(ctx, bson.D{{Key: "_id", Value: receiver}}).Decode(&st)
	if errors.Is(err, mongo.ErrNoDocuments) {
		return st, nil
	}
	if err != nil {
		return st, fmt.Errorf("read the deliveries of %s: %w", receiver, err)
	}
	if st.LastErrors == nil {
		st.LastErrors = []events.Attempt{}
	}
	return st, nil
}

// Record records attempt a of receiver's delivery: delivered, failed for now (a.Error)
// or given up (gaveUp). One workflow delivers a receiver's events one at a time, so
// reading and replacing its document races with nothing.
func (s *Statuses) Record(ctx context.Context, receiver string, a events.Attempt, w events.Waiting, gaveUp bool) error {
	st, err := s.Get(ctx, receiver)
	if err != nil {
		return err
	}
	st.Queued, st.Dropped, st.Updated = w.Queued, max(st.Dropped, w.Dropped), time.Now().UTC()
	switch {
	case a.Error == "":
		st.Delivered++
		st.State, st.LastDelivered = events.StateDelivering, &a
	default:
		st.State = events.StateRetrying
		if gaveUp {
			st.State = events.StateRefused
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
