// Package store keeps temco's resources in MongoDB (or a MongoDB-wire server such as
// FerretDB, which has no multi-document transactions).
//
// Every resource is one document whose _id is its REST path, e.g.
// "/projects/p1/composite-apps/ca/v1", so names are unique per parent by construction.
// Every write of an existing document is made by the holder of its claim (claim.go), so
// a conditional write has exactly one winner even where the server runs an update as a
// read and a write. Referential integrity without transactions uses two protocols:
//
//   - create: insert the child as pending, then check the parent and every referenced
//     resource exist and are not being deleted, then commit (clear pending); otherwise
//     remove the child. Readers never see pending documents.
//   - delete, holding the claim: mark the document as deleting, then look for children
//     and referrers (pending ones included); if there are none, remove it, else clear
//     the mark.
//
// Whatever the interleaving, a committed child always has its parent. And the answers
// fit a serial order: a create or update that finds what it needs being deleted waits
// until that delete ends (a create first withdraws its pending document), and a delete
// that finds a pending user waits until it is committed or withdrawn, so neither refuses
// because of the other. A process that dies mid-protocol leaves a stale pending child
// (invisible, replaced or swept later), a stale deleting mark (ignored once older than
// the lease) or a stale claim (taken over once older than the lease).
package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/event"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// lease bounds how long a pending create, a deleting mark or a claim is honoured; the
// protocol steps take milliseconds, so anything older belongs to a process that died.
// Their owners write only while they are younger than lease/2.
const lease = 30 * time.Second

// Doc is one stored resource.
type Doc struct {
	ID     string            `bson:"_id"`
	Parent string            `bson:"parent"`           // _id of the parent resource; "" at the top
	Scope  string            `bson:"scope"`            // top-level ancestor, e.g. "/projects/p1"
	Kind   string            `bson:"kind"`             // resource kind, e.g. "app"
	Name   string            `bson:"name"`             // last name in the path
	Rev    int64             `bson:"rev"`              // bumped on every write: optimistic concurrency
	Refs   []string          `bson:"refs,omitempty"`   // _ids this resource depends on (not its parent): they cannot be deleted while it exists
	Fields map[string]string `bson:"fields,omitempty"` // queryable attributes (e.g. app)
	Body   string            `bson:"body"`             // the resource as JSON ({metadata, spec})
	Blob   []byte            `bson:"blob,omitempty"`   // attached archive (Helm chart, profile)
	Secret []byte            `bson:"secret,omitempty"` // sealed secret (kubeconfig)
	State  string            `bson:"state,omitempty"`  // lifecycle state history as JSON
	// Owner is who alone may write the resource: "" for REST, else the name a declarative
	// front door (temco hub) sent when it created it. Set by Create, never changed by Update.
	Owner string `bson:"owner,omitempty"`
	// Above is the nearest owned resource above this one ("": none), known where AboveV is
	// 1: set by the api when it creates the resource; documents written otherwise, or
	// before 2026-12-07, have neither, and a write to them walks up as before. Owners never
	// change and a resource with children is never deleted, so it holds for the document's
	// life, and a REST write to it need not read what is above it.
	Above  string `bson:"above,omitempty"`
	AboveV int32  `bson:"abovev,omitempty"`

	Created       time.Time  `bson:"created"`
	Updated       time.Time  `bson:"updated"`
	PendingSince  *time.Time `bson:"pendingSince,omitempty"`
	DeletingSince *time.Time `bson:"deletingSince,omitempty"`

	// Anc lists the paths above the document from its scope down ("/projects/p",
	// "/projects/p/composite-apps", ...; ancestorsOf), for Subtree; AncV is 1 where Anc is
	// set: documents written before 2026-12-06 have neither until their next write or the
	// first Subtree that finds them.
	Anc  []string `bson:"anc,omitempty"`
	AncV int32    `bson:"ancv,omitempty"`

	// LooseRefs lets Create and Update store Refs that do not exist (yet): EMCO lets a DIG
	// name its logical cloud before the cloud is created, and the operation that uses them
	// checks them. Not stored.
	LooseRefs bool `bson:"-"`
}

// Store is the resource repository.
type Store struct {
	coll      *mongo.Collection
	claims    *mongo.Collection
	epochs    *mongo.Collection // see epoch.go
	current   current           // see current.go
	now       func() time.Time
	claimWait time.Duration
}

// Open connects to uri and prepares the resources collection of database db; monitor
// (optional) sees every command (the store's metrics).
func Open(ctx context.Context, uri, db string, monitor ...*event.CommandMonitor) (*Store, *mongo.Client, error) {
	opts := options.Client().ApplyURI(uri).SetTimeout(30 * time.Second)
	if len(monitor) > 0 && monitor[0] != nil {
		opts.SetMonitor(monitor[0])
	}
	client, err := mongo.Connect(opts)
	if err != nil {
		return nil, nil, fmt.Errorf("connect to %s: %w", redactURI(uri), err)
	}
	if err := client.Ping(ctx, nil); err != nil {
		_ = client.Disconnect(context.Background())
		return nil, nil, fmt.Errorf("ping %s: %w", redactURI(uri), err)
	}
	s, err := New(ctx, client.Database(db))
	if err != nil {
		_ = client.Disconnect(context.Background())
		return nil, nil, err
	}
	return s, client, nil
}

// Ping checks that the database answers.
func (s *Store) Ping(ctx context.Context) error {
	return s.coll.Database().Client().Ping(ctx, nil)
}

// Database is the database the store lives in (other repositories share it).
func (s *Store) Database() *mongo.Database { return s.coll.Database() }

// New keeps the store in db, creating the indexes it needs (the claims' unique index
// among them: without it writes are not exclusive).
func New(ctx context.Context, db *mongo.Database) (*Store, error) {
	s := &Store{coll: db.Collection("resources"), claims: db.Collection("claims"), epochs: db.Collection("epochs"),
		now: func() time.Time { return time.Now().UTC() }, claimWait: claimWait}
	if err := EnsureIndexes(ctx, s.coll, []Index{
		Index(bson.D{{Key: "parent", Value: 1}, {Key: "kind", Value: 1}, {Key: "name", Value: 1}}),
		Index(bson.D{{Key: "refs", Value: 1}}),
		Index(bson.D{{Key: "scope", Value: 1}, {Key: "kind", Value: 1}, {Key: "name", Value: 1}}),
	}); err != nil {
		return nil, err
	}
	if err := ensureClaimIndex(ctx, s.claims); err != nil {
		return nil, err
	}
	return s, nil
}

// visible selects committed documents.
var visible = bson.E{Key: "pendingSince", Value: bson.D{{Key: "$exists", Value: false}}}

// Get returns the committed document id. Error: ErrNotFound.
func (s *Store) Get(ctx context.Context, id string) (*Doc, error) {
	return s.byID(ctx, id, nil)
}

// Exists reports whether the committed document id exists.
func (s *Store) Exists(ctx context.Context, id string) (bool, error) {
	_, err := s.byID(ctx, id, bson.D{{Key: "_id", Value: 1}})
	if CodeOf(err) == ErrNotFound {
		return false, nil
	}
	return err == nil, err
}

// byID reads the committed document id, only the fields of projection if not nil.
// Error: ErrNotFound, saying whether the document is absent or pending (PendingSince).
// The filter is _id alone, as FerretDB 1.x on SQLite looks up no other filter by index
// (it scans the collection); pending documents are skipped here. A find, not
// CountDocuments: a count is an aggregation, which FerretDB 1.x runs over the whole
// collection.
func (s *Store) byID(ctx context.Context, id string, projection bson.D) (*Doc, error) {
	opts := options.Find()
	if projection != nil {
		opts.SetProjection(append(projection, bson.E{Key: "pendingSince", Value: 1}))
	}
	var d Doc
	err := FindOne(ctx, s.coll, bson.D{{Key: "_id", Value: id}}, &d, opts)
	switch {
	case errors.Is(err, mongo.ErrNoDocuments):
		return nil, &Error{Code: ErrNotFound, ID: id}
	case err != nil:
		return nil, fmt.Errorf("get %s: %w", id, err)
	case d.PendingSince != nil:
		return nil, &Error{Code: ErrNotFound, ID: id, pendingSince: *d.PendingSince}
	}
	return &d, nil
}

// Ownership returns the committed document id with its owner, parent and Above alone
// (an app's chart may be megabytes). Error: ErrNotFound.
func (s *Store) Ownership(ctx context.Context, id string) (*Doc, error) {
	return s.byID(ctx, id, bson.D{{Key: "owner", Value: 1}, {Key: "parent", Value: 1}, {Key: "above", Value: 1}, {Key: "abovev", Value: 1}})
}

// Query selects documents for List.
type Query struct {
	Parent string            // direct children of this _id ...
	Scope  string            // ... or everything under this top-level ancestor
	Kind   string            // required
	Name   string            // optional exact name
	Fields map[string]string // optional exact field values
	IDs    []string          // optional: only these _ids
	Full   bool              // include Blob and Secret (omitted by default)
	After  string            // optional: only _ids after this one (keyset paging)
	Limit  int               // optional: at most this many (0: all)
}

// List returns matching committed documents sorted by _id.
func (s *Store) List(ctx context.Context, q Query) ([]*Doc, error) {
	filter, opts := q.find()
	if !q.Full {
		opts.SetProjection(bson.D{{Key: "blob", Value: 0}, {Key: "secret", Value: 0}})
	}
	cur, err := s.coll.Find(ctx, filter, opts)
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", q.Kind, err)
	}
	docs := []*Doc{}
	if err := cur.All(ctx, &docs); err != nil {
		return nil, fmt.Errorf("list %s: %w", q.Kind, err)
	}
	return docs, nil
}

// Names returns the names of the documents List(q) returns, in its order (by _id),
// reading nothing else of them: a listing of 10,000 clusters without their bodies
// (q.Full is ignored).
func (s *Store) Names(ctx context.Context, q Query) ([]string, error) {
	filter, opts := q.find()
	opts.SetProjection(bson.D{{Key: "_id", Value: 0}, {Key: "name", Value: 1}})
	cur, err := s.coll.Find(ctx, filter, opts)
	if err != nil {
		return nil, fmt.Errorf("list the names of %s: %w", q.Kind, err)
	}
	var docs []struct {
		Name string `bson:"name"`
	}
	if err := cur.All(ctx, &docs); err != nil {
		return nil, fmt.Errorf("list the names of %s: %w", q.Kind, err)
	}
	names := make([]string, len(docs))
	for i, d := range docs {
		names[i] = d.Name
	}
	return names, nil
}

// find is q's filter and options, sorted by _id, without a projection.
func (q Query) find() (bson.D, *options.FindOptionsBuilder) {
	filter := bson.D{{Key: "kind", Value: q.Kind}, visible}
	if q.Parent != "" || q.Scope == "" {
		filter = append(filter, bson.E{Key: "parent", Value: q.Parent})
	}
	if q.Scope != "" {
		filter = append(filter, bson.E{Key: "scope", Value: q.Scope})
	}
	if q.Name != "" {
		filter = append(filter, bson.E{Key: "name", Value: q.Name})
	}
	for k, v := range q.Fields {
		filter = append(filter, bson.E{Key: "fields." + k, Value: v})
	}
	var id bson.D
	if q.IDs != nil {
		id = append(id, bson.E{Key: "$in", Value: q.IDs})
	}
	if q.After != "" {
		id = append(id, bson.E{Key: "$gt", Value: q.After})
	}
	if id != nil {
		filter = append(filter, bson.E{Key: "_id", Value: id})
	}
	opts := options.Find().SetSort(bson.D{{Key: "_id", Value: 1}})
	if q.Limit > 0 {
		opts.SetLimit(int64(q.Limit))
	}
	return filter, opts
}

// Referrers lists the committed documents of kind that reference id.
func (s *Store) Referrers(ctx context.Context, id, kind string) ([]*Doc, error) {
	cur, err := s.coll.Find(ctx, bson.D{{Key: "refs", Value: id}, {Key: "kind", Value: kind}, visible},
		options.Find().SetProjection(bson.D{{Key: "blob", Value: 0}, {Key: "secret", Value: 0}}))
	if err != nil {
		return nil, fmt.Errorf("referrers of %s: %w", id, err)
	}
	docs := []*Doc{}
	return docs, cur.All(ctx, &docs)
}
