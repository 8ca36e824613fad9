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
// Whatever the interleaving, a committed child always has its parent. A process that
// dies mid-protocol leaves a stale pending child (invisible, replaced or swept later),
// a stale deleting mark (ignored once older than the lease) or a stale claim (taken
// over once older than the lease).
package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
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
	Refs   []string          `bson:"refs,omitempty"`   // _ids this resource depends on (not its parent)
	Fields map[string]string `bson:"fields,omitempty"` // queryable attributes (e.g. app)
	Body   string            `bson:"body"`             // the resource as JSON ({metadata, spec})
	Blob   []byte            `bson:"blob,omitempty"`   // attached archive (Helm chart, profile)
	Secret []byte            `bson:"secret,omitempty"` // sealed secret (kubeconfig)
	State  string            `bson:"state,omitempty"`  // lifecycle state history as JSON

	Created       time.Time  `bson:"created"`
	Updated       time.Time  `bson:"updated"`
	PendingSince  *time.Time `bson:"pendingSince,omitempty"`
	DeletingSince *time.Time `bson:"deletingSince,omitempty"`
}

// Store is the resource repository.
type Store struct {
	coll      *mongo.Collection
	claims    *mongo.Collection
	now       func() time.Time
	claimWait time.Duration
}

// Open connects to uri and prepares the resources collection of database db.
func Open(ctx context.Context, uri, db string) (*Store, *mongo.Client, error) {
	client, err := mongo.Connect(options.Client().ApplyURI(uri).SetTimeout(30 * time.Second))
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
	s := &Store{coll: db.Collection("resources"), claims: db.Collection("claims"),
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

// Create stores d (Rev becomes 1). Errors: ErrExists, ErrParentMissing, ErrRefMissing, ErrBusy.
func (s *Store) Create(ctx context.Context, d *Doc) error {
	now := s.now()
	d.Rev, d.Created, d.Updated, d.PendingSince, d.DeletingSince = 1, now, now, &now, nil
	// Only its creator writes a pending document, without a claim, and only until it is
	// lease/2 old; others replace or sweep it, holding its claim, once it is a lease old.
	ctx, cancel := context.WithDeadline(ctx, now.Add(lease/2))
	defer cancel()
	tooLong := &Error{Code: ErrBusy, ID: d.ID, Msg: "creation took too long; retry"}
	if err := s.insertPending(ctx, d); err != nil {
		if ctx.Err() != nil {
			return tooLong
		}
		return err
	}
	mine := bson.D{{Key: "_id", Value: d.ID}, {Key: "pendingSince", Value: now}}
	// Withdrawing the pending document lets a retry create it at once instead of finding
	// it taken until the lease ends; once committed it no longer matches.
	withdraw := func() {
		wctx, cancel := context.WithDeadline(context.WithoutCancel(ctx), now.Add(lease/2))
		defer cancel()
		_, _ = s.coll.DeleteOne(wctx, mine)
	}
	if err := s.checkRefs(ctx, d.Parent, d.Refs); err != nil {
		withdraw()
		if ctx.Err() != nil {
			return tooLong
		}
		return err
	}
	res, err := s.coll.UpdateOne(ctx, mine, bson.D{{Key: "$unset", Value: bson.D{{Key: "pendingSince", Value: ""}}}})
	if err != nil {
		withdraw()
		if ctx.Err() != nil {
			return tooLong
		}
		return fmt.Errorf("commit %s: %w", d.ID, err)
	}
	if res.MatchedCount == 0 { // swept as stale: only possible after a pause longer than the lease
		return tooLong
	}
	d.PendingSince = nil
	return nil
}

// insertPending inserts d, replacing a stale pending document of the same _id.
func (s *Store) insertPending(ctx context.Context, d *Doc) error {
	_, err := s.coll.InsertOne(ctx, d)
	if !mongo.IsDuplicateKeyError(err) {
		if err != nil {
			return fmt.Errorf("insert %s: %w", d.ID, err)
		}
		return nil
	}
	// Only a stale pending document is replaced: anything else answers at once.
	var cur Doc
	err = s.coll.FindOne(ctx, bson.D{{Key: "_id", Value: d.ID}}, options.FindOne().SetProjection(bson.D{{Key: "pendingSince", Value: 1}})).Decode(&cur)
	if err == nil && (cur.PendingSince == nil || s.now().Sub(*cur.PendingSince) < lease) {
		return &Error{Code: ErrExists, ID: d.ID}
	}
	return s.exclusive(ctx, d.ID, func(ctx context.Context) error {
		res, err := s.coll.ReplaceOne(ctx, bson.D{{Key: "_id", Value: d.ID}, {Key: "pendingSince", Value: bson.D{{Key: "$lt", Value: s.now().Add(-lease)}}}}, d)
		if err != nil {
			return fmt.Errorf("insert %s: %w", d.ID, err)
		}
		if res.MatchedCount == 0 {
			return &Error{Code: ErrExists, ID: d.ID}
		}
		return nil
	})
}

// checkRefs verifies that the parent and every ref exist, are committed and not being deleted.
func (s *Store) checkRefs(ctx context.Context, parent string, refs []string) error {
	ids := refs
	if parent != "" {
		ids = append([]string{parent}, refs...)
	}
	if len(ids) == 0 {
		return nil
	}
	// One lookup by _id each (see byID): an $in would scan the whole collection on every
	// create.
	var found []Doc
	for _, id := range ids {
		f, err := s.byID(ctx, id, bson.D{{Key: "_id", Value: 1}, {Key: "deletingSince", Value: 1}})
		if CodeOf(err) == ErrNotFound {
			continue
		}
		if err != nil {
			return fmt.Errorf("check references: %w", err)
		}
		found = append(found, *f)
	}
	ok := map[string]bool{}
	for _, f := range found {
		if f.DeletingSince != nil && s.now().Sub(*f.DeletingSince) < lease {
			return &Error{Code: ErrBusy, ID: f.ID, Msg: "is being deleted"}
		}
		ok[f.ID] = true
	}
	for i, id := range ids {
		if !ok[id] {
			if i == 0 && parent != "" {
				return &Error{Code: ErrParentMissing, ID: id}
			}
			return &Error{Code: ErrRefMissing, ID: id}
		}
	}
	return nil
}

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
// Error: ErrNotFound. The filter is _id alone, as FerretDB 1.x on SQLite looks up no
// other filter by index (it scans the collection); pending documents are skipped here.
// FindOne, not CountDocuments: a count is an aggregation, which FerretDB 1.x runs over
// the whole collection.
func (s *Store) byID(ctx context.Context, id string, projection bson.D) (*Doc, error) {
	opts := options.FindOne()
	if projection != nil {
		opts.SetProjection(append(projection, bson.E{Key: "pendingSince", Value: 1}))
	}
	var d Doc
	err := s.coll.FindOne(ctx, bson.D{{Key: "_id", Value: id}}, opts).Decode(&d)
	if errors.Is(err, mongo.ErrNoDocuments) || err == nil && d.PendingSince != nil {
		return nil, &Error{Code: ErrNotFound, ID: id}
	}
	if err != nil {
		return nil, fmt.Errorf("get %s: %w", id, err)
	}
	return &d, nil
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
}

// List returns matching committed documents sorted by _id.
func (s *Store) List(ctx context.Context, q Query) ([]*Doc, error) {
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
	if q.IDs != nil {
		filter = append(filter, bson.E{Key: "_id", Value: bson.D{{Key: "$in", Value: q.IDs}}})
	}
	opts := options.Find().SetSort(bson.D{{Key: "_id", Value: 1}})
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

// Update writes d's Body, Refs, Fields, Blob, Secret and State if the stored revision
// is still d.Rev (optimistic concurrency); d.Rev is bumped. Errors: ErrNotFound,
// ErrConflict (someone else wrote first), ErrRefMissing.
//
// Added references are checked after the write and the write is undone if one vanished
// meanwhile: a concurrent delete of the referenced resource either sees this document
// as a referrer or has already marked itself deleting, which the re-check observes.
func (s *Store) Update(ctx context.Context, d *Doc) error {
	return s.exclusiveAt(ctx, d.ID, d.Rev, func(ctx context.Context) error {
		old, err := s.Get(ctx, d.ID)
		if err != nil {
			return err
		}
		if old.Rev != d.Rev {
			return &Error{Code: ErrConflict, ID: d.ID}
		}
		added := newRefs(old.Refs, d.Refs)
		if err := s.checkRefs(ctx, "", added); err != nil {
			return err
		}
		if err := s.swap(ctx, d, d.Rev); err != nil {
			return err
		}
		if err := s.checkRefs(ctx, "", added); err != nil {
			old.Rev = d.Rev
			if s.swap(ctx, old, old.Rev) == nil {
				d.Rev = old.Rev
			}
			return err
		}
		return nil
	})
}

// SetState replaces the state of d's document if it is still at revision d.Rev, bumping
// Rev (ErrConflict otherwise). Nothing else is written: a state change adds no reference,
// so unlike Update it needs no read first.
func (s *Store) SetState(ctx context.Context, d *Doc) error {
	err := s.exclusiveAt(ctx, d.ID, d.Rev, func(ctx context.Context) error {
		d.Updated = s.now()
		res, err := s.coll.UpdateOne(ctx, bson.D{{Key: "_id", Value: d.ID}, {Key: "rev", Value: d.Rev}, visible},
			bson.D{{Key: "$set", Value: bson.D{{Key: "rev", Value: d.Rev + 1}, {Key: "updated", Value: d.Updated}, {Key: "state", Value: d.State}}}})
		if err != nil {
			return fmt.Errorf("update %s: %w", d.ID, err)
		}
		if res.MatchedCount == 0 {
			return &Error{Code: ErrConflict, ID: d.ID}
		}
		d.Rev++
		return nil
	})
	if CodeOf(err) == ErrNotFound {
		return &Error{Code: ErrConflict, ID: d.ID}
	}
	return err
}

// swap replaces the mutable fields of the document at revision rev with d's, bumping Rev.
// The caller holds the claim; rev stays in the filter so that the write is also
// conditional where the server is atomic (MongoDB), e.g. beside older temco processes.
func (s *Store) swap(ctx context.Context, d *Doc, rev int64) error {
	d.Updated = s.now()
	set := bson.D{
		{Key: "rev", Value: rev + 1}, {Key: "updated", Value: d.Updated},
		{Key: "body", Value: d.Body}, {Key: "refs", Value: d.Refs}, {Key: "fields", Value: d.Fields},
		{Key: "blob", Value: d.Blob}, {Key: "secret", Value: d.Secret}, {Key: "state", Value: d.State},
	}
	res, err := s.coll.UpdateOne(ctx, bson.D{{Key: "_id", Value: d.ID}, {Key: "rev", Value: rev}, visible},
		bson.D{{Key: "$set", Value: set}})
	if err != nil {
		return fmt.Errorf("update %s: %w", d.ID, err)
	}
	if res.MatchedCount == 0 {
		return &Error{Code: ErrConflict, ID: d.ID}
	}
	d.Rev = rev + 1
	return nil
}

func newRefs(old, cur []string) []string {
	had := map[string]bool{}
	for _, r := range old {
		had[r] = true
	}
	var out []string
	for _, r := range cur {
		if !had[r] {
			out = append(out, r)
		}
	}
	return out
}

// Delete removes id unless it has children or referrers. Errors: ErrNotFound,
// ErrHasChildren, ErrReferenced, ErrBusy.
func (s *Store) Delete(ctx context.Context, id string) error {
	return s.exclusive(ctx, id, func(ctx context.Context) error {
		// Holding the claim, any mark already there is a dead deleter's: replace it.
		now := s.now()
		res, err := s.coll.UpdateOne(ctx, bson.D{{Key: "_id", Value: id}, visible},
			bson.D{{Key: "$set", Value: bson.D{{Key: "deletingSince", Value: now}}}})
		if err != nil {
			return fmt.Errorf("delete %s: %w", id, err)
		}
		if res.MatchedCount == 0 {
			return &Error{Code: ErrNotFound, ID: id}
		}
		marked := bson.D{{Key: "_id", Value: id}, {Key: "deletingSince", Value: now}}
		unmark := func() {
			_, _ = s.coll.UpdateOne(ctx, marked, bson.D{{Key: "$unset", Value: bson.D{{Key: "deletingSince", Value: ""}}}})
		}
		if err := s.refuseIfInUse(ctx, id); err != nil {
			unmark()
			return err
		}
		del, err := s.coll.DeleteOne(ctx, marked)
		if err != nil {
			unmark()
			return fmt.Errorf("delete %s: %w", id, err)
		}
		if del.DeletedCount == 0 { // only where a writer without the claim took the mark away
			return &Error{Code: ErrConflict, ID: id}
		}
		return nil
	})
}

// refuseIfInUse fails when id has a child or a referrer, committed or pending; stale
// pending ones, of processes that died creating them, are swept instead.
func (s *Store) refuseIfInUse(ctx context.Context, id string) error {
	for _, rel := range []struct {
		key  string
		code Code
	}{{"parent", ErrHasChildren}, {"refs", ErrReferenced}} {
		cur, err := s.coll.Find(ctx, bson.D{{Key: rel.key, Value: id}},
			options.Find().SetProjection(bson.D{{Key: "_id", Value: 1}, {Key: "pendingSince", Value: 1}}))
		if err != nil {
			return fmt.Errorf("delete %s: %w", id, err)
		}
		var stale []string
		for cur.Next(ctx) {
			var user Doc
			if err := cur.Decode(&user); err != nil {
				_ = cur.Close(ctx)
				return fmt.Errorf("delete %s: %w", id, err)
			}
			if user.PendingSince == nil || s.now().Sub(*user.PendingSince) < lease {
				_ = cur.Close(ctx)
				return &Error{Code: rel.code, ID: id, Other: user.ID}
			}
			stale = append(stale, user.ID)
		}
		if err := errors.Join(cur.Err(), cur.Close(ctx)); err != nil {
			return fmt.Errorf("delete %s: %w", id, err)
		}
		for _, dead := range stale {
			if err := s.sweep(ctx, dead); err != nil {
				return fmt.Errorf("delete %s: sweep %s: %w", id, dead, err)
			}
		}
	}
	return nil
}

// sweep removes id if it is a stale pending document, holding its claim.
func (s *Store) sweep(ctx context.Context, id string) error {
	return s.exclusive(ctx, id, func(ctx context.Context) error {
		_, err := s.coll.DeleteOne(ctx, bson.D{{Key: "_id", Value: id}, {Key: "pendingSince", Value: bson.D{{Key: "$lt", Value: s.now().Add(-lease)}}}})
		return err
	})
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
