// Package credentials keeps the kubeconfigs temco generates for logical clouds — one per
// cloud and cluster — sealed, in their own collection: never in a resource body, a
// list answer or a workflow payload.
package credentials

import (
	"context"
	"errors"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/temco/temco/internal/core/seal"
	"github.com/temco/temco/internal/core/store"
)

// Store holds sealed credentials.
type Store struct {
	coll *mongo.Collection
	keys *seal.Keyring
}

type doc struct {
	ID      string    `bson:"_id"` // <logical cloud id>/<provider+cluster>
	Cloud   string    `bson:"cloud"`
	Cluster string    `bson:"cluster"`
	Secret  []byte    `bson:"secret"`
	Created time.Time `bson:"created"`
}

// New prepares the collection.
func New(ctx context.Context, db *mongo.Database, keys *seal.Keyring) (*Store, error) {
	s := &Store{coll: db.Collection("credentials"), keys: keys}
	return s, store.EnsureIndexes(ctx, s.coll, []store.Index{store.Index(bson.D{{Key: "cloud", Value: 1}})})
}

func id(cloud, cluster string) string { return cloud + "/" + cluster }

// Put stores (or replaces) the kubeconfig of a cloud on a cluster.
func (s *Store) Put(ctx context.Context, cloud, cluster string, kubeconfig []byte) error {
	sealed, err := s.keys.Seal(kubeconfig, []byte(id(cloud, cluster)))
	if err != nil {
		return err
	}
	_, err = s.coll.ReplaceOne(ctx, bson.D{{Key: "_id", Value: id(cloud, cluster)}},
		doc{ID: id(cloud, cluster), Cloud: cloud, Cluster: cluster, Secret: sealed, Created: time.Now().UTC()},
		options.Replace().SetUpsert(true))
	return err
}

// ErrNotFound means no credential was issued for that cloud and cluster.
var ErrNotFound = errors.New("no credential")

// Get returns the kubeconfig of a cloud on a cluster and a version that changes when it does.
func (s *Store) Get(ctx context.Context, cloud, cluster string) ([]byte, []byte, error) {
	var d doc
	err := store.FindOne(ctx, s.coll, bson.D{{Key: "_id", Value: id(cloud, cluster)}}, &d)
	if errors.Is(err, mongo.ErrNoDocuments) {
		return nil, nil, ErrNotFound
	}
	if err != nil {
		return nil, nil, err
	}
	plain, err := s.keys.Open(d.Secret, []byte(d.ID))
	return plain, d.Secret, err
}

// Delete forgets the credential of a cloud on a cluster.
func (s *Store) Delete(ctx context.Context, cloud, cluster string) error {
	_, err := s.coll.DeleteOne(ctx, bson.D{{Key: "_id", Value: id(cloud, cluster)}})
	return err
}
