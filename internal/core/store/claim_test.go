package store

import (
	"context"
	"slices"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// A claim left by a process that died blocks writers of that resource, for a lease at
// most: a live claim makes them wait and then answer busy; a stale one is taken over.
func TestAClaimOfADeadWriterBlocksOnlyUntilItsLeaseEnds(t *testing.T) {
	forEachBackend(t, "", func(t *testing.T, s *Store) {
		ctx := context.Background()
		s.claimWait = 50 * time.Millisecond
		if err := s.Create(ctx, doc("/p", "")); err != nil {
			t.Fatal(err)
		}
		d, _ := s.Get(ctx, "/p")
		if _, err := s.claims.InsertOne(ctx, claimDoc{ID: "dead", Key: "/p", At: s.now()}); err != nil {
			t.Fatal(err)
		}
		d.State = "blocked"
		wantCode(t, s.SetState(ctx, d), ErrBusy)
		wantCode(t, s.Delete(ctx, "/p"), ErrBusy)

		if _, err := s.claims.UpdateOne(ctx, bson.D{{Key: "_id", Value: "dead"}},
			bson.D{{Key: "$set", Value: bson.D{{Key: "at", Value: s.now().Add(-lease)}}}}); err != nil {
			t.Fatal(err)
		}
		d.State = "taken over"
		if err := s.SetState(ctx, d); err != nil {
			t.Fatalf("a stale claim still blocks: %v", err)
		}
		if got, _ := s.Get(ctx, "/p"); got.State != "taken over" {
			t.Fatalf("state %q after taking the claim over", got.State)
		}
		// Nothing is left claimed: the dead claim was removed and the writer released its own.
		if n, err := s.claims.CountDocuments(ctx, bson.D{}); err != nil || n != 0 {
			t.Fatalf("%d claims left (%v)", n, err)
		}
	})
}

// A conditional write waiting for a claim gives up with a conflict as soon as the
// resource has moved past its revision, instead of waiting for the claim.
func TestAConditionalWriteStopsWaitingOnceItHasLost(t *testing.T) {
	forEachBackend(t, "", func(t *testing.T, s *Store) {
		ctx := context.Background()
		s.claimWait = time.Hour
		if err := s.Create(ctx, doc("/p", "")); err != nil {
			t.Fatal(err)
		}
		stale, _ := s.Get(ctx, "/p")
		cur, _ := s.Get(ctx, "/p")
		if err := s.SetState(ctx, cur); err != nil {
			t.Fatal(err)
		}
		// A live writer holds the claim (and would for an hour).
		if _, err := s.claims.InsertOne(ctx, claimDoc{ID: "live", Key: "/p", At: s.now()}); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		wantCode(t, s.SetState(ctx, stale), ErrConflict)
		wantCode(t, s.Update(ctx, stale), ErrConflict)
	})
}

// A later attempt of the activity whose earlier attempt left a claim takes it over within
// seconds, not a lease; anyone else, and the earlier attempt itself, still wait.
func TestALaterAttemptTakesOverItsPredecessorsClaim(t *testing.T) {
	forEachBackend(t, "", func(t *testing.T, s *Store) {
		ctx := context.Background()
		s.claimWait = 50 * time.Millisecond
		c := &Claims{s: s}
		left := func(at time.Time) {
			t.Helper()
			if _, err := s.claims.DeleteMany(ctx, bson.D{}); err != nil {
				t.Fatal(err)
			}
			if _, err := s.claims.InsertOne(ctx, claimDoc{ID: "left", Key: "k", At: at, Holder: &Holder{Name: "run/7", Attempt: 1}}); err != nil {
				t.Fatal(err)
			}
		}
		wrote := false
		write := func(context.Context) error { wrote = true; return nil }
		left(s.now().Add(-2 * supersededAfter))
		for _, h := range []Holder{{Name: "run/7", Attempt: 1}, {Name: "run/8", Attempt: 2}} {
			wantCode(t, c.ExclusiveAs(ctx, "k", h, write), ErrBusy)
		}
		wantCode(t, c.Exclusive(ctx, "k", write), ErrBusy)
		if wrote {
			t.Fatal("a writer that supersedes nobody wrote under another's claim")
		}
		if err := c.ExclusiveAs(ctx, "k", Holder{Name: "run/7", Attempt: 2}, write); err != nil || !wrote {
			t.Fatalf("the next attempt did not take its predecessor's claim over: %v", err)
		}
		// A claim the earlier attempt took a moment ago may be a write under way: waited for.
		left(s.now())
		wrote = false
		wantCode(t, c.ExclusiveAs(ctx, "k", Holder{Name: "run/7", Attempt: 2}, write), ErrBusy)
		if wrote {
			t.Fatal("a fresh claim of an earlier attempt was taken over")
		}
	})
}

// The claims an attempt known to be dead left are released at once: its retry writes
// without waiting; claims of other holders and attempts stay.
func TestReleasedClaimsOfADeadAttemptDoNotHoldItsRetry(t *testing.T) {
	forEachBackend(t, "", func(t *testing.T, s *Store) {
		ctx := context.Background()
		s.claimWait = 50 * time.Millisecond
		c := &Claims{s: s}
		for _, cl := range []claimDoc{
			{ID: "dead", Key: "k", At: s.now(), Holder: &Holder{Name: "run/7", Attempt: 1}},
			{ID: "alive", Key: "k2", At: s.now(), Holder: &Holder{Name: "run/7", Attempt: 2}},
			{ID: "other", Key: "k3", At: s.now(), Holder: &Holder{Name: "run/8", Attempt: 1}},
			{ID: "anonymous", Key: "k4", At: s.now()},
		} {
			if _, err := s.claims.InsertOne(ctx, cl); err != nil {
				t.Fatal(err)
			}
		}
		retry := Holder{Name: "run/7", Attempt: 2}
		wrote := false
		write := func(context.Context) error { wrote = true; return nil }
		wantCode(t, c.ExclusiveAs(ctx, "k", retry, write), ErrBusy) // fresh: a write under way
		if err := c.Release(ctx, Holder{Name: "run/7", Attempt: 1}); err != nil {
			t.Fatal(err)
		}
		if err := c.ExclusiveAs(ctx, "k", retry, write); err != nil || !wrote {
			t.Fatalf("the retry still waits for a released claim: %v", err)
		}
		var left []claimDoc
		cur, err := s.claims.Find(ctx, bson.D{}, options.Find().SetSort(bson.D{{Key: "_id", Value: 1}}))
		if err != nil {
			t.Fatal(err)
		}
		if err := cur.All(ctx, &left); err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, l := range left {
			ids = append(ids, l.ID)
		}
		if want := []string{"alive", "anonymous", "other"}; !slices.Equal(ids, want) {
			t.Fatalf("claims left %v, want %v", ids, want)
		}
	})
}
