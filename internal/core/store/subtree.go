package store

import (
	"context"
	"fmt"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// Subtree returns every committed document below the path prefix (its descendants, of
// any kind, when prefix is a resource's _id), sorted by _id, blobs and secrets included.
// The _ids below prefix are those between prefix+"/" and prefix+"0" ('0' follows '/'):
// a range of the _id index, where the server has one.
func (s *Store) Subtree(ctx context.Context, prefix string) ([]*Doc, error) {
	filter := bson.D{{Key: "_id", Value: bson.D{{Key: "$gt", Value: prefix + "/"}, {Key: "$lt", Value: prefix + "0"}}}, visible}
	cur, err := s.coll.Find(ctx, filter, options.Find().SetSort(bson.D{{Key: "_id", Value: 1}}))
	if err != nil {
		return nil, fmt.Errorf("list below %s: %w", prefix, err)
	}
	docs := []*Doc{}
	if err := cur.All(ctx, &docs); err != nil {
		return nil, fmt.Errorf("list below %s: %w", prefix, err)
	}
	return docs, nil
}
