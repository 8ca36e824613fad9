package diagnostics

import (
	"context"
	"fmt"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// Store keeps the hub's declarations in the collection "declarations" of the resource
// store's database, one document per object. They are reports, not resources: no
// lifecycle, no owner, no referential integrity.
type Store struct{ coll *mongo.Collection }

// Open returns the declarations kept in db (it reads nothing).
func Open(db *mongo.Database) *Store { return &Store{coll: db.Collection("declarations")} }

// Put stores d in place of the object's last report.
func (s *Store) Put(ctx context.Context, d Declaration) error {
	filter := bson.D{{Key: "_id", Value: d.Object}}
	_, err := s.coll.ReplaceOne(ctx, filter, d, options.Replace().SetUpsert(true))
	if mongo.IsDuplicateKeyError(err) { // a first report of the object raced another: it exists now
		_, err = s.coll.ReplaceOne(ctx, filter, d)
	}
	if err != nil {
		return fmt.Errorf("store the declaration of %s: %w", d.Object, err)
	}
	return nil
}

// Delete removes the object's report; none is no error.
func (s *Store) Delete(ctx context.Context, object string) error {
	if _, err := s.coll.DeleteOne(ctx, bson.D{{Key: "_id", Value: object}}); err != nil {
		return fmt.Errorf("delete the declaration of %s: %w", object, err)
	}
	return nil
}

// List returns the reports of projects (nil: all of them; empty: none), by object.
func (s *Store) List(ctx context.Context, projects []string) ([]Declaration, error) {
	filter := bson.D{}
	if projects != nil {
		filter = bson.D{{Key: "project", Value: bson.D{{Key: "$in", Value: projects}}}}
	}
	cur, err := s.coll.Find(ctx, filter, options.Find().SetSort(bson.D{{Key: "_id", Value: 1}}))
	if err != nil {
		return nil, fmt.Errorf("list declarations: %w", err)
	}
	out := []Declaration{}
	if err := cur.All(ctx, &out); err != nil {
		return nil, fmt.Errorf("list declarations: %w", err)
	}
	return out, nil
}
