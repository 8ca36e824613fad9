package store

import (
	"context"
	crand "crypto/rand"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
)

// Why claims: FerretDB 1.x runs a conditional update as a read and then a write by _id, so
// two writers can both pass the same filter and the later write silently replaces the
// earlier (both "win"). An insert that breaks a unique index is refused atomically by
// every backend (SQLite, PostgreSQL, MongoDB), so a writer first inserts a claim whose
// key is the resource's _id; only the claim's holder reads, checks and writes the resource.
//
// A claim's own _id is random and never reused, so a stale claim is removed by that _id
// alone and never anyone else's fresh claim with the same key.
//
// Failure modes:
//   - The holder dies: its claim blocks writers of that one resource (they wait up to
//     claimWait, then get ErrBusy) until it is older than the lease; the next writer then
//     removes it.
//   - The holder stalls: it may write only until its claim is lease/2 old (its context's
//     deadline; the driver then abandons the request and FerretDB cancels it), while others
//     take the claim over only once it is a lease old. Clocks of the processes sharing a
//     database must agree to within lease/2.
//   - The holder was one attempt of a Temporal activity, and a later attempt of it wants
//     the claim (Holder): Temporal has given up on the earlier one, mostly because its
//     worker died, so its claim is taken over once it is supersededAfter old, not a
//     lease: a retried attempt does not wait half a minute for every cluster the dead
//     worker was writing.
type claimDoc struct {
	ID     string    `bson:"_id"` // random: identifies this claim alone
	Key    string    `bson:"key"` // the claimed resource's _id; unique
	At     time.Time `bson:"at"`
	Holder *Holder   `bson:"holder,omitempty"`
}

// Holder names a writer that is one of a succession: the attempts of one Temporal
// activity (Name), numbered (Attempt). A later attempt supersedes an earlier one.
type Holder struct {
	Name    string `bson:"name"`
	Attempt int32  `bson:"attempt"`
}

// supersedes reports whether h may take over a claim other holds.
func (h *Holder) supersedes(other *Holder) bool {
	return h != nil && other != nil && h.Name == other.Name && h.Attempt > other.Attempt
}

// supersededAfter is how old a superseded holder's claim must be to be taken over: far
// longer than a write takes (milliseconds), so that an earlier attempt still alive is not
// cut off mid-write; about the time Temporal takes to notice a dead worker and retry.
const supersededAfter = 5 * time.Second

const (
	claimWait       = 2 * time.Second // how long a writer waits for another (see poll)
	claimMaxBackoff = 20 * time.Millisecond
)

func ensureClaimIndex(ctx context.Context, claims *mongo.Collection) error {
	return ensureIndexSpecs(ctx, claims, []indexSpec{{keys: bson.D{{Key: "key", Value: 1}}, name: "key_1", unique: true}})
}

// exclusive runs write while holding the claim on resource id. write's context ends when
// the claim is lease/2 old and is not cancelled with ctx: a protocol under way finishes.
func (s *Store) exclusive(ctx context.Context, id string, write func(ctx context.Context) error) error {
	return s.exclusiveAt(ctx, id, 0, nil, write)
}

// exclusiveAt is exclusive for a write conditional on revision rev (0: none): it stops
// waiting for the claim with ErrConflict (ErrNotFound) once the resource has moved past
// rev (is gone), as the write would fail anyway. holder (nil: anonymous) names the writer.
func (s *Store) exclusiveAt(ctx context.Context, id string, rev int64, holder *Holder, write func(ctx context.Context) error) error {
	c, err := s.claim(ctx, id, rev, holder)
	if err != nil {
		return err
	}
	wctx, cancel := context.WithDeadline(context.WithoutCancel(ctx), c.At.Add(lease/2))
	defer cancel()
	err = write(wctx)
	// Released even when write failed: a leftover claim would hold writers off for a lease.
	_, _ = s.claims.DeleteOne(context.WithoutCancel(ctx), bson.D{{Key: "_id", Value: c.ID}})
	return err
}

// claim inserts a claim on id, waiting while a live writer holds it and taking over one
// whose holder died (older than the lease) or is superseded by holder. Error: ErrBusy
// after waiting claimWait; with rev > 0, ErrConflict or ErrNotFound once the resource is
// no longer at rev.
func (s *Store) claim(ctx context.Context, id string, rev int64, holder *Holder) (*claimDoc, error) {
	var c *claimDoc
	got, err := s.poll(ctx, func() (bool, error) {
		for tookOver := false; ; tookOver = true {
			c = &claimDoc{ID: crand.Text(), Key: id, At: s.now(), Holder: holder}
			_, err := s.claims.InsertOne(ctx, c)
			if err == nil {
				return true, nil
			}
			if !mongo.IsDuplicateKeyError(err) {
				return false, fmt.Errorf("claim %s: %w", id, err)
			}
			var held claimDoc
			err = FindOne(ctx, s.claims, bson.D{{Key: "key", Value: id}}, &held)
			switch {
			case errors.Is(err, mongo.ErrNoDocuments):
				return false, nil // released meanwhile
			case err != nil:
				return false, fmt.Errorf("claim %s: %w", id, err)
			case !tookOver && (s.now().Sub(held.At) >= lease || holder.supersedes(held.Holder) && s.now().Sub(held.At) >= supersededAfter):
				// A dead or superseded holder's: removed, and claimed again at once, not
				// after a pause (on a slow database the pause could outlast the whole wait).
				if _, err := s.claims.DeleteOne(ctx, bson.D{{Key: "_id", Value: held.ID}}); err != nil {
					return false, err
				}
				continue
			}
			break
		}
		if rev > 0 {
			cur, err := s.byID(ctx, id, bson.D{{Key: "rev", Value: 1}})
			if err == nil && cur.Rev != rev {
				err = &Error{Code: ErrConflict, ID: id}
			}
			return false, err
		}
		return false, nil
	})
	if err == nil && !got {
		err = &Error{Code: ErrBusy, ID: id, Msg: "is being written by another request"}
	}
	if err != nil {
		return nil, err
	}
	return c, nil
}

// poll calls done until it reports true or fails, pausing between calls with a jittered,
// growing backoff; after s.claimWait it gives up and reports false. It is how a writer
// waits for another: FerretDB offers nothing to block on.
func (s *Store) poll(ctx context.Context, done func() (bool, error)) (bool, error) {
	giveUp := s.now().Add(s.claimWait)
	backoff := time.Millisecond
	for {
		ok, err := done()
		if ok || err != nil {
			return ok, err
		}
		if s.now().After(giveUp) {
			return false, nil
		}
		// Jittered, so that waiters released together do not collide again.
		t := time.NewTimer(backoff/2 + rand.N(backoff))
		select {
		case <-ctx.Done():
			t.Stop()
			return false, ctx.Err()
		case <-t.C:
		}
		backoff = min(2*backoff, claimMaxBackoff)
	}
}
