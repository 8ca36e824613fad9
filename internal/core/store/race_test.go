package store

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/temco/temco/internal/dev/testenv"
)

// rounds and writers of the race tests: the issue that made conditional writes atomic
// asked for at least 200 rounds of at least 8 writers (make test); make unit runs fewer.
const raceWriters = 8

func raceRounds() int {
	if testing.Short() {
		return 20
	}
	return 200
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
			for round := range raceRounds() {
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
				errs := testenv.Race(fns...)
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
		for round := range raceRounds() {
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
			for i, err := range testenv.Race(fns...) {
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
// deleted resource itself: every answer fits a serial order. An accepted delete came
// first for every writer that needs the resource (they fail as missing) and left nothing
// referring to it; a refused delete came after a writer that uses it, removed nothing,
// and delayed no other writer's success.
func TestDeleteRacingReferrersEndsAsSomeSerialOrder(t *testing.T) {
	forEachBackend(t, "", func(t *testing.T, s *Store) {
		ctx := context.Background()
		for _, id := range []string{"/p", "/p/holder1", "/p/holder2"} {
			if err := s.Create(ctx, doc(id, parentOf(id))); err != nil {
				t.Fatal(err)
			}
		}
		for round := range raceRounds() {
			target := fmt.Sprintf("/p/t%d", round)
			if err := s.Create(ctx, doc(target, "/p")); err != nil {
				t.Fatal(err)
			}
			var users []*Doc // holders gaining a reference to target
			for i := range 2 {
				h, err := s.Get(ctx, fmt.Sprintf("/p/holder%d", i+1))
				if err != nil {
					t.Fatal(err)
				}
				h.Refs = []string{target}
				users = append(users, h)
			}
			own, err := s.Get(ctx, target)
			if err != nil {
				t.Fatal(err)
			}
			own.Body = `{"updated":true}`
			created := []*Doc{doc(target+"-user1", "/p", target), doc(target+"-user2", "/p", target), doc(target+"/child", target)}
			fns := []func() error{func() error { return s.Delete(ctx, target) }, func() error { return s.Update(ctx, own) }}
			for _, u := range users {
				fns = append(fns, func() error { return s.Update(ctx, u) })
			}
			for _, c := range created {
				fns = append(fns, func() error { return s.Create(ctx, c) })
			}
			errs := testenv.Race(fns...)
			deleteErr, ownErr, userErrs := errs[0], errs[1], errs[2:]
			exists, err := s.Exists(ctx, target)
			if err != nil {
				t.Fatal(err)
			}
			if exists == (deleteErr == nil) {
				t.Fatalf("round %d: delete answered %v and the target exists: %v", round, deleteErr, exists)
			}
			someUse := false
			for i, err := range userErrs {
				switch {
				case err == nil:
					someUse = true
				case deleteErr == nil && slices.Contains([]Code{ErrRefMissing, ErrParentMissing}, CodeOf(err)):
				default:
					t.Fatalf("round %d: writer %d using the target answered %v; the delete answered %v", round, i, err, deleteErr)
				}
			}
			switch {
			case deleteErr == nil && someUse:
				t.Fatalf("round %d: the target was deleted and a writer that uses it succeeded: %v", round, userErrs)
			case deleteErr != nil && !someUse:
				t.Fatalf("round %d: delete refused (%v) though nothing uses the target", round, deleteErr)
			case deleteErr != nil && !slices.Contains([]Code{ErrReferenced, ErrHasChildren}, CodeOf(deleteErr)):
				t.Fatalf("round %d: delete refused with %v, want referenced or has children", round, deleteErr)
			case ownErr != nil && (deleteErr != nil || CodeOf(ownErr) != ErrNotFound):
				t.Fatalf("round %d: update of the target answered %v; the delete answered %v", round, ownErr, deleteErr)
			}
			// What the store holds agrees with the answers.
			for i, u := range users {
				got, err := s.Get(ctx, u.ID)
				if err != nil {
					t.Fatal(err)
				}
				if has := slices.Contains(got.Refs, target); has != (userErrs[i] == nil) {
					t.Fatalf("round %d: update of %s answered %v, stored refs %v", round, u.ID, userErrs[i], got.Refs)
				}
				got.Refs = nil // drop the reference for the clean-up below
				if err := s.Update(ctx, got); err != nil {
					t.Fatal(err)
				}
			}
			for i, c := range created {
				ok, err := s.Exists(ctx, c.ID)
				if err != nil {
					t.Fatal(err)
				}
				if ok != (userErrs[len(users)+i] == nil) {
					t.Fatalf("round %d: create of %s answered %v, exists %v", round, c.ID, userErrs[len(users)+i], ok)
				}
				if ok {
					if err := s.Delete(ctx, c.ID); err != nil {
						t.Fatal(err)
					}
				}
			}
			if exists {
				got, err := s.Get(ctx, target)
				if err != nil {
					t.Fatal(err)
				}
				if updated := got.Body == own.Body; updated != (ownErr == nil) {
					t.Fatalf("round %d: update of the target answered %v, stored body %s", round, ownErr, got.Body)
				}
				// Keep the collection small: FerretDB on SQLite scans it for each lookup by field.
				if err := s.Delete(ctx, target); err != nil {
					t.Fatalf("round %d: the target is left unused but cannot be deleted: %v", round, err)
				}
			}
		}
	})
}

// A delete allowed only in one state racing a change of that state: one of them wins.
func TestDeleteIfRacingAStateChangeHasOneWinner(t *testing.T) {
	errWrongState := errors.New("wrong state")
	forEachBackend(t, "", func(t *testing.T, s *Store) {
		ctx := context.Background()
		for round := range raceRounds() {
			id := fmt.Sprintf("/d%d", round)
			d := doc(id, "")
			d.State = "Created"
			if err := s.Create(ctx, d); err != nil {
				t.Fatal(err)
			}
			d.State = "Instantiating"
			errs := testenv.Race(
				func() error {
					return s.DeleteIf(ctx, id, func(_ context.Context, cur *Doc) error {
						if cur.State != "Created" {
							return errWrongState
						}
						return nil
					})
				},
				func() error { return s.SetState(ctx, d) },
			)
			deleted, changed := errs[0] == nil, errs[1] == nil
			switch {
			case deleted && !changed && CodeOf(errs[1]) == ErrConflict:
			case changed && !deleted && errors.Is(errs[0], errWrongState):
			default:
				t.Fatalf("round %d: delete answered %v, the state change %v", round, errs[0], errs[1])
			}
			if ok, err := s.Exists(ctx, id); err != nil || ok == deleted {
				t.Fatalf("round %d: delete answered %v and the document exists: %v (%v)", round, errs[0], ok, err)
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
