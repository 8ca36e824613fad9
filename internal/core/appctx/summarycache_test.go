package appctx

import (
	"context"
	"maps"
	"testing"
	"time"

	"github.com/temco/temco/internal/core/lifecycle"
)

// applyBatches runs place's three batches, every object Applied, and counts the first
// counted of them.
func applyBatches(t *testing.T, s *Store, counted int) {
	t.Helper()
	for b := range 3 {
		clusters, err := s.StartBatch(context.Background(), "ctx1", b)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range clusters {
			apply(t, s, c, lifecycle.ResApplied)
		}
		if b < counted {
			if err := s.CountBatch(context.Background(), "ctx1", b); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// A settled context whose batches were all counted answers its summary from memory until
// its header changes; a running one, or one with a batch counted live, reads the store.
func TestSummaryOfASettledContextIsKeptUntilItsHeaderChanges(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	place(t, s)
	summary := func(h *Context, want map[string]int) {
		t.Helper()
		got, err := s.SummaryOf(ctx, h, nil)
		if err != nil {
			t.Fatal(err)
		}
		if !maps.Equal(got, want) {
			t.Errorf("summary under %s %s = %v, want %v", h.Status, h.Updated.Format(time.StampMilli), got, want)
		}
	}
	applyBatches(t, s, 2) // batch 2 left uncounted
	done := &Context{ID: "ctx1", Status: lifecycle.StatusInstantiated, Updated: time.Now().UTC()}
	applied := map[string]int{lifecycle.ResApplied: 24}
	summary(done, applied) // batch 2 counted live: not kept
	apply(t, s, "p+c5", lifecycle.ResFailed)
	summary(done, map[string]int{lifecycle.ResApplied: 20, lifecycle.ResFailed: 4})

	apply(t, s, "p+c5", lifecycle.ResApplied)
	if err := s.CountBatch(ctx, "ctx1", 2); err != nil {
		t.Fatal(err)
	}
	summary(done, applied) // every batch counted: kept
	apply(t, s, "p+c0", lifecycle.ResDeleted)
	summary(done, applied) // what no operation could have written is not seen

	if err := s.CountBatch(ctx, "ctx1", 0); err != nil {
		t.Fatal(err)
	}
	later := *done
	later.Updated = done.Updated.Add(time.Second) // the next operation's end
	summary(&later, map[string]int{lifecycle.ResApplied: 20, lifecycle.ResDeleted: 4})

	if _, err := s.StartBatch(ctx, "ctx1", 1); err != nil {
		t.Fatal(err)
	}
	apply(t, s, "p+c2", lifecycle.ResDeleted)
	running := &Context{ID: "ctx1", Status: lifecycle.StatusTerminating, Updated: later.Updated.Add(time.Second)}
	summary(running, map[string]int{lifecycle.ResApplied: 16, lifecycle.ResDeleted: 8})
}

// A kept summary past summaryFresh is still answered at once while one background read
// refreshes it; past summaryStale the caller reads it itself.
func TestAnAgedSummaryIsAnsweredWhileItIsReadAgain(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	place(t, s)
	applyBatches(t, s, 3)
	h := &Context{ID: "ctx1", Status: lifecycle.StatusInstantiated, Updated: time.Now().UTC()}
	summary := func() map[string]int {
		t.Helper()
		got, err := s.SummaryOf(ctx, h, nil)
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	applied := map[string]int{lifecycle.ResApplied: 24}
	if got := summary(); !maps.Equal(got, applied) {
		t.Fatalf("summary %v, want %v", got, applied)
	}
	// A change only a read of the batches shows (a later revision's prune).
	apply(t, s, "p+c0", lifecycle.ResDeleted)
	if err := s.CountBatch(ctx, "ctx1", 0); err != nil {
		t.Fatal(err)
	}
	pruned := map[string]int{lifecycle.ResApplied: 20, lifecycle.ResDeleted: 4}
	age := func(by time.Duration) {
		c := &s.summaries
		c.mu.Lock()
		defer c.mu.Unlock()
		for k, e := range c.entries {
			e.at = time.Now().Add(-by)
			c.entries[k] = e
		}
	}
	age(summaryFresh)
	if got := summary(); !maps.Equal(got, applied) {
		t.Errorf("an aged summary: %v, want the kept %v answered at once", got, applied)
	}
	deadline := time.Now().Add(30 * time.Second)
	for got := summary(); !maps.Equal(got, pruned); got = summary() {
		if time.Now().After(deadline) {
			t.Fatalf("summary %v, never refreshed to %v", got, pruned)
		}
		time.Sleep(10 * time.Millisecond)
	}
	apply(t, s, "p+c0", lifecycle.ResApplied)
	if err := s.CountBatch(ctx, "ctx1", 0); err != nil {
		t.Fatal(err)
	}
	age(summaryStale)
	if got := summary(); !maps.Equal(got, applied) {
		t.Errorf("a stale summary: %v, want %v read at once", got, applied)
	}
}
