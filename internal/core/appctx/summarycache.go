package appctx

import (
	"context"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

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
}

// SummaryOf is Summary for the context header h, answered from memory when h is settled
// and was when the counts were read (see summaryFresh).
func (s *Store) SummaryOf(ctx context.Context, h *Context, apps []string) (map[string]int, error) {
	if !settled[h.Status] {
		return s.Summary(ctx, h.ID, apps)
	}
	key := summaryKey{h.ID, strings.Join(slices.Sorted(slices.Values(apps)), "\x00")}
	c := &s.summaries
	c.mu.Lock()
	e, ok := c.entries[key]
	c.mu.Unlock()
	if ok && e.status == h.Status && e.updated.Equal(h.Updated) && time.Since(e.at) < summaryFresh {
		return maps.Clone(e.counts), nil
	}
	at := time.Now()
	bs, err := s.contextBatches(ctx, h.ID)
	if err != nil {
		return nil, err
	}
	counts, err := s.summary(ctx, h.ID, bs, apps)
	if err != nil || slices.ContainsFunc(bs, func(b batchDoc) bool { return b.Counts == nil }) {
		return counts, err // a batch counted live (a stopped one): not kept
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.entries == nil || len(c.entries) >= summaryEntries {
		c.entries = map[summaryKey]summaryEntry{} // crude, and enough: a dashboard's few contexts come back at once
	}
	c.entries[key] = summaryEntry{status: h.Status, updated: h.Updated, at: at, counts: maps.Clone(counts)}
	return counts, nil
}
