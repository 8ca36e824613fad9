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

// Delete removes id unless it has children or referrers. Errors: ErrNotFound,
// ErrHasChildren, ErrReferenced, ErrBusy.
func (s *Store) Delete(ctx context.Context, id string) error {
	return s.DeleteIf(ctx, id, nil)
}

// DeleteIf is Delete of a resource that may be removed only in some states: allowed (if
// not nil) sees the document as it is when no one else can write it (as the delete's mark
// found it: no read of its own), and its error refuses the delete and is returned as is.
func (s *Store) DeleteIf(ctx context.Context, id string, allowed func(context.Context, *Doc) error) error {
	return s.exclusive(ctx, id, func(ctx context.Context) error {
		// Holding the claim, any mark already there is a dead deleter's: replace it.
		now := s.now()
		var was Doc // deleting a member of a cloud renews its epoch (kind and parent)
		err := s.coll.FindOneAndUpdate(ctx, bson.D{{Key: "_id", Value: id}, visible},
			bson.D{{Key: "$set", Value: bson.D{{Key: "deletingSince", Value: now}}}}).Decode(&was) // FerretDB 1.x projects no findAndModify
		if errors.Is(err, mongo.ErrNoDocuments) {
			return &Error{Code: ErrNotFound, ID: id}
		}
		if err != nil {
			return fmt.Errorf("delete %s: %w", id, err)
		}
		marked := bson.D{{Key: "_id", Value: id}, {Key: "deletingSince", Value: now}}
		unmark := func() {
			_, _ = s.coll.UpdateOne(ctx, marked, bson.D{{Key: "$unset", Value: bson.D{{Key: "deletingSince", Value: ""}}}})
		}
		if allowed != nil {
			d := was
			d.DeletingSince = nil // as it was before the mark
			if err := allowed(ctx, &d); err != nil {
				unmark()
				return err
			}
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
		return s.renewEpochs(ctx, &was)
	})
}

// refuseIfInUse fails when id has a child or a referrer. A pending one is waited for: its
// creator, finding id marked, withdraws it (then id is free), or it was committed first
// (then id is in use). Stale pending ones, of processes that died, are swept.
func (s *Store) refuseIfInUse(ctx context.Context, id string) error {
	for _, rel := range []struct {
		key  string
		code Code
	}{{"parent", ErrHasChildren}, {"refs", ErrReferenced}} {
		u, err := s.users(ctx, rel.key, id)
		if err != nil {
			return fmt.Errorf("delete %s: %w", id, err)
		}
		if u.committed != "" {
			return &Error{Code: rel.code, ID: id, Other: u.committed}
		}
		for _, dead := range u.stale {
			if err := s.sweep(ctx, dead); err != nil {
				return fmt.Errorf("delete %s: sweep %s: %w", id, dead, err)
			}
		}
		for user, since := range u.pending {
			committed, err := s.awaitPending(ctx, user, since)
			if err != nil {
				return fmt.Errorf("delete %s: %w", id, err)
			}
			if committed {
				return &Error{Code: rel.code, ID: id, Other: user}
			}
		}
	}
	return nil
}

// usage is what uses a resource through one field (parent or refs).
type usage struct {
	committed string               // the first committed user found; then nothing else is read
	pending   map[string]time.Time // users being created, with their pendingSince
	stale     []string             // pending users whose creators died
}

// users reads the documents whose field key names id.
func (s *Store) users(ctx context.Context, key, id string) (usage, error) {
	u := usage{pending: map[string]time.Time{}}
	cur, err := s.coll.Find(ctx, bson.D{{Key: key, Value: id}},
		options.Find().SetProjection(bson.D{{Key: "_id", Value: 1}, {Key: "pendingSince", Value: 1}}))
	if err != nil {
		return u, err
	}
	defer cur.Close(context.WithoutCancel(ctx))
	for cur.Next(ctx) {
		var user Doc
		if err := cur.Decode(&user); err != nil {
			return u, err
		}
		switch {
		case user.PendingSince == nil:
			u.committed = user.ID
			return u, nil
		case s.now().Sub(*user.PendingSince) < lease:
			u.pending[user.ID] = *user.PendingSince
		default:
			u.stale = append(u.stale, user.ID)
		}
	}
	return u, cur.Err()
}

// awaitPending waits until the pending document id, pending since since, is committed
// (true) or withdrawn (false). Error: ErrBusy when it stays pending.
func (s *Store) awaitPending(ctx context.Context, id string, since time.Time) (bool, error) {
	var committed bool
	ended, err := s.poll(ctx, func() (bool, error) {
		var d Doc
		err := FindOne(ctx, s.coll, bson.D{{Key: "_id", Value: id}}, &d, options.Find().SetProjection(bson.D{{Key: "pendingSince", Value: 1}}))
		switch {
		case errors.Is(err, mongo.ErrNoDocuments):
			return true, nil
		case err != nil:
			return false, err
		case d.PendingSince == nil:
			committed = true
			return true, nil
		}
		// Another attempt's pending document began after the mark: its creator will withdraw it.
		return !d.PendingSince.Equal(since), nil
	})
	if err == nil && !ended {
		err = &Error{Code: ErrBusy, ID: id, Msg: "is still being created"}
	}
	return committed, err
}

// sweep removes id if it is a stale pending document, holding its claim.
func (s *Store) sweep(ctx context.Context, id string) error {
	return s.exclusive(ctx, id, func(ctx context.Context) error {
		_, err := s.coll.DeleteOne(ctx, bson.D{{Key: "_id", Value: id}, {Key: "pendingSince", Value: bson.D{{Key: "$lt", Value: s.now().Add(-lease)}}}})
		return err
	})
}
