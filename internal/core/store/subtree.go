package store

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// Subtree returns every committed document below the path prefix (its descendants, of
// any kind, when prefix is a resource's _id), sorted by _id, blobs and secrets included.
// The _ids below prefix are those between prefix+"/" and prefix+"0" ('0' follows '/'):
// a range of the _id index, where the server has one.
//
// Below a top-level resource ("/projects/p1/..."), the documents are found by their scope
// and then by prefix: an equality every MongoDB-wire server evaluates itself, where
// FerretDB 1.x reads every document of the collection to compare an _id range (the
// clusters' registrations too: seconds at 10,000 clusters).
func (s *Store) Subtree(ctx context.Context, prefix string) ([]*Doc, error) {
	filter := bson.D{{Key: "_id", Value: bson.D{{Key: "$gt", Value: prefix + "/"}, {Key: "$lt", Value: prefix + "0"}}}, visible}
	if parts := strings.SplitN(prefix, "/", 4); len(parts) >= 3 && parts[0] == "" {
		filter = bson.D{{Key: "scope", Value: "/" + parts[1] + "/" + parts[2]}, visible}
	}
	cur, err := s.coll.Find(ctx, filter, options.Find().SetSort(bson.D{{Key: "_id", Value: 1}}))
	if err != nil {
		return nil, fmt.Errorf("list below %s: %w", prefix, err)
	}
	docs := []*Doc{}
	if err := cur.All(ctx, &docs); err != nil {
		return nil, fmt.Errorf("list below %s: %w", prefix, err)
	}
	return slices.DeleteFunc(docs, func(d *Doc) bool { return !strings.HasPrefix(d.ID, prefix+"/") }), nil
}
