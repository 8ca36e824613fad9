package store

import (
	"context"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
)

// Claims is the claim protocol of claim.go for documents other repositories keep in the
// store's database (AppContexts): FerretDB runs concurrent updates of one document as
// read-modify-write, whatever the collection.
type Claims struct{ s *Store }

// NewClaims prepares the claims of db, which the resource store shares: keys must not
// look like a resource's path.
func NewClaims(ctx context.Context, db *mongo.Database) (*Claims, error) {
	s := &Store{claims: db.Collection("claims"), now: func() time.Time { return time.Now().UTC() }, claimWait: claimWait}
	if err := ensureClaimIndex(ctx, s.claims); err != nil {
		return nil, err
	}
	return &Claims{s: s}, nil
}

// Exclusive runs write holding the claim on key, as the store's own writes are made.
// Error: ErrBusy when another writer held it for the whole wait.
func (c *Claims) Exclusive(ctx context.Context, key string, write func(ctx context.Context) error) error {
	return c.s.exclusive(ctx, key, write)
}

// ExclusiveAs is Exclusive for a writer that is one attempt of a succession: a claim an
// earlier attempt left is taken over within seconds rather than a lease.
func (c *Claims) ExclusiveAs(ctx context.Context, key string, holder Holder, write func(ctx context.Context) error) error {
	return c.s.exclusiveAt(ctx, key, 0, &holder, write)
}

// Release removes the claims holder left, for a holder known to be dead: a restarted
// worker's predecessor, whose attempts it took over. A later attempt would otherwise wait
// until each is supersededAfter old (5 s) before it writes that document.
func (c *Claims) Release(ctx context.Context, holder Holder) error {
	_, err := c.s.claims.DeleteMany(ctx, bson.D{{Key: "holder.name", Value: holder.Name}, {Key: "holder.attempt", Value: holder.Attempt}})
	return err
}

// Claim is a claim held across several writes (Hold), until Release.
type Claim struct {
	s  *Store
	c  *claimDoc
	At time.Time // when it was taken: writes under it must end by Deadline
}

// Hold claims key for holder, as ExclusiveAs does for one write, and keeps it until
// Release: a writer with several writes in quick succession claims once. Others wait for
// it as for any claim (up to claimWait, then ErrBusy), so it must be held well below that.
func (c *Claims) Hold(ctx context.Context, key string, holder Holder) (*Claim, error) {
	cd, err := c.s.claim(ctx, key, 0, &holder)
	if err != nil {
		return nil, err
	}
	return &Claim{s: c.s, c: cd, At: cd.At}, nil
}

// Deadline is when writes under the claim must have ended: later, another writer may
// take it over.
func (cl *Claim) Deadline() time.Time { return cl.At.Add(lease / 2) }

// Release gives the claim up.
func (cl *Claim) Release(ctx context.Context) {
	_, _ = cl.s.claims.DeleteOne(context.WithoutCancel(ctx), bson.D{{Key: "_id", Value: cl.c.ID}})
}
