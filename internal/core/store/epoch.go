package store

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// Epochs let a process keep documents it reads once per operation and cluster (a
// cluster's registration: its kubeconfig) across operations without reading each again:
// every write that creates or changes a document of an epochKind gives its parent a new
// epoch, after the write, so a copy read under an epoch that is still the parent's is
// current. One read of the epoch then stands for every such child of the parent.
//
// epochKinds maps each such kind to the document whose epoch its documents are kept
// under: a cluster's and a cluster reference's parent (provider, logical cloud), a
// cluster label's provider (its scope: placement by label reads a provider's labels).
var epochKinds = map[string]func(*Doc) string{
	"cluster":          func(d *Doc) string { return d.Parent },
	"clusterReference": func(d *Doc) string { return d.Parent },
	"clusterLabel":     func(d *Doc) string { return d.Scope },
}

// epochDoc is the epoch of one parent, in the epochs collection.
type epochDoc struct {
	ID    string `bson:"_id"` // the parent's _id
	Epoch string `bson:"epoch"`
}

// Epoch returns the epoch of parent: "" until a child of an epochKind was first written.
func (s *Store) Epoch(ctx context.Context, parent string) (string, error) {
	var e epochDoc
	err := FindOne(ctx, s.epochs, bson.D{{Key: "_id", Value: parent}}, &e)
	if errors.Is(err, mongo.ErrNoDocuments) {
		return "", nil
	}
	return e.Epoch, err
}

// renewEpochs gives each parent of docs of an epochKind a new epoch. A renewal that fails
// fails the write that needed it: the caller retries, and the written document stays as
// it is (its copies elsewhere are then stale until the next renewal).
func (s *Store) renewEpochs(ctx context.Context, docs ...*Doc) error {
	done := map[string]bool{}
	for _, d := range docs {
		holderOf := epochKinds[d.Kind]
		if holderOf == nil || done[holderOf(d)] {
			continue
		}
		holder := holderOf(d)
		done[holder] = true
		_, err := s.epochs.UpdateOne(ctx, bson.D{{Key: "_id", Value: holder}},
			bson.D{{Key: "$set", Value: bson.D{{Key: "epoch", Value: rand.Text()}}}}, options.UpdateOne().SetUpsert(true))
		s.current.flights.Invalidate(holder)
		if err != nil {
			return fmt.Errorf("renew the epoch of %s: %w", holder, err)
		}
	}
	return nil
}
