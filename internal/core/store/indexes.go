package store

import (
	"context"
	"fmt"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// Index is an index of a collection, named as MongoDB names it by default.
type Index bson.D

func (ix Index) name() string {
	parts := make([]string, 0, 2*len(ix))
	for _, k := range ix {
		parts = append(parts, k.Key, fmt.Sprint(k.Value))
	}
	return strings.Join(parts, "_")
}

// EnsureIndexes creates the indexes of coll that do not exist yet. Asking for existing
// ones again is skipped on purpose: FerretDB 1.24 crashes the connection on it.
func EnsureIndexes(ctx context.Context, coll *mongo.Collection, want []Index) error {
	specs := make([]indexSpec, 0, len(want))
	for _, ix := range want {
		specs = append(specs, indexSpec{keys: bson.D(ix), name: ix.name()})
	}
	return ensureIndexSpecs(ctx, coll, specs)
}

// indexSpec is an index to create.
type indexSpec struct {
	keys   bson.D
	name   string
	unique bool
}

// ensureIndexSpecs creates the indexes of specs that coll does not have yet.
func ensureIndexSpecs(ctx context.Context, coll *mongo.Collection, specs []indexSpec) error {
	cur, err := coll.Indexes().List(ctx)
	if err != nil {
		return fmt.Errorf("list indexes of %s: %w", coll.Name(), err)
	}
	var have []struct {
		Name string `bson:"name"`
	}
	if err := cur.All(ctx, &have); err != nil {
		return fmt.Errorf("list indexes of %s: %w", coll.Name(), err)
	}
	exists := map[string]bool{}
	for _, h := range have {
		exists[h.Name] = true
	}
	var missing []mongo.IndexModel
	for _, ix := range specs {
		if !exists[ix.name] {
			missing = append(missing, mongo.IndexModel{Keys: ix.keys, Options: options.Index().SetName(ix.name).SetUnique(ix.unique)})
		}
	}
	if len(missing) == 0 {
		return nil
	}
	if _, err := coll.Indexes().CreateMany(ctx, missing); err != nil {
		return fmt.Errorf("create indexes of %s: %w", coll.Name(), err)
	}
	return nil
}
