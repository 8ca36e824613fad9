// A context's header: creating, reading and updating it.

package appctx

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/temco/temco/internal/core/artifact"
	"github.com/temco/temco/internal/core/lifecycle"
	"github.com/temco/temco/internal/core/store"
)

// ErrNotFound is returned for a missing context.
var ErrNotFound = errors.New("appcontext not found")

// Create stores a new context header; creating the same id again is a no-op.
func (s *Store) Create(ctx context.Context, c *Context) error {
	c.Created, c.Updated = time.Now().UTC(), time.Now().UTC()
	_, err := s.contexts.InsertOne(ctx, c)
	if mongo.IsDuplicateKeyError(err) {
		return nil
	}
	return err
}

// Get returns a context header.
func (s *Store) Get(ctx context.Context, id string) (*Context, error) {
	var c Context
	err := store.FindOne(ctx, s.contexts, bson.D{{Key: "_id", Value: id}}, &c)
	if errors.Is(err, mongo.ErrNoDocuments) {
		return nil, fmt.Errorf("%w: %s", ErrNotFound, id)
	}
	return &c, err
}

// Set updates fields of a context header.
func (s *Store) Set(ctx context.Context, id string, fields bson.D) error {
	fields = append(fields, bson.E{Key: "updated", Value: time.Now().UTC()})
	return s.exclusive(ctx, s.contexts, id, func(ctx context.Context) error {
		_, err := s.contexts.UpdateOne(ctx, bson.D{{Key: "_id", Value: id}}, bson.D{{Key: "$set", Value: fields}})
		return err
	})
}

// SetArtifact records where one app's artifact stands; a stored one's digest joins the
// context's Blobs, what it keeps from garbage collection.
func (s *Store) SetArtifact(ctx context.Context, id string, st artifact.Status) error {
	st.Updated = time.Now().UTC()
	update := bson.D{{Key: "$set", Value: bson.D{{Key: "artifacts." + st.App, Value: st}, {Key: "updated", Value: st.Updated}}}}
	if st.Blob != "" {
		update = append(update, bson.E{Key: "$addToSet", Value: bson.D{{Key: "blobs", Value: st.Blob}}})
	}
	return s.exclusive(ctx, s.contexts, id, func(ctx context.Context) error {
		_, err := s.contexts.UpdateOne(ctx, bson.D{{Key: "_id", Value: id}}, update)
		return err
	})
}

// RefersTo reports whether a context keeps the artifact stored under digest.
func (s *Store) RefersTo(ctx context.Context, digest string) (bool, error) {
	err := store.FindOne(ctx, s.contexts, bson.D{{Key: "blobs", Value: digest}}, new(bson.Raw), options.Find().SetProjection(bson.D{{Key: "_id", Value: 1}}))
	if errors.Is(err, mongo.ErrNoDocuments) {
		return false, nil
	}
	return err == nil, err
}

// SetStatus sets the context status (and its error message, cleared when empty).
func (s *Store) SetStatus(ctx context.Context, id, status, errMsg string) error {
	return s.Set(ctx, id, bson.D{{Key: "status", Value: status}, {Key: "error", Value: errMsg}})
}

// SetHooks records the workflows the context's operation ran for its controllers.
func (s *Store) SetHooks(ctx context.Context, id string, hooks []lifecycle.HookRun) error {
	return s.Set(ctx, id, bson.D{{Key: "hooks", Value: hooks}})
}

// DIGOf returns the store id of the DIG whose context id is, or whose instance began
// with it (the emco/deployment-id label of every object names the instance's first
// context, which an update's later ones keep).
func (s *Store) DIGOf(ctx context.Context, id string) (string, error) {
	var c struct {
		DIG string `bson:"dig"`
	}
	proj := options.Find().SetProjection(bson.D{{Key: "dig", Value: 1}})
	err := store.FindOne(ctx, s.contexts, bson.D{{Key: "_id", Value: id}}, &c, proj)
	if errors.Is(err, mongo.ErrNoDocuments) { // the instance's first context was pruned: rare, so unindexed
		err = store.FindOne(ctx, s.contexts, bson.D{{Key: "instance", Value: id}}, &c, proj)
	}
	if errors.Is(err, mongo.ErrNoDocuments) {
		return "", fmt.Errorf("%w: %s", ErrNotFound, id)
	}
	return c.DIG, err
}

// Outcome is how far a context's operation got: its status and, when it failed, why.
type Outcome struct {
	Status string `bson:"status"`
	Error  string `bson:"error,omitempty"`
}

// Outcomes reads the outcome of each of the contexts ids in one query (for lists of many
// DIGs); a context that does not exist is left out.
func (s *Store) Outcomes(ctx context.Context, ids []string) (map[string]Outcome, error) {
	out := make(map[string]Outcome, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	cur, err := s.contexts.Find(ctx, bson.D{{Key: "_id", Value: bson.D{{Key: "$in", Value: ids}}}},
		options.Find().SetProjection(bson.D{{Key: "status", Value: 1}, {Key: "error", Value: 1}}))
	if err != nil {
		return nil, fmt.Errorf("read the outcomes of %d contexts: %w", len(ids), err)
	}
	var docs []struct {
		ID      string `bson:"_id"`
		Outcome `bson:",inline"`
	}
	if err := cur.All(ctx, &docs); err != nil {
		return nil, fmt.Errorf("read the outcomes of %d contexts: %w", len(ids), err)
	}
	for _, d := range docs {
		out[d.ID] = d.Outcome
	}
	return out, nil
}
