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
//
// Below a top-level resource ("/projects/p1/..."), the documents are found by their
// ancestors (Doc.Anc holds prefix): an equality every MongoDB-wire server evaluates
// itself. An _id range makes FerretDB 1.x read every document of the collection, and the
// top-level resource's scope every document of the project, the logical clouds' cluster
// references too (a DIG's snapshot read 1.6 MB at 1,000 clusters; BENCHMARKS.md).
// Documents written before ancestors are found by their scope, then by prefix; they get
// their ancestors at their next write (Update), under its claim: a write without one
// could undo a concurrent update, as FerretDB 1.x writes back the whole document it read.
func (s *Store) Subtree(ctx context.Context, prefix string) ([]*Doc, error) {
	parts := strings.SplitN(prefix, "/", 4)
	if len(parts) < 3 || parts[0] != "" {
		// The _ids below prefix are those between prefix+"/" and prefix+"0" ('0' follows '/').
		return s.find(ctx, prefix, bson.D{{Key: "_id", Value: bson.D{{Key: "$gt", Value: prefix + "/"}, {Key: "$lt", Value: prefix + "0"}}}, visible})
	}
	// Those without ancestors first: one given its ancestors meanwhile is then found by
	// them (the second read), never missed by both.
	scope := "/" + parts[1] + "/" + parts[2]
	legacy, err := s.find(ctx, prefix, bson.D{{Key: "scope", Value: scope}, {Key: "ancv", Value: bson.D{{Key: "$ne", Value: int32(1)}}}, visible})
	if err != nil {
		return nil, err
	}
	docs, err := s.find(ctx, prefix, bson.D{{Key: "anc", Value: prefix}, visible})
	if err != nil {
		return nil, err
	}
	for _, d := range legacy {
		if _, found := slices.BinarySearchFunc(docs, d.ID, func(x *Doc, id string) int { return strings.Compare(x.ID, id) }); !found {
			docs = append(docs, d)
		}
	}
	slices.SortFunc(docs, func(a, b *Doc) int { return strings.Compare(a.ID, b.ID) })
	return docs, nil
}

// find reads the documents filter selects, keeping those below prefix, sorted by _id.
func (s *Store) find(ctx context.Context, prefix string, filter bson.D) ([]*Doc, error) {
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

// ancestorsOf lists the paths above id from its scope down: for
// "/projects/p/composite-apps/ca/v1", "/projects/p", "/projects/p/composite-apps",
// "/projects/p/composite-apps/ca".
func ancestorsOf(id string) []string {
	var out []string
	slashes := 0
	for i := 1; i < len(id); i++ {
		if id[i] != '/' {
			continue
		}
		if slashes++; slashes >= 2 {
			out = append(out, id[:i])
		}
	}
	return out
}
