package snapshot

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"golang.org/x/sync/errgroup"

	"github.com/temco/temco/internal/core/store"
)

// ErrNotFound: the DIG has no snapshot of that id.
var ErrNotFound = errors.New("snapshot not found")

// Revision is one revision a snapshot produced: its number in its instance, its
// context, the operation that produced it, and when that was accepted.
type Revision struct {
	Revision  int64     `json:"revision" bson:"revision"`
	ContextID string    `json:"contextId" bson:"contextId"`
	Operation string    `json:"operation" bson:"operation"`
	Time      time.Time `json:"time" bson:"time"`
}

// Summary describes a snapshot: its id, the revisions it produced (oldest first), when
// and by which operation it was first recorded, and when last (its newest revision).
type Summary struct {
	ID        string     `json:"id" bson:"snapshot"`
	Revisions []Revision `json:"revisions" bson:"revisions"`
	Created   time.Time  `json:"created" bson:"created"`
	Operation string     `json:"operation" bson:"operation"`
	Updated   time.Time  `json:"updated" bson:"updated"`
	// Seq orders a DIG's snapshots by their newest revision (times may tie).
	Seq int64 `json:"-" bson:"seq"`
}

// Snapshot is a stored snapshot: its summary and its canonical JSON (Document).
type Snapshot struct {
	Summary  `bson:",inline"`
	Key      string   `json:"-" bson:"_id"` // <dig>/snapshots/<id>
	DIG      string   `json:"-" bson:"dig"`
	Document string   `json:"-" bson:"document"`
	Contexts []string `json:"-" bson:"contexts"` // the revisions' contexts, to find a revision's snapshot
}

// Store keeps snapshots in the collection "snapshots" of the resource store's database.
type Store struct {
	coll *mongo.Collection

	mu     sync.Mutex
	claims *store.Claims // made on the first write: its index is made then
}

// Open returns the snapshots kept in db. It reads nothing: the collection's indexes are
// made by the first write.
func Open(db *mongo.Database) *Store {
	return &Store{coll: db.Collection("snapshots")}
}

// prepare makes the indexes and the claims writes need, once.
func (s *Store) prepare(ctx context.Context) (*store.Claims, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.claims != nil {
		return s.claims, nil
	}
	if err := store.EnsureIndexes(ctx, s.coll, []store.Index{
		store.Index(bson.D{{Key: "dig", Value: 1}, {Key: "seq", Value: -1}}),
		store.Index(bson.D{{Key: "contexts", Value: 1}}),
	}); err != nil {
		return nil, err
	}
	claims, err := store.NewClaims(ctx, s.coll.Database())
	if err != nil {
		return nil, err
	}
	s.claims = claims
	return claims, nil
}

// exclusive runs write holding the claim on dig's snapshots: FerretDB runs an update as
// a read and a write, so two writers at once could each undo the other's.
func (s *Store) exclusive(ctx context.Context, dig string, write func(ctx context.Context) error) error {
	claims, err := s.prepare(ctx)
	if err != nil {
		return err
	}
	return claims.Exclusive(ctx, "snapshots:"+dig, write)
}

func key(dig, id string) string { return dig + "/snapshots/" + id }

// Take records revision rev of the DIG whose store id is dig on the snapshot of its
// configuration: for a rollback (source, the context of the revision it copies, set) the
// snapshot that produced source, since a rollback deploys that configuration again; for
// any other operation the configuration the store holds now (Build). It returns the
// snapshot's id, "" for a rollback to a revision recorded before snapshots were. A
// revision already recorded (a retried operation) is left as it is.
func (s *Store) Take(ctx context.Context, st *store.Store, dig string, rev Revision, source string) (string, error) {
	var data []byte
	if source == "" {
		var err error
		if data, err = Configuration(ctx, st, dig); err != nil {
			return "", err
		}
	}
	return s.Record(ctx, dig, rev, source, data)
}

// Configuration is the canonical JSON of the configuration the store holds now for the
// DIG whose store id is dig (Build), as Record takes it.
func Configuration(ctx context.Context, st *store.Store, dig string) ([]byte, error) {
	doc, err := Build(ctx, st, dig)
	if err != nil {
		return nil, err
	}
	return Canonical(doc)
}

// Record is Take with the configuration read before (data, from Configuration; nil for
// a rollback, which names its source).
func (s *Store) Record(ctx context.Context, dig string, rev Revision, source string, data []byte) (string, error) {
	var id string
	err := s.exclusive(ctx, dig, func(ctx context.Context) error {
		// What is there already: independent reads, made at once.
		var (
			done, from *Snapshot
			seq        int64
			exists     bool
		)
		if source == "" {
			id = IDOf(data)
		}
		g, gctx := errgroup.WithContext(ctx)
		g.Go(func() (err error) { done, err = s.producedBy(gctx, dig, rev.ContextID); return err })
		g.Go(func() (err error) { seq, err = s.nextSeq(gctx, dig); return err })
		if source != "" {
			g.Go(func() (err error) { from, err = s.producedBy(gctx, dig, source); return err })
		} else {
			g.Go(func() error {
				err := store.FindOne(gctx, s.coll, bson.D{{Key: "_id", Value: key(dig, id)}}, new(bson.Raw), options.Find().SetProjection(bson.D{{Key: "_id", Value: 1}}))
				exists = err == nil
				if errors.Is(err, mongo.ErrNoDocuments) {
					return nil
				}
				return err
			})
		}
		if err := g.Wait(); err != nil {
			return err
		}
		switch {
		case done != nil:
			id = done.ID
			return nil
		case source != "":
			if from == nil {
				id = ""
				return nil
			}
			id = from.ID
			return s.addRevision(ctx, from.Key, rev, seq)
		case exists:
			return s.addRevision(ctx, key(dig, id), rev, seq)
		}
		_, err := s.coll.InsertOne(ctx, Snapshot{Key: key(dig, id), DIG: dig, Document: string(data), Contexts: []string{rev.ContextID},
			Summary: Summary{ID: id, Revisions: []Revision{rev}, Created: rev.Time, Operation: rev.Operation, Updated: rev.Time, Seq: seq}})
		return err
	})
	if err != nil {
		return "", fmt.Errorf("record the snapshot of revision %d of %s: %w", rev.Revision, dig, err)
	}
	return id, nil
}

func (s *Store) addRevision(ctx context.Context, k string, rev Revision, seq int64) error {
	_, err := s.coll.UpdateOne(ctx, bson.D{{Key: "_id", Value: k}}, bson.D{
		{Key: "$push", Value: bson.D{{Key: "revisions", Value: rev}, {Key: "contexts", Value: rev.ContextID}}},
		{Key: "$set", Value: bson.D{{Key: "updated", Value: rev.Time}, {Key: "seq", Value: seq}}},
	})
	return err
}

// nextSeq is the Seq of dig's next recorded revision (called holding the claim).
func (s *Store) nextSeq(ctx context.Context, dig string) (int64, error) {
	var last struct {
		Seq int64 `bson:"seq"`
	}
	err := store.FindOne(ctx, s.coll, bson.D{{Key: "dig", Value: dig}}, &last, options.Find().SetSort(bson.D{{Key: "seq", Value: -1}}).SetProjection(bson.D{{Key: "seq", Value: 1}}))
	if err != nil && !errors.Is(err, mongo.ErrNoDocuments) {
		return 0, err
	}
	return last.Seq + 1, nil
}

// producedBy is the snapshot of dig that produced the revision of context ctxID (nil:
// none did).
func (s *Store) producedBy(ctx context.Context, dig, ctxID string) (*Snapshot, error) {
	var snap Snapshot
	err := store.FindOne(ctx, s.coll, bson.D{{Key: "dig", Value: dig}, {Key: "contexts", Value: ctxID}}, &snap, options.Find().SetProjection(bson.D{{Key: "document", Value: 0}}))
	if errors.Is(err, mongo.ErrNoDocuments) {
		return nil, nil
	}
	return &snap, err
}

// Get returns the snapshot id of the DIG whose store id is dig. Error: ErrNotFound.
func (s *Store) Get(ctx context.Context, dig, id string) (*Snapshot, error) {
	var snap Snapshot
	err := store.FindOne(ctx, s.coll, bson.D{{Key: "_id", Value: key(dig, id)}}, &snap)
	if errors.Is(err, mongo.ErrNoDocuments) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("read snapshot %s of %s: %w", id, dig, err)
	}
	return &snap, nil
}

// List returns the snapshots of the DIG whose store id is dig, newest first: by their
// newest revision, so that the snapshot a rollback returned to comes first again.
func (s *Store) List(ctx context.Context, dig string) ([]Summary, error) {
	cur, err := s.coll.Find(ctx, bson.D{{Key: "dig", Value: dig}},
		options.Find().SetProjection(bson.D{{Key: "document", Value: 0}, {Key: "contexts", Value: 0}}))
	if err != nil {
		return nil, fmt.Errorf("list the snapshots of %s: %w", dig, err)
	}
	out := []Summary{}
	if err := cur.All(ctx, &out); err != nil {
		return nil, fmt.Errorf("list the snapshots of %s: %w", dig, err)
	}
	slices.SortFunc(out, func(a, b Summary) int { return cmp.Compare(b.Seq, a.Seq) })
	return out, nil
}

// DeleteDIG removes the snapshots of the DIG whose store id is dig (it was deleted).
func (s *Store) DeleteDIG(ctx context.Context, dig string) error {
	if _, err := s.coll.DeleteMany(ctx, bson.D{{Key: "dig", Value: dig}}); err != nil {
		return fmt.Errorf("delete the snapshots of %s: %w", dig, err)
	}
	return nil
}
