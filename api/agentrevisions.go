package api

import (
	"context"
	"sync"

	"golang.org/x/sync/singleflight"

	"github.com/temco/temco/internal/core/appctx"
)

// revisionCache keeps what agents read of the revisions given to them: a revision's
// header and rendered apps do not change once it is published to agents (controllers
// edit before), and a fleet's agents ask for the same one at about the same moment. One
// store read serves them all (singleflight), and the next ones find it here. The store's
// reads per agent were most of its CPU in make bench-agents.
type revisionCache struct {
	mu      sync.Mutex
	entries map[string]revisionEntry
	order   []string // oldest first
	flight  singleflight.Group
}

type revisionEntry struct {
	header *appctx.Context
	apps   map[string]*appctx.App // shared: read, never changed
}

// revisionCacheSize bounds the revisions kept: those of the operations running now.
const revisionCacheSize = 16

// revision answers context ctxID's header and rendered apps.
func (s *Server) revision(ctx context.Context, ctxID string) (*appctx.Context, map[string]*appctx.App, error) {
	c := &s.revisions
	c.mu.Lock()
	e, ok := c.entries[ctxID]
	c.mu.Unlock()
	if ok {
		return e.header, e.apps, nil
	}
	v, err, _ := c.flight.Do(ctxID, func() (any, error) {
		ctx := context.WithoutCancel(ctx) // the read serves other callers than the first
		header, err := s.Contexts.Get(ctx, ctxID)
		if err != nil {
			return nil, err
		}
		apps, err := s.Contexts.Apps(ctx, header)
		if err != nil {
			return nil, err
		}
		e := revisionEntry{header: header, apps: apps}
		c.put(ctxID, e)
		return e, nil
	})
	if err != nil {
		return nil, nil, err
	}
	e = v.(revisionEntry)
	return e.header, e.apps, nil
}

func (c *revisionCache) put(ctxID string, e revisionEntry) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.entries == nil {
		c.entries = map[string]revisionEntry{}
	}
	if _, ok := c.entries[ctxID]; !ok {
		c.order = append(c.order, ctxID)
	}
	c.entries[ctxID] = e
	for len(c.order) > revisionCacheSize {
		delete(c.entries, c.order[0])
		c.order = c.order[1:]
	}
}
