package store

import (
	"context"
	"fmt"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// maxDeleteWaits bounds how many deletes of the resources it needs a create or an
// update waits out before it answers ErrBusy.
const maxDeleteWaits = 5

// Create stores d (Rev becomes 1). Errors: ErrExists, ErrParentMissing, ErrRefMissing, ErrBusy.
//
// A create that finds its parent or a reference being deleted withdraws, waits until
// that delete has ended and starts again, so that it fails as if it came after an
// accepted delete and succeeds after a refused one. It never waits while pending: the
// delete may be waiting for it.
func (s *Store) Create(ctx context.Context, d *Doc) error {
	return s.CreateChecked(ctx, d, nil)
}

// CreateChecked is Create that calls checkParent (if not nil) with the parent as the
// create reads it after its pending insert (its owner, parent and what is above it too):
// its error withdraws d and is returned as is. It may set d.Above and d.AboveV, which the
// commit writes. A caller that must look at the parent before it writes (the api's owner
// check) is spared a read of its own.
func (s *Store) CreateChecked(ctx context.Context, d *Doc, checkParent func(context.Context, *Doc) error) error {
	if err := s.afterDeletes(ctx, func() error { return s.createOnce(ctx, d, checkParent) }); err != nil {
		return err
	}
	return s.renewEpochs(ctx, d)
}

// afterDeletes runs a create until it finds no parent or reference being deleted, waiting
// out each delete it finds (maxDeleteWaits at most).
func (s *Store) afterDeletes(ctx context.Context, create func() error) error {
	for attempt := 1; ; attempt++ {
		err := create()
		deleting := deletingOf(err)
		if deleting == "" || attempt == maxDeleteWaits {
			return err
		}
		if err := s.awaitDeleted(ctx, deleting); err != nil {
			return err
		}
	}
}

// createOnce inserts d as pending, checks what it needs and commits it, or withdraws it.
func (s *Store) createOnce(ctx context.Context, d *Doc, checkParent func(context.Context, *Doc) error) error {
	now := s.now()
	d.Rev, d.Created, d.Updated, d.PendingSince, d.DeletingSince = 1, now, now, &now, nil
	d.Anc, d.AncV = ancestorsOf(d.ID), 1
	// Only its creator writes a pending document, without a claim, and only until it is
	// lease/2 old; others replace or sweep it, holding its claim, once it is a lease old.
	ctx, cancel := context.WithDeadline(ctx, now.Add(lease/2))
	defer cancel()
	tooLong := &Error{Code: ErrBusy, ID: d.ID, Msg: "took too long to create"}
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
	if err := s.checkRefs(ctx, d.Parent, d.strictRefs(), checkParent); err != nil {
		withdraw()
		if ctx.Err() != nil {
			return tooLong
		}
		return err
	}
	commit := bson.D{{Key: "$unset", Value: bson.D{{Key: "pendingSince", Value: ""}}}}
	if checkParent != nil && d.AboveV == 1 { // set by checkParent, after the insert
		commit = append(commit, bson.E{Key: "$set", Value: bson.D{{Key: "above", Value: d.Above}, {Key: "abovev", Value: d.AboveV}}})
	}
	res, err := s.coll.UpdateOne(ctx, mine, commit)
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
	err = FindOne(ctx, s.coll, bson.D{{Key: "_id", Value: d.ID}}, &cur, options.Find().SetProjection(bson.D{{Key: "pendingSince", Value: 1}}))
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

// strictRefs are the references that must exist.
func (d *Doc) strictRefs() []string {
	if d.LooseRefs {
		return nil
	}
	return d.Refs
}

// checkRefs verifies that the parent and every ref exist, are committed and not being
// deleted (ErrBusy, see deletingOf); then, if set, checkParent sees the parent.
func (s *Store) checkRefs(ctx context.Context, parent string, refs []string, checkParent func(context.Context, *Doc) error) error {
	ids := refs
	if parent != "" {
		ids = append([]string{parent}, refs...)
	}
	// One lookup by _id each (see byID): an $in would scan the whole collection on every
	// create.
	for i, id := range ids {
		fields := bson.D{{Key: "_id", Value: 1}, {Key: "deletingSince", Value: 1}}
		isParent := i == 0 && parent != ""
		if isParent && checkParent != nil {
			fields = append(fields, bson.E{Key: "owner", Value: 1}, bson.E{Key: "parent", Value: 1}, bson.E{Key: "above", Value: 1}, bson.E{Key: "abovev", Value: 1})
		}
		f, err := s.byID(ctx, id, fields)
		switch {
		case CodeOf(err) == ErrNotFound && i == 0 && parent != "":
			return &Error{Code: ErrParentMissing, ID: id}
		case CodeOf(err) == ErrNotFound:
			return &Error{Code: ErrRefMissing, ID: id}
		case err != nil:
			return fmt.Errorf("check references: %w", err)
		case s.beingDeleted(f):
			return &Error{Code: ErrBusy, ID: id, Msg: "is being deleted", deleting: true}
		case isParent && checkParent != nil:
			if err := checkParent(ctx, f); err != nil {
				return err
			}
		}
	}
	return nil
}

// checkRefsAfterDeletes is checkRefs waiting out the deletes of the resources it finds
// being deleted: it answers as if it came after them.
func (s *Store) checkRefsAfterDeletes(ctx context.Context, refs []string) error {
	for attempt := 1; ; attempt++ {
		err := s.checkRefs(ctx, "", refs, nil)
		deleting := deletingOf(err)
		if deleting == "" || attempt == maxDeleteWaits {
			return err
		}
		if err := s.awaitDeleted(ctx, deleting); err != nil {
			return err
		}
	}
}

// beingDeleted reports whether d carries the mark of a live deleter.
func (s *Store) beingDeleted(d *Doc) bool {
	return d.DeletingSince != nil && s.now().Sub(*d.DeletingSince) < lease
}

// awaitDeleted waits until the delete of id under way has ended, whatever its outcome.
func (s *Store) awaitDeleted(ctx context.Context, id string) error {
	ended, err := s.poll(ctx, func() (bool, error) {
		d, err := s.byID(ctx, id, bson.D{{Key: "deletingSince", Value: 1}})
		if CodeOf(err) == ErrNotFound {
			return true, nil
		}
		return err == nil && !s.beingDeleted(d), err
	})
	if err == nil && !ended {
		err = &Error{Code: ErrBusy, ID: id, Msg: "is being deleted"}
	}
	return err
}
