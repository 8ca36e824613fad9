// Package blobs is the content-addressed store of the charts that come by reference
// (internal/core/artifact is their vocabulary, pure): each kept once by its digest, in
// MongoDB, apart from the vocabulary so that workflow code, which uses that, builds on no
// database.
package blobs

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/temco/temco/internal/core/artifact"
	"github.com/temco/temco/internal/core/store"
)

// Store keeps artifacts by the sha256 of their bytes: the same chart is stored once, for
// every app, project and revision that uses it, and fetched once for the whole fleet.
type Store struct{ coll *mongo.Collection }

// blobDoc is one stored artifact. Aliases are the other digests it is known by (an OCI
// manifest's), so a pinned OCI chart is found without asking its registry.
type blobDoc struct {
	ID      string    `bson:"_id"` // sha256:<hex> of Data
	Data    []byte    `bson:"data"`
	Size    int64     `bson:"size"`
	Aliases []string  `bson:"aliases,omitempty"`
	Stored  time.Time `bson:"stored"`
	// Used is when a revision last pinned it: Collect spares what was used lately, so that
	// an operation that just found it keeps it.
	Used time.Time `bson:"used"`
	// Signer and SignerKey (its key's fingerprint) signed the provenance it was verified
	// against when stored; none: it was stored unverified (no keyring was configured).
	Signer    string `bson:"signer,omitempty"`
	SignerKey string `bson:"signerKey,omitempty"`
	// Projects fetched it from a source of theirs: only they get it from the store
	// (Entry.UsableBy).
	Projects []string `bson:"projects,omitempty"`
}

// NewStore is the store of db's "artifacts" collection.
func NewStore(db *mongo.Database) *Store { return &Store{coll: db.Collection("artifacts")} }

// StoreOf is the artifact store beside the resources of st (nil for nil: tests that
// register activities without a database).
func StoreOf(st *store.Store) *Store {
	if st == nil {
		return nil
	}
	return NewStore(st.Database())
}

// Put stores data (whose digest is computed here) known also by alias (none: ""), and
// returns its digest. Storing what is there already adds the alias only.
func (s *Store) Put(ctx context.Context, data []byte, alias string) (string, error) {
	return s.PutSigned(ctx, data, alias, "", "")
}

// PutSigned is Put of data whose provenance was verified, signed by signer with the key
// of fingerprint key (none: not verified); storing what is there already records them.
func (s *Store) PutSigned(ctx context.Context, data []byte, alias, signer, key string) (string, error) {
	if len(data) > artifact.MaxSize {
		return "", fmt.Errorf("artifact of %d bytes is over the %d allowed", len(data), artifact.MaxSize)
	}
	d := artifact.Digest(data)
	now := time.Now().UTC()
	doc := blobDoc{ID: d, Data: data, Size: int64(len(data)), Stored: now, Used: now, Signer: signer, SignerKey: key}
	if alias != "" && alias != d {
		doc.Aliases = []string{alias}
	}
	_, err := s.coll.InsertOne(ctx, doc)
	if mongo.IsDuplicateKeyError(err) {
		set := bson.D{{Key: "used", Value: now}}
		if key != "" {
			set = append(set, bson.E{Key: "signer", Value: signer}, bson.E{Key: "signerKey", Value: key})
		}
		update := bson.D{{Key: "$set", Value: set}}
		if len(doc.Aliases) > 0 {
			update = append(update, bson.E{Key: "$addToSet", Value: bson.D{{Key: "aliases", Value: alias}}})
		}
		_, err = s.coll.UpdateOne(ctx, bson.D{{Key: "_id", Value: d}}, update)
	}
	return d, err
}

// ErrNotStored: no artifact has the digest.
var ErrNotStored = errors.New("artifact not stored")

// Get returns the bytes stored under digest, checked against it (ErrNotStored if none).
func (s *Store) Get(ctx context.Context, digest string) ([]byte, error) {
	var doc blobDoc
	err := store.FindOne(ctx, s.coll, bson.D{{Key: "_id", Value: digest}}, &doc)
	if errors.Is(err, mongo.ErrNoDocuments) {
		return nil, fmt.Errorf("%w: %s", ErrNotStored, digest)
	}
	if err != nil {
		return nil, err
	}
	if got := artifact.Digest(doc.Data); got != digest {
		return nil, fmt.Errorf("stored artifact %s reads back as %s", digest, got)
	}
	return doc.Data, nil
}

// Find returns the digest and size of the artifact stored under digest or known by it as
// an alias, marking it used now (Collect spares it); ok is false when there is none.
func (s *Store) Find(ctx context.Context, digest string) (blob string, size int64, ok bool, err error) {
	e, ok, err := s.Lookup(ctx, digest)
	return e.Blob, e.Size, ok, err
}

// Entry is a stored artifact, as Lookup finds it.
type Entry struct {
	Blob string // its digest
	Size int64
	// Signer and SignerKey (the key's fingerprint) signed the provenance it was verified
	// against when stored; none: not verified.
	Signer, SignerKey string
	Projects          []string // the projects that fetched it
}

// UsableBy reports whether project may use the stored bytes: it fetched them from a source
// of its own once. Knowing a digest proves nothing, and a source's say-so neither (an
// index.yaml, or a server on an allowed host, may name any digest): so another project's
// copy is never served, and a chart is downloaded once per project, stored once.
func (e Entry) UsableBy(project string) bool { return slices.Contains(e.Projects, project) }

// Grant records that project fetched the artifact stored under blob from a source of its own.
func (s *Store) Grant(ctx context.Context, blob, project string) error {
	_, err := s.coll.UpdateOne(ctx, bson.D{{Key: "_id", Value: blob}}, bson.D{{Key: "$addToSet", Value: bson.D{{Key: "projects", Value: project}}}})
	return err
}

// Lookup is Find, telling also whether (and by whom) the artifact's provenance was
// verified when it was stored.
func (s *Store) Lookup(ctx context.Context, digest string) (Entry, bool, error) {
	// Marked used first, then read (without its bytes): once marked, Collect leaves it.
	use := bson.D{{Key: "$set", Value: bson.D{{Key: "used", Value: time.Now().UTC()}}}}
	for _, filter := range []bson.D{{{Key: "_id", Value: digest}}, {{Key: "aliases", Value: digest}}} {
		res, err := s.coll.UpdateOne(ctx, filter, use)
		if err != nil {
			return Entry{}, false, err
		}
		if res.MatchedCount == 0 {
			continue
		}
		var doc blobDoc
		err = store.FindOne(ctx, s.coll, filter, &doc, options.Find().SetProjection(bson.D{{Key: "data", Value: 0}}))
		if errors.Is(err, mongo.ErrNoDocuments) {
			continue
		}
		if err != nil {
			return Entry{}, false, err
		}
		return Entry{Blob: doc.ID, Size: doc.Size, Signer: doc.Signer, SignerKey: doc.SignerKey, Projects: doc.Projects}, true, nil
	}
	return Entry{}, false, nil
}

// Collect deletes the artifacts no revision refers to (referenced says) and none used
// since cutoff, and returns how many it deleted.
func (s *Store) Collect(ctx context.Context, cutoff time.Time, referenced func(context.Context, string) (bool, error)) (int, error) {
	cur, err := s.coll.Find(ctx, bson.D{{Key: "used", Value: bson.D{{Key: "$lt", Value: cutoff}}}},
		options.Find().SetProjection(bson.D{{Key: "_id", Value: 1}}))
	if err != nil {
		return 0, err
	}
	var docs []struct {
		ID string `bson:"_id"`
	}
	if err := cur.All(ctx, &docs); err != nil {
		return 0, err
	}
	deleted := 0
	for _, d := range docs {
		if ref, err := referenced(ctx, d.ID); err != nil || ref {
			if err != nil {
				return deleted, err
			}
			continue
		}
		// Only if still unused: an operation that found it meanwhile keeps it.
		res, err := s.coll.DeleteOne(ctx, bson.D{{Key: "_id", Value: d.ID}, {Key: "used", Value: bson.D{{Key: "$lt", Value: cutoff}}}})
		if err != nil {
			return deleted, err
		}
		deleted += int(res.DeletedCount)
	}
	return deleted, nil
}

// fetchLease is how long a fetch's claim on a digest lasts without being renewed: the
// fetcher renews it while it downloads; one that died leaves it to the next after this.
const fetchLease = time.Minute

// ErrFetching: another fetch of the digest is under way (its claim is fresh).
var ErrFetching = errors.New("another operation is fetching this artifact")

// Claim makes the caller the one fetcher of digest, so that operations starting together
// download it once: it returns a renew func (call it while downloading) and a release
// func, or ErrFetching while another holds a fresh claim.
func (s *Store) Claim(ctx context.Context, digest string) (renew func(context.Context), release func(), err error) {
	id := "fetching/" + digest
	at := time.Now().UTC()
	_, err = s.coll.InsertOne(ctx, bson.D{{Key: "_id", Value: id}, {Key: "at", Value: at}})
	if mongo.IsDuplicateKeyError(err) {
		// Taken over only once stale: the filter on the old time makes one taker win.
		var held struct {
			At time.Time `bson:"at"`
		}
		if err := store.FindOne(ctx, s.coll, bson.D{{Key: "_id", Value: id}}, &held); err != nil && !errors.Is(err, mongo.ErrNoDocuments) {
			return nil, nil, err
		}
		if time.Since(held.At) < fetchLease {
			return nil, nil, ErrFetching
		}
		res, uerr := s.coll.UpdateOne(ctx, bson.D{{Key: "_id", Value: id}, {Key: "at", Value: held.At}},
			bson.D{{Key: "$set", Value: bson.D{{Key: "at", Value: at}}}})
		if uerr != nil {
			return nil, nil, uerr
		}
		if res.MatchedCount == 0 {
			return nil, nil, ErrFetching
		}
		err = nil
	}
	if err != nil {
		return nil, nil, err
	}
	renew = func(ctx context.Context) {
		_, _ = s.coll.UpdateOne(ctx, bson.D{{Key: "_id", Value: id}}, bson.D{{Key: "$set", Value: bson.D{{Key: "at", Value: time.Now().UTC()}}}})
	}
	release = func() {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		_, _ = s.coll.DeleteOne(ctx, bson.D{{Key: "_id", Value: id}})
	}
	return renew, release, nil
}
