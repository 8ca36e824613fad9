package store

import (
	"context"
	"fmt"
	"maps"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// Update writes d's Body, Refs, Fields, Blob, Secret and State if the stored revision
// is still d.Rev (optimistic concurrency); d.Rev is bumped. Errors: ErrNotFound,
// ErrConflict (someone else wrote first), ErrRefMissing, ErrBusy.
//
// Added references are checked after the write and the write is undone if one vanished
// meanwhile: a concurrent delete of the referenced resource either sees this document
// as a referrer or has already marked itself deleting, which the re-check observes. A
// reference being deleted is waited for (the delete does not wait for a committed
// referrer: it refuses), so the update answers as if it came after that delete.
func (s *Store) Update(ctx context.Context, d *Doc) error {
	return s.update(ctx, d, nil)
}

// UpdateOver is Update for a caller that read the stored document, old, at d.Rev just
// before: it is not read again. A write that came in between fails it all the same, as
// ErrConflict: the write is conditional on the revision, under the claim.
func (s *Store) UpdateOver(ctx context.Context, d, old *Doc) error {
	return s.update(ctx, d, old)
}

func (s *Store) update(ctx context.Context, d, old *Doc) error {
	return s.exclusiveAt(ctx, d.ID, d.Rev, nil, func(ctx context.Context) error {
		if old == nil {
			var err error
			if old, err = s.Get(ctx, d.ID); err != nil {
				return err
			}
		}
		if old.Rev != d.Rev {
			return &Error{Code: ErrConflict, ID: d.ID}
		}
		added := newRefs(old.Refs, d.strictRefs())
		if err := s.checkRefsAfterDeletes(ctx, added); err != nil {
			return err
		}
		if err := s.swap(ctx, d, d.Rev, old.Fields); err != nil {
			return err
		}
		if err := s.checkRefsAfterDeletes(ctx, added); err != nil {
			old.Rev = d.Rev
			if s.swap(ctx, old, old.Rev, d.Fields) == nil {
				d.Rev = old.Rev
			}
			return err
		}
		return s.renewEpochs(ctx, d)
	})
}

// SetState replaces the state of d's document if it is still at revision d.Rev, bumping
// Rev (ErrConflict otherwise). Nothing else is written: a state change adds no reference,
// so unlike Update it needs no read first.
func (s *Store) SetState(ctx context.Context, d *Doc) error {
	err := s.exclusiveAt(ctx, d.ID, d.Rev, nil, func(ctx context.Context) error {
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

// swap replaces the mutable fields of the document at revision rev with d's, bumping Rev;
// was is the stored Fields. The caller holds the claim; rev stays in the filter so that
// the write is also conditional where the server is atomic (MongoDB), e.g. beside older
// temco processes.
func (s *Store) swap(ctx context.Context, d *Doc, rev int64, was map[string]string) error {
	if !maps.Equal(was, d.Fields) {
		// FerretDB 1.x skips a $set whose document has the stored one's values under other
		// keys ({"a": "1"} stays when {"b": "1"} is set): changed Fields go first.
		if _, err := s.coll.UpdateOne(ctx, bson.D{{Key: "_id", Value: d.ID}, {Key: "rev", Value: rev}, visible},
			bson.D{{Key: "$unset", Value: bson.D{{Key: "fields", Value: ""}}}}); err != nil {
			return fmt.Errorf("update %s: %w", d.ID, err)
		}
	}
	d.Updated = s.now()
	set := bson.D{
		{Key: "rev", Value: rev + 1}, {Key: "updated", Value: d.Updated},
		{Key: "body", Value: d.Body}, {Key: "refs", Value: d.Refs}, {Key: "fields", Value: d.Fields},
		{Key: "blob", Value: d.Blob}, {Key: "secret", Value: d.Secret}, {Key: "state", Value: d.State},
		{Key: "anc", Value: ancestorsOf(d.ID)}, {Key: "ancv", Value: int32(1)}, // a document written before ancestors
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
