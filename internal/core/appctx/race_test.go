package appctx

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/temco/temco/internal/core/lifecycle"
	"github.com/temco/temco/internal/dev/testenv"
)

// raceRounds is how many pairs of writers each race runs (BENCHMARKS.md counted 39 of
// 40 pairs lost on FerretDB before its writes were claimed).
const raceRounds = 40

// racePair is one round of two writers of one context document: both run at once, then
// lost says what of their writes the document no longer holds ("" if nothing).
type racePair struct {
	writers func(t *testing.T, round int) (a, b func() error)
	lost    func(t *testing.T, round int) string
}

// Two writers of one context document, released together, both keep their writes: the
// document ends as if they had written one after the other, whatever the server.
func TestConcurrentWritersOfOneContextDocumentLoseNothing(t *testing.T) {
	cases := map[string]func(t *testing.T, s *Store) racePair{
		"an apply's statuses and a live read of one cluster": applyAndLiveRead,
		"an operation's hooks and its status in the header":  hooksAndStatus,
		"an edit layer's attempt and its retry":              layerAttempts,
		"a cluster activity's attempt and its retry":         clusterAttempts,
	}
	for _, name := range slices.Sorted(maps.Keys(cases)) {
		for _, b := range backends {
			t.Run(name+"/"+b.Name, func(t *testing.T) {
				pair := cases[name](t, newStoreOn(t, b))
				lost := 0
				for round := range raceRounds {
					first, second := pair.writers(t, round)
					what := ""
					for i, err := range testenv.Race(first, second) {
						if err != nil {
							what = fmt.Sprintf("writer %d's write: %v", i, err)
						}
					}
					if what == "" {
						what = pair.lost(t, round)
					}
					if what != "" {
						lost++
						t.Logf("round %d lost %s", round, what)
					}
				}
				if lost > 0 {
					t.Errorf("%d of %d pairs lost a write", lost, raceRounds)
				}
			})
		}
	}
}

// applyAndLiveRead: a cluster activity saves the statuses it applied while a status
// query (status=ready, a rollout's gate) saves what it read from the same cluster.
func applyAndLiveRead(t *testing.T, s *Store) racePair {
	ctx := context.Background()
	place(t, s)
	at := func(round int) time.Time { return time.Date(2026, 1, 1, 0, 0, round, 0, time.UTC) }
	return racePair{
		writers: func(t *testing.T, round int) (func() error, func() error) {
			applied, err := s.PlacedApps(ctx, "ctx1", "p+c0") // as an apply's begin reads them
			if err != nil {
				t.Fatal(err)
			}
			for _, ca := range applied {
				for i := range ca.Resources {
					ca.Resources[i].Status, ca.Resources[i].Error = lifecycle.ResApplied, fmt.Sprint("round ", round)
				}
			}
			read, err := s.ClusterApps(ctx, "ctx1", "p+c0")
			if err != nil {
				t.Fatal(err)
			}
			for _, ca := range read {
				ca.Live, ca.LiveAt = []Live{{State: LivePresent, Ready: true}, {State: LiveNotPresent}}, at(round)
			}
			by := Attempt{Activity: "run/apply p+c0", Number: 1}
			return func() error { return s.SaveStatuses(ctx, "ctx1", by, applied) },
				func() error { return s.SaveLive(ctx, "ctx1", "p+c0", read) }
		},
		lost: func(t *testing.T, round int) string {
			got, err := s.ClusterApps(ctx, "ctx1", "p+c0")
			if err != nil {
				t.Fatal(err)
			}
			for _, ca := range got {
				switch {
				case ca.Resources[0].Error != fmt.Sprint("round ", round):
					return fmt.Sprintf("the apply's statuses (app %s: %+v)", ca.App, ca.Resources[0])
				case !ca.LiveAt.Equal(at(round)) || len(ca.Live) != 2:
					return fmt.Sprintf("the live read (app %s read at %v)", ca.App, ca.LiveAt)
				}
			}
			return ""
		},
	}
}

// hooksAndStatus: an operation's finish records the hooks it ran and its status (a
// local attempt that timed out and its retry, or terminate's begin beside it).
func hooksAndStatus(t *testing.T, s *Store) racePair {
	ctx := context.Background()
	if err := s.Create(ctx, &Context{ID: "ctx1", Status: lifecycle.StatusInstantiating}); err != nil {
		t.Fatal(err)
	}
	hook := func(round int) string { return fmt.Sprint("hook of round ", round) }
	status := func(round int) string { return fmt.Sprint("status of round ", round) }
	return racePair{
		writers: func(t *testing.T, round int) (func() error, func() error) {
			return func() error { return s.SetHooks(ctx, "ctx1", []lifecycle.HookRun{{Name: hook(round)}}) },
				func() error { return s.SetStatus(ctx, "ctx1", status(round), "") }
		},
		lost: func(t *testing.T, round int) string {
			c, err := s.Get(ctx, "ctx1")
			if err != nil {
				t.Fatal(err)
			}
			switch {
			case len(c.Hooks) != 1 || c.Hooks[0].Name != hook(round):
				return fmt.Sprintf("the hooks (%+v)", c.Hooks)
			case c.Status != status(round):
				return fmt.Sprintf("the status (%q)", c.Status)
			}
			return ""
		},
	}
}

// layerAttempts: a controller step's activity timed out and was retried while its first
// attempt still ran; both record their edits. The retry's stay, the first attempt's may
// be refused.
func layerAttempts(t *testing.T, s *Store) racePair {
	ctx := context.Background()
	layer := func(attempt int32) *Layer {
		return &Layer{Context: "ctx1", Step: 0, Attempt: attempt, Controller: fmt.Sprint("attempt ", attempt)}
	}
	return racePair{
		writers: func(t *testing.T, round int) (func() error, func() error) {
			first, retry := int32(2*round+1), int32(2*round+2)
			return func() error {
					if err := s.PutLayer(ctx, layer(first)); !errors.Is(err, ErrStaleAttempt) {
						return err
					}
					return nil
				},
				func() error { return s.PutLayer(ctx, layer(retry)) }
		},
		lost: func(t *testing.T, round int) string {
			ls, err := s.Layers(ctx, "ctx1", -1)
			if err != nil {
				t.Fatal(err)
			}
			if len(ls) != 1 || ls[0].Attempt != int32(2*round+2) {
				return fmt.Sprintf("the retry's layer (stored: attempt %d)", ls[0].Attempt)
			}
			return ""
		},
	}
}

// clusterAttempts: a cluster activity timed out and was retried while its first attempt
// still ran; both save the cluster's statuses. The retry's stay, the first attempt's may be
// refused.
func clusterAttempts(t *testing.T, s *Store) racePair {
	ctx := context.Background()
	place(t, s)
	save := func(t *testing.T, attempt int32) func() error {
		cas, err := s.PlacedApps(ctx, "ctx1", "p+c0")
		if err != nil {
			t.Fatal(err)
		}
		for _, ca := range cas {
			for i := range ca.Resources {
				ca.Resources[i].Status, ca.Resources[i].Attempts = lifecycle.ResRetrying, attempt
			}
		}
		return func() error {
			return s.SaveStatuses(ctx, "ctx1", Attempt{Activity: "run/apply p+c0", Number: attempt}, cas)
		}
	}
	return racePair{
		writers: func(t *testing.T, round int) (func() error, func() error) {
			first := save(t, int32(2*round+1))
			return func() error {
				if err := first(); !errors.Is(err, ErrSuperseded) {
					return err
				}
				return nil
			}, save(t, int32(2*round+2))
		},
		lost: func(t *testing.T, round int) string {
			got, err := s.ClusterApps(ctx, "ctx1", "p+c0")
			if err != nil {
				t.Fatal(err)
			}
			if n := got[0].Resources[0].Attempts; n != int32(2*round+2) {
				return fmt.Sprintf("the retry's statuses (stored: attempt %d's)", n)
			}
			return ""
		},
	}
}
