package store

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// CreateMany stores docs as Create stores one, all of them or none: a bulk import of
// thousands of resources in a few writes instead of three each. The documents are
// inserted pending together, the parents and references that are not among them checked
// once each, then committed together. A document's parent may be another of docs. Errors
// as Create's; ErrExists names a document that exists already.
func (s *Store) CreateMany(ctx context.Context, docs []*Doc) error {
	if len(docs) == 0 {
		return nil
	}
	if err := s.afterDeletes(ctx, func() error { return s.createManyOnce(ctx, docs) }); err != nil {
		return err
	}
	return s.renewEpochs(ctx, docs...)
}

func (s *Store) createManyOnce(ctx context.Context, docs []*Doc) error {
	now := s.now()
	ids := make([]string, len(docs))
	batch := make([]any, len(docs))
	ours := map[string]bool{}
	for i, d := range docs {
		d.Rev, d.Created, d.Updated, d.PendingSince, d.DeletingSince = 1, now, now, &now, nil
		d.Anc, d.AncV = ancestorsOf(d.ID), 1
		ids[i], batch[i] = d.ID, d
		if ours[d.ID] {
			return &Error{Code: ErrExists, ID: d.ID, Msg: "is named twice in the import"}
		}
		ours[d.ID] = true
	}
	// As Create: only until lease/2, so that nothing sweeps a pending document while it
	// is being committed.
	ctx, cancel := context.WithDeadline(ctx, now.Add(lease/2))
	defer cancel()
	tooLong := &Error{Code: ErrBusy, ID: ids[0], Msg: "and the rest of its import took too long to store"}
	mine := bson.D{{Key: "_id", Value: bson.D{{Key: "$in", Value: ids}}}, {Key: "pendingSince", Value: now}}
	withdraw := func() {
		wctx, cancel := context.WithDeadline(context.WithoutCancel(ctx), now.Add(lease/2))
		defer cancel()
		_, _ = s.coll.DeleteMany(wctx, mine)
	}
	if _, err := s.coll.InsertMany(ctx, batch, options.InsertMany().SetOrdered(false)); err != nil {
		withdraw()
		if id := duplicateOf(err, ids); id != "" {
			return &Error{Code: ErrExists, ID: id}
		}
		if ctx.Err() != nil {
			return tooLong
		}
		return fmt.Errorf("insert %d documents: %w", len(docs), err)
	}
	if err := s.checkOutside(ctx, docs, ours); err != nil {
		withdraw()
		if ctx.Err() != nil {
			return tooLong
		}
		return err
	}
	res, err := s.coll.UpdateMany(ctx, mine, bson.D{{Key: "$unset", Value: bson.D{{Key: "pendingSince", Value: ""}}}})
	if err != nil {
		withdraw()
		if ctx.Err() != nil {
			return tooLong
		}
		return fmt.Errorf("commit %d documents: %w", len(docs), err)
	}
	if res.MatchedCount != int64(len(docs)) { // swept as stale: only after a pause longer than the lease
		return tooLong
	}
	for _, d := range docs {
		d.PendingSince = nil
	}
	return nil
}

// checkOutside checks, once each, the parents and strict references of docs that are not
// among them (ours).
func (s *Store) checkOutside(ctx context.Context, docs []*Doc, ours map[string]bool) error {
	var parents, refs []string
	for _, d := range docs {
		if d.Parent != "" && !ours[d.Parent] && !slices.Contains(parents, d.Parent) {
			parents = append(parents, d.Parent)
		}
		for _, r := range d.strictRefs() {
			if !ours[r] && !slices.Contains(refs, r) {
				refs = append(refs, r)
			}
		}
	}
	for _, p := range parents {
		if err := s.checkRefs(ctx, p, nil, nil); err != nil {
			return err
		}
	}
	return s.checkRefs(ctx, "", refs, nil)
}

// duplicateOf is the id of a document InsertMany found existing ("" for another error).
func duplicateOf(err error, ids []string) string {
	var bulk mongo.BulkWriteException
	if !errors.As(err, &bulk) {
		return ""
	}
	for _, we := range bulk.WriteErrors {
		if mongo.IsDuplicateKeyError(we) && we.Index >= 0 && we.Index < len(ids) {
			return ids[we.Index]
		}
	}
	return ""
}
