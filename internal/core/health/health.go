// Package health keeps what temco's probes found of each registered cluster: whether its
// API server answered, since when, and why not. The ClusterHealth workflow
// (features/health/flow) probes every cluster in turn and stores the outcome here; the fleet
// home counts clusters by it and the cluster view shows it.
//
// A round of probes writes only what changed (a cluster's state or its error) and one
// document for the round, so a fleet of 10,000 steady clusters costs a read per page of
// them, not 10,000 writes: when a cluster was last checked is when the round that covered
// it ran.
package health

import (
	"context"
	"fmt"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/temco/temco/internal/core/store"
)

// A cluster's reachability.
const (
	Reachable   = "Reachable"   // its API server answered /readyz
	Unreachable = "Unreachable" // it did not, or refused the credentials (Error says which)
	GitOps      = "GitOps"      // reached through git: temco does not talk to it
	Agent       = "Agent"       // reached by its agent, which calls temco: temco does not talk to it
	Unknown     = "Unknown"     // not probed yet
)

// Cluster is one cluster's last probe outcome, under its key (provider+cluster).
type Cluster struct {
	Key   string    `json:"-" bson:"_id"`
	State string    `json:"state" bson:"state"`
	Error string    `json:"error,omitempty" bson:"error,omitempty"`
	Since time.Time `json:"since" bson:"since"` // when a probe found State (or Error) first
	// Checked: every cluster was probed at or after it, the start of the last round that
	// completed (filled in by reads; zero before the first).
	Checked time.Time `json:"checked" bson:"-"`
}

// Store is the collection "cluster_health" of the resource store's database.
type Store struct{ coll *mongo.Collection }

// roundID is the document of the last round.
const roundID = "~round"

// Open returns the outcomes kept in db (it reads nothing).
func Open(db *mongo.Database) *Store { return &Store{coll: db.Collection("cluster_health")} }

// Change is a cluster whose state a probe changed: From is Unknown for one never probed.
type Change struct {
	Cluster
	From      string
	FromSince time.Time
}

// Save stores the outcomes of one page of probes: those whose state or error changed,
// keeping Since of the others. It returns the clusters whose state changed; raise
// (nil: none) is called with them before anything is stored, so that a save that fails
// after it raises the same changes again.
func (s *Store) Save(ctx context.Context, probed []Cluster, raise func([]Change) error) error {
	if len(probed) == 0 {
		return nil
	}
	keys := make([]string, len(probed))
	for i, c := range probed {
		keys[i] = c.Key
	}
	known, err := s.find(ctx, bson.D{{Key: "_id", Value: bson.D{{Key: "$in", Value: keys}}}})
	if err != nil {
		return err
	}
	var writes []mongo.WriteModel
	var changes []Change
	for _, c := range probed {
		k, ok := known[c.Key]
		if ok && k.State == c.State && k.Error == c.Error {
			continue
		}
		if !ok {
			changes = append(changes, Change{Cluster: c, From: Unknown})
		} else if k.State != c.State {
			changes = append(changes, Change{Cluster: c, From: k.State, FromSince: k.Since})
		}
		writes = append(writes, mongo.NewReplaceOneModel().SetFilter(bson.D{{Key: "_id", Value: c.Key}}).SetReplacement(c).SetUpsert(true))
	}
	if len(writes) == 0 {
		return nil
	}
	if raise != nil && len(changes) > 0 {
		if err := raise(changes); err != nil {
			return err
		}
	}
	if _, err := s.coll.BulkWrite(ctx, writes, options.BulkWrite().SetOrdered(false)); err != nil {
		return fmt.Errorf("store cluster health: %w", err)
	}
	return nil
}

// Forget drops the outcomes of clusters no longer registered: every key in the range
// (after, upTo] (upTo "" for the end) that is not in kept.
func (s *Store) Forget(ctx context.Context, after, upTo string, kept []string) error {
	rng := bson.D{{Key: "$gt", Value: after}, {Key: "$nin", Value: append(kept, roundID)}}
	if upTo != "" {
		rng = append(rng, bson.E{Key: "$lte", Value: upTo})
	}
	if _, err := s.coll.DeleteMany(ctx, bson.D{{Key: "_id", Value: rng}}); err != nil {
		return fmt.Errorf("forget cluster health: %w", err)
	}
	return nil
}

// round is the document of the last round of probes.
type round struct {
	Started time.Time      `bson:"started"`
	States  map[string]int `bson:"states"` // the clusters by state as the round ended
}

// Round records that a round of probes that started at t has completed, with the
// clusters counted by state then: the fleet reads those counts, one document, where
// counting them on each request would read every cluster's (a second at 10,000 on
// FerretDB).
func (s *Store) Round(ctx context.Context, t time.Time) error {
	states, err := s.count(ctx)
	if err != nil {
		return err
	}
	_, err = s.coll.ReplaceOne(ctx, bson.D{{Key: "_id", Value: roundID}}, round{Started: t, States: states}, options.Replace().SetUpsert(true))
	if err != nil {
		return fmt.Errorf("store the round of probes: %w", err)
	}
	return nil
}

// Counts returns the clusters by state as the last round ended (empty before the first).
func (s *Store) Counts(ctx context.Context) (map[string]int, error) {
	var r round
	err := store.FindOne(ctx, s.coll, bson.D{{Key: "_id", Value: roundID}}, &r)
	if err != nil && err != mongo.ErrNoDocuments {
		return nil, fmt.Errorf("read the round of probes: %w", err)
	}
	if r.States == nil {
		r.States = map[string]int{}
	}
	return r.States, nil
}

// Of returns the outcomes of keys (every cluster when keys is nil), with Checked set;
// a cluster never probed is absent.
func (s *Store) Of(ctx context.Context, keys []string) (map[string]Cluster, error) {
	filter := bson.D{}
	if keys != nil {
		filter = bson.D{{Key: "_id", Value: bson.D{{Key: "$in", Value: append(keys, roundID)}}}}
	}
	out, err := s.find(ctx, filter)
	if err != nil {
		return nil, err
	}
	var r round
	if err := store.FindOne(ctx, s.coll, bson.D{{Key: "_id", Value: roundID}}, &r); err != nil && err != mongo.ErrNoDocuments {
		return nil, fmt.Errorf("read the round of probes: %w", err)
	}
	for k, c := range out {
		c.Checked = r.Started
		out[k] = c
	}
	return out, nil
}

// count counts the clusters probed by state.
func (s *Store) count(ctx context.Context) (map[string]int, error) {
	cur, err := s.coll.Find(ctx, bson.D{{Key: "_id", Value: bson.D{{Key: "$ne", Value: roundID}}}},
		options.Find().SetProjection(bson.D{{Key: "state", Value: 1}}))
	if err != nil {
		return nil, fmt.Errorf("count cluster health: %w", err)
	}
	defer cur.Close(ctx)
	out := map[string]int{}
	for cur.Next(ctx) {
		out[cur.Current.Lookup("state").StringValue()]++
	}
	if err := cur.Err(); err != nil {
		return nil, fmt.Errorf("count cluster health: %w", err)
	}
	return out, nil
}

func (s *Store) find(ctx context.Context, filter bson.D) (map[string]Cluster, error) {
	cur, err := s.coll.Find(ctx, filter)
	if err != nil {
		return nil, fmt.Errorf("read cluster health: %w", err)
	}
	var all []Cluster
	if err := cur.All(ctx, &all); err != nil {
		return nil, fmt.Errorf("read cluster health: %w", err)
	}
	out := make(map[string]Cluster, len(all))
	for _, c := range all {
		if c.Key != roundID {
			out[c.Key] = c
		}
	}
	return out, nil
}
