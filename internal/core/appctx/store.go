// The Store: its collections, bulk writes of a context's documents, and deleting a context.

// Package appctx stores AppContexts in MongoDB: one context per DIG instance revision,
// holding the rendered manifests of each app, the placement (which app goes to which
// cluster, in which batch) and the per-resource status on each cluster. Workflows pass
// only context ids; activities read and write here.
package appctx

import (
	"context"
	"fmt"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/temco/temco/internal/core/seal"
	"github.com/temco/temco/internal/core/store"
)

// Store is the AppContext repository.
type Store struct {
	contexts, apps, clusters, batches *mongo.Collection
	placed                            *mongo.Collection // groups of cluster documents (groups.go)
	groupBytes                        int               // largest group placement writes (0: maxGroupBytes; <0: none, tests' layout of before groups)
	layouts                           layouts
	flights                           store.Flights // reads of groups and layouts
	writer                            groupWriter
	edits, groups                     *mongo.Collection // controllers' layers, placement before controllers
	drift                             *mongo.Collection // drift checks: per cluster, and each check's summary
	claims                            *store.Claims
	summaries                         summaryCache  // settled contexts' status counts (summarycache.go)
	keys                              *seal.Keyring // seals Secrets (sealed.go); nil: stored in clear
	// afterAppsStep, set by tests, runs after each step of a replacement of a context's
	// apps (PutApps): an error stops it there, as a worker killed at that point would.
	afterAppsStep func(step string) error
}

// New prepares the collections of db.
func New(ctx context.Context, db *mongo.Database, opts ...Option) (*Store, error) {
	s := &Store{contexts: db.Collection("contexts"), apps: db.Collection("ctxapps"),
		clusters: db.Collection("ctxclusters"), batches: db.Collection("ctxbatches"), placed: db.Collection("ctxplaced"),
		edits: db.Collection("ctxedits"), groups: db.Collection("ctxgroups"), drift: db.Collection("ctxdrift")}
	for _, o := range opts {
		o(s)
	}
	var err error
	if s.claims, err = store.NewClaims(ctx, db); err != nil {
		return nil, err
	}
	// What garbage collection of artifacts asks: does a context keep this digest?
	if err := store.EnsureIndexes(ctx, s.contexts, []store.Index{store.Index(bson.D{{Key: "blobs", Value: 1}})}); err != nil {
		return nil, err
	}
	for _, c := range []*mongo.Collection{s.apps, s.clusters, s.placed, s.batches, s.edits, s.groups, s.drift} {
		if err := store.EnsureIndexes(ctx, c, []store.Index{store.Index(bson.D{{Key: "ctx", Value: 1}})}); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// exclusive runs write holding the claim on document id of c. A document several writers
// may update at once (a cluster's, a header, an edit layer) is updated only so: FerretDB
// runs an update as a read and a write, so of two at once one silently undoes the other,
// conditional or not (BENCHMARKS.md). MongoDB would not need it.
func (s *Store) exclusive(ctx context.Context, c *mongo.Collection, id string, write func(ctx context.Context) error) error {
	return s.claims.Exclusive(ctx, c.Name()+":"+id, write)
}

// exclusiveAs is exclusive for an attempt of a cluster activity (none: by.Activity ""): a
// later attempt takes over the claim an earlier one left within seconds, not a lease.
func (s *Store) exclusiveAs(ctx context.Context, c *mongo.Collection, id string, by Attempt, write func(ctx context.Context) error) error {
	if by.Activity == "" {
		return s.exclusive(ctx, c, id, write)
	}
	return s.claims.ExclusiveAs(ctx, c.Name()+":"+id, store.Holder{Name: by.Activity, Attempt: by.Number}, write)
}

// ReleaseClaims removes the claims attempt by left on the context's documents. Only for an
// attempt known to be dead (its worker's successor took it over): a live one would be
// cut off mid-write.
func (s *Store) ReleaseClaims(ctx context.Context, by Attempt) error {
	return s.claims.Release(ctx, store.Holder{Name: by.Activity, Attempt: by.Number})
}

func clusterID(ctxID, cluster string) string { return ctxID + "/" + cluster }

func batchID(ctxID string, batch int) string { return fmt.Sprintf("%s/batch/%d", ctxID, batch) }

// replaceAll inserts the documents of a context into c. Only when an earlier attempt
// left some behind (a duplicate key) does it pay for deleting the context's documents
// first: a filter on anything but _id may scan the whole collection.
func (s *Store) replaceAll(ctx context.Context, c *mongo.Collection, ctxID string, docs []any) error {
	err := insertChunks(ctx, c, docs)
	if !mongo.IsDuplicateKeyError(err) {
		return err
	}
	if _, err := c.DeleteMany(ctx, bson.D{{Key: "ctx", Value: ctxID}}); err != nil {
		return err
	}
	return insertChunks(ctx, c, docs)
}

func insertChunks(ctx context.Context, c *mongo.Collection, docs []any) error {
	const chunk = 500 // documents per round trip
	for i := 0; i < len(docs); i += chunk {
		if _, err := c.InsertMany(ctx, docs[i:min(i+chunk, len(docs))], options.InsertMany().SetOrdered(false)); err != nil {
			return err
		}
	}
	return nil
}

// DeleteContext removes a context and everything in it.
func (s *Store) DeleteContext(ctx context.Context, ctxID string) error {
	s.layouts.put(ctxID, nil)
	for _, c := range []*mongo.Collection{s.clusters, s.placed, s.batches, s.apps, s.edits, s.groups, s.drift} {
		if _, err := c.DeleteMany(ctx, bson.D{{Key: "ctx", Value: ctxID}}); err != nil {
			return err
		}
	}
	_, err := s.contexts.DeleteOne(ctx, bson.D{{Key: "_id", Value: ctxID}})
	return err
}
