package appctx

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"

	"github.com/temco/temco/internal/core/lifecycle"
)

// A context's status counts change only while an operation's batch workflows run over
// its clusters. Once the operation has ended (its header's status settled, written at its
// end), the counts of a context whose every batch was counted are final, and SummaryOf
// answers them from memory: a dashboard polled by many callers over 10,000 clusters
// reads the header only, not 200 batch documents per request. An entry is used only
// while the header's status and update time are those it was computed under, and for
// summaryFresh at most: the one change it cannot see (a later revision's update pruning
// this context's clusters, which leaves this header alone until the update ends) shows
// within that time.
const summaryFresh = 2 * time.Second

// summaryEntries bounds the contexts whose summary is kept.
const summaryEntries = 1024

// settled are the statuses no operation is running under.
var settled = map[string]bool{
	lifecycle.StatusInstantiated: true, lifecycle.StatusInstantiateFailed: true, lifecycle.StatusInstantiateStopped: true,
	lifecycle.StatusTerminated: true, lifecycle.StatusTerminateFailed: true, lifecycle.StatusTerminateStopped: true,
	lifecycle.StatusUpdated: true, lifecycle.StatusUpdateFailed: true, lifecycle.StatusUpdateStopped: true,
}

type summaryKey struct{ ctxID, apps string }

type summaryEntry struct {
	status  string
	updated time.Time
	at      time.Time
	counts  map[string]int
}

// summaryCache holds settled contexts' summaries.
type summaryCache struct {
	mu      sync.Mutex
	entries map[summaryKey]summaryEntry
	reads   singleflight.Group
}

// summaryStale is how old a kept summary may be served while it is read again in the
// background: past it (the background reads failing), callers read it themselves.
const summaryStale = 30 * time.Second

// SummaryOf is Summary for the context header h, answered from memory when h is settled
// and was when the counts were read (see summaryFresh). A kept summary older than
// summaryFresh is still answered, while one background read per context refreshes it:
// many callers polling one dashboard at 10,000 clusters would otherwise all read the
// batches each time the entry expires, and wait behind each other.
func (s *Store) SummaryOf(ctx context.Context, h *Context, apps []string) (map[string]int, error) {
	if !settled[h.Status] {
		return s.Summary(ctx, h.ID, apps)
	}
	key := summaryKey{h.ID, strings.Join(slices.Sorted(slices.Values(apps)), "\x00")}
	c := &s.summaries
	c.mu.Lock()
	e, ok := c.entries[key]
	c.mu.Unlock()
	if ok && e.status == h.Status && e.updated.Equal(h.Updated) {
		switch age := time.Since(e.at); {
		case age < summaryFresh:
			return maps.Clone(e.counts), nil
		case age < summaryStale:
			go func() { // detached from the caller, which has its answer
				rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), summaryStale)
				defer cancel()
				_, _ = s.readSummary(rctx, key, h, apps)
			}()
			return maps.Clone(e.counts), nil
		}
	}
	return s.readSummary(ctx, key, h, apps)
}

// readSummary reads a settled context's summary from the store and keeps it; callers
// asking for the same one at once share one read.
func (s *Store) readSummary(ctx context.Context, key summaryKey, h *Context, apps []string) (map[string]int, error) {
	flight := fmt.Sprint(key.ctxID, "\x01", key.apps, "\x01", h.Status, "\x01", h.Updated.UnixNano())
	v, err, _ := s.summaries.reads.Do(flight, func() (any, error) {
		at := time.Now()
		bs, err := s.contextBatches(ctx, h.ID)
		if err != nil {
			return nil, err
		}
		counts, err := s.summary(ctx, h.ID, bs, apps)
		if err != nil || slices.ContainsFunc(bs, func(b batchDoc) bool { return b.Counts == nil }) {
			return counts, err // a batch counted live (a stopped one): not kept
		}
		c := &s.summaries
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.entries == nil || len(c.entries) >= summaryEntries {
			c.entries = map[summaryKey]summaryEntry{} // crude, and enough: a dashboard's few contexts come back at once
		}
		c.entries[key] = summaryEntry{status: h.Status, updated: h.Updated, at: at, counts: counts}
		return counts, nil
	})
	if err != nil {
		return nil, err
	}
	return maps.Clone(v.(map[string]int)), nil
}
