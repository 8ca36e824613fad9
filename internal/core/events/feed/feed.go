// Package feed keeps temco's events (internal/core/events) in the store: the feed of every
// event raised (collection "events"), each receiver's delivery status ("notify_status"),
// and the Emitter the activities that find an event raise it with.
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
	"github.com/temco/temco/internal/core/store"
)

// Feed is the collection "events" of the resource store's database: every event raised,
// newest first in reads, for the API and the dashboard.
type Feed struct{ coll *mongo.Collection }

// stored is an event in the feed; its _id is the event's id, so an event raised twice is
// kept once.
type stored struct {
	ID      string `bson:"_id"`
	Project string `bson:"project"`
	// At is Time in nanoseconds: a stored date keeps milliseconds, and the feed is read and
	// paged in the events' own order.
	At    int64        `bson:"at"`
	Event events.Event `bson:"event"`
}

// Open returns the feed kept in db (it reads nothing).
func Open(db *mongo.Database) *Feed { return &Feed{coll: db.Collection("events")} }

// EnsureIndexes creates the feed's index: a project's events by time.
func (f *Feed) EnsureIndexes(ctx context.Context) error {
	return store.EnsureIndexes(ctx, f.coll, []store.Index{{{Key: "project", Value: 1}, {Key: "at", Value: -1}}, {{Key: "at", Value: -1}}})
}

// Record keeps evs; those kept already (by id) are left as they are.
func (f *Feed) Record(ctx context.Context, evs []events.Event) error {
	docs := make([]any, len(evs))
	for i, e := range evs {
		docs[i] = stored{ID: e.ID, Project: e.Project, At: e.Time.UnixNano(), Event: e}
	}
	_, err := f.coll.InsertMany(ctx, docs, options.InsertMany().SetOrdered(false))
	if err != nil && !onlyDuplicates(err) {
		return fmt.Errorf("record events: %w", err)
	}
	return nil
}

func onlyDuplicates(err error) bool {
	var bw mongo.BulkWriteException
	if !errors.As(err, &bw) || bw.WriteConcernError != nil {
		return mongo.IsDuplicateKeyError(err)
	}
	for _, we := range bw.WriteErrors {
		if we.Code != 11000 {
			return false
		}
	}
	return true
}

// Page asks for a feed's events: a project's ("" for every project's and the fleet's,
// an admin's view), before a time (zero: now), at most Limit.
type Page struct {
	Project string
	All     bool // every project's and the fleet's (admins): Project is then ignored
	Before  time.Time
	Types   []string
	Limit   int
}

// List returns the events of p, newest first.
func (f *Feed) List(ctx context.Context, p Page) ([]events.Event, error) {
	filter := bson.D{}
	if !p.All {
		filter = append(filter, bson.E{Key: "project", Value: p.Project})
	}
	if !p.Before.IsZero() {
		filter = append(filter, bson.E{Key: "at", Value: bson.D{{Key: "$lt", Value: p.Before.UnixNano()}}})
	}
	if len(p.Types) > 0 {
		filter = append(filter, bson.E{Key: "event.type", Value: bson.D{{Key: "$in", Value: p.Types}}})
	}
	cur, err := f.coll.Find(ctx, filter, options.Find().SetSort(bson.D{{Key: "at", Value: -1}, {Key: "_id", Value: 1}}).SetLimit(int64(p.Limit)))
	if err != nil {
		return nil, fmt.Errorf("list events: %w", err)
	}
	var docs []stored
	if err := cur.All(ctx, &docs); err != nil {
		return nil, fmt.Errorf("list events: %w", err)
	}
	out := make([]events.Event, len(docs))
	for i, d := range docs {
		out[i] = d.Event
		out[i].Time = time.Unix(0, d.At).UTC() // to the nanosecond: what before= pages from
	}
	return out, nil
}
