package store

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
)

// rounds and writers of the race tests: the issue that made conditional writes atomic
// asked for at least 200 rounds of at least 8 writers.
const (
	raceRounds  = 200
	raceWriters = 8
)

// race runs fns at once, released together, and returns their errors in order.
func race(fns ...func() error) []error {
	errs := make([]error, len(fns))
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i, fn := range fns {
		wg.Go(func() {
			<-start
			errs[i] = fn()
		})
	}
	close(start)
	wg.Wait()
	return errs
}

// Conditional writes of one document at one revision: exactly one wins, every other
// gets ErrConflict, and the document holds the winner's write at the next revision.
func TestConditionalWritesHaveOneWinner(t *testing.T) {
	writers := map[string]func(s *Store, d *Doc, i int) error{
		"Update": func(s *Store, d *Doc, i int) error {
			d.Body = fmt.Sprintf(`{"writer":%d}`, i)
			return s.Update(context.Background(), d)
		},
		"SetState": func(s *Store, d *Doc, i int) error {
			d.State = fmt.Sprint("writer ", i)
			return s.SetState(context.Background(), d)
		},
	}
	writers["Update and SetState"] = func(s *Store, d *Doc, i int) error {
		if i%2 == 0 {
			return writers["Update"](s, d, i)
		}
		return writers["SetState"](s, d, i)
	}
	for _, name := range []string{"Update", "SetState", "Update and SetState"} {
		write := writers[name]
		forEachBackend(t, name, func(t *testing.T, s *Store) {
			ctx := context.Background()
			if err := s.Create(ctx, doc("/p", "")); err != nil {
				t.Fatal(err)
			}
			for round := range raceRounds {
				base, err := s.Get(ctx, "/p")
				if err != nil {
					t.Fatal(err)
				}
				copies := make([]*Doc, raceWriters)
				fns := make([]func() error, raceWriters)
				for i := range fns {
					c := *base
					copies[i] = &c
					fns[i] = func() error { return write(s, copies[i], i) }
				}
				errs := race(fns...)
				winner := -1
				for i, err := range errs {
					switch {
					case err == nil && winner >= 0:
						t.Fatalf("round %d: writers %d and %d both won at revision %d", round, winner, i, base.Rev)
					case err == nil:
						winner = i
					case CodeOf(err) != ErrConflict:
						t.Fatalf("round %d: writer %d: %v, want a conflict", round, i, err)
					}
				}
				if winner < 0 {
					t.Fatalf("round %d: no writer won at revision %d", round, base.Rev)
				}
				got, err := s.Get(ctx, "/p")
				if err != nil {
					t.Fatal(err)
				}
				w := copies[winner]
				if got.Rev != base.Rev+1 || got.Body != w.Body || got.State != w.State {
					t.Fatalf("round %d: stored rev %d body %s state %q; the winner wrote rev %d body %s state %q",
						round, got.Rev, got.Body, got.State, base.Rev+1, w.Body, w.State)
				}
			}
		})
	}
}

// Concurrent creates of one path: exactly one is created, the others are told it exists.
func TestConcurrentCreatesHaveOneWinner(t *testing.T) {
	forEachBackend(t, "", func(t *testing.T, s *Store) {
		ctx := context.Background()
		for round := range raceRounds {
			id := fmt.Sprintf("/p%d", round)
			fns := make([]func() error, raceWriters)
			for i := range fns {
				fns[i] = func() error {
					d := doc(id, "")
					d.Body = fmt.Sprintf(`{"writer":%d}`, i)
					return s.Create(ctx, d)
				}
			}
			winner := -1
			for i, err := range race(fns...) {
				switch {
				case err == nil && winner >= 0:
					t.Fatalf("round %d: creators %d and %d both created %s", round, winner, i, id)
				case err == nil:
					winner = i
				case CodeOf(err) != ErrExists:
					t.Fatalf("round %d: creator %d: %v, want exists", round, i, err)
				}
			}
			got, err := s.Get(ctx, id)
			if err != nil || winner < 0 || got.Body != fmt.Sprintf(`{"writer":%d}`, winner) {
				t.Fatalf("round %d: winner %d, stored %+v (%v)", round, winner, got, err)
			}
		}
	})
}

// A delete racing creates and updates that add references to it, and an update of the
// deleted resource itself: a delete that was accepted removed the resource and left
// nothing referring to it; a refused delete removed nothing; every accepted write holds.
func TestDeleteRacingReferrersLeavesNoDanglingReference(t *testing.T) {
	forEachBackend(t, "", func(t *testing.T, s *Store) {
		ctx := context.Background()
		for _, id := range []string{"/p", "/p/holder1", "/p/holder2"} {
			if err := s.Create(ctx, doc(id, parentOf(id))); err != nil {
				t.Fatal(err)
			}
		}
		for round := range raceRounds {
			target := fmt.Sprintf("/p/t%d", round)
			if err := s.Create(ctx, doc(target, "/p")); err != nil {
				t.Fatal(err)
			}
			holders := make([]*Doc, 2)
			for i := range holders {
				h, err := s.Get(ctx, fmt.Sprintf("/p/holder%d", i+1))
				if err != nil {
					t.Fatal(err)
				}
				h.Refs = []string{target}
				holders[i] = h
			}
			own, err := s.Get(ctx, target)
			if err != nil {
				t.Fatal(err)
			}
			own.Body = `{"updated":true}`
			created := []string{target + "-user1", target + "-user2", target + "-user3", target + "/child"}
			fns := []func() error{
				func() error { return s.Delete(ctx, target) },
				func() error { return s.Update(ctx, holders[0]) },
				func() error { return s.Update(ctx, holders[1]) },
				func() error { return s.Update(ctx, own) },
			}
			for _, id := range created {
				if parentOf(id) == target {
					fns = append(fns, func() error { return s.Create(ctx, doc(id, target)) })
				} else {
					fns = append(fns, func() error { return s.Create(ctx, doc(id, "/p", target)) })
				}
			}
			errs := race(fns...)
			deleted := errs[0] == nil
			if !deleted && !slices.Contains([]Code{ErrReferenced, ErrHasChildren, ErrBusy, ErrConflict}, CodeOf(errs[0])) {
				t.Fatalf("round %d: delete: %v", round, errs[0])
			}
			exists, err := s.Exists(ctx, target)
			if err != nil {
				t.Fatal(err)
			}
			if exists == deleted {
				t.Fatalf("round %d: delete answered %v but the target exists: %v", round, errs[0], exists)
			}
			if deleted {
				for _, k := range []string{"k"} {
					users, err := s.Referrers(ctx, target, k)
					if err != nil {
						t.Fatal(err)
					}
					if len(users) > 0 {
						t.Fatalf("round %d: %s was deleted but %s still refers to it", round, target, users[0].ID)
					}
				}
				if kids, _ := s.List(ctx, Query{Parent: target, Kind: "k"}); len(kids) > 0 {
					t.Fatalf("round %d: %s was deleted but its child %s lives", round, target, kids[0].ID)
				}
			}
			for i, h := range holders {
				got, err := s.Get(ctx, h.ID)
				if err != nil {
					t.Fatal(err)
				}
				if has := slices.Contains(got.Refs, target); has != (errs[1+i] == nil) {
					t.Fatalf("round %d: update of %s answered %v, stored refs %v", round, h.ID, errs[1+i], got.Refs)
				}
				// Drop the reference again for the next round.
				got.Refs = nil
				if err := s.Update(ctx, got); err != nil {
					t.Fatal(err)
				}
			}
			if exists {
				got, err := s.Get(ctx, target)
				if err != nil {
					t.Fatal(err)
				}
				if updated := got.Body == own.Body; updated != (errs[3] == nil) {
					t.Fatalf("round %d: update of the target answered %v, stored body %s", round, errs[3], got.Body)
				}
			}
			for i, id := range created {
				ok, err := s.Exists(ctx, id)
				if err != nil {
					t.Fatal(err)
				}
				if ok != (errs[4+i] == nil) {
					t.Fatalf("round %d: create of %s answered %v, exists %v", round, id, errs[4+i], ok)
				}
				if ok {
					if err := s.Delete(ctx, id); err != nil {
						t.Fatal(err)
					}
				}
			}
			// Keep the collection small: FerretDB on SQLite scans it for each lookup by field.
			if exists {
				if err := s.Delete(ctx, target); err != nil {
					t.Fatalf("round %d: the target is left unused but cannot be deleted: %v", round, err)
				}
			}
		}
	})
}

// parentOf is the _id above id ("" at the top).
func parentOf(id string) string {
	i := len(id) - 1
	for i > 0 && id[i] != '/' {
		i--
	}
	return id[:i]
}
