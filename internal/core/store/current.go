package store

import (
	"context"
	"fmt"
	"slices"
	"sync"
)

// What a process reads of an epochKind again and again — a cluster's registration in
// every operation on it, the members of a logical cloud in every placement — it keeps,
// under the epoch of the documents' parent it read them under. Each caller still reads
// the epoch, after it asked (Flights: one read for the callers that ask at once), so it
// sees every change that ended before it asked, from any process, as with a read of the
// documents themselves; the documents are read again only when the epoch moved.

// maxCurrent bounds the documents and lists kept; past it, they start again.
var maxCurrent = 20000 // tests lower it

type current struct {
	mu      sync.Mutex
	docs    map[string]kept // by _id, or by parent and kind for lists
	large   map[string]bool // Prefetch listings too large to keep
	flights Flights         // of the epochs, by parent
}

type kept struct {
	epoch string
	docs  []*Doc
}

// epochOf reads the epoch of parent.
func (s *Store) epochOf(ctx context.Context, parent string) (string, error) {
	v, err := s.current.flights.Do(ctx, parent, func(ctx context.Context) (any, error) { return s.Epoch(ctx, parent) })
	e, _ := v.(string)
	return e, err
}

func (c *current) get(key, epoch string) ([]*Doc, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	k, ok := c.docs[key]
	return k.docs, ok && k.epoch == epoch
}

func (c *current) put(key, epoch string, docs []*Doc) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.docs == nil || len(c.docs) >= maxCurrent {
		c.docs = map[string]kept{}
	}
	c.docs[key] = kept{epoch, docs}
}

// GetCurrent is Get of a child of parent of an epochKind, kept while parent's epoch
// stands. The document returned is shared: callers must not change it.
func (s *Store) GetCurrent(ctx context.Context, id, parent string) (*Doc, error) {
	epoch, err := s.epochOf(ctx, parent)
	if err != nil {
		return nil, err
	}
	if docs, ok := s.current.get(id, epoch); ok {
		return docs[0], nil
	}
	d, err := s.Get(ctx, id)
	if err == nil {
		s.current.put(id, epoch, []*Doc{d})
	}
	return d, err
}

// ListCurrent is List of the documents of an epochKind below the document they are kept
// under (q has Kind and Parent, or Scope for cluster labels, and may have Name), kept
// while its epoch stands. The documents returned are shared: callers must not change them.
func (s *Store) ListCurrent(ctx context.Context, q Query) ([]*Doc, error) {
	var holder string
	if holderOf := epochKinds[q.Kind]; holderOf != nil {
		holder = holderOf(&Doc{Parent: q.Parent, Scope: q.Scope})
	}
	if holder == "" || (q.Parent != "" && q.Scope != "") || len(q.Fields) > 0 || q.IDs != nil || q.After != "" || q.Limit > 0 {
		return nil, fmt.Errorf("list %s below %q: only the documents of a kind that has epochs below their epoch's holder are kept", q.Kind, q.Parent+q.Scope)
	}
	epoch, err := s.epochOf(ctx, holder)
	if err != nil {
		return nil, err
	}
	key := fmt.Sprintf("%s\x00%s\x00%s\x00%s\x00%v", q.Parent, q.Scope, q.Kind, q.Name, q.Full)
	if docs, ok := s.current.get(key, epoch); ok {
		return slices.Clone(docs), nil
	}
	docs, err := s.List(ctx, q)
	if err == nil {
		s.current.put(key, epoch, docs)
	}
	return slices.Clone(docs), err
}

// PrefetchMin is how many of the ids given to Prefetch must be missing before it reads
// all their parent's children: below it, reading them one by one costs less.
const PrefetchMin = 50

// Prefetch keeps, when at least PrefetchMin of ids (children of parent, of kind, an
// epochKind) are not kept under parent's epoch, every child of parent of that kind, read
// in one find, as GetCurrent keeps them. Why: a worker's first operation on a provider's
// clusters read each registration by _id, a round trip and ~1 ms of FerretDB's CPU each
// (FerretDB 1.x serves an $in of _ids by scanning the collection); one find of the
// provider's registrations costs a fraction of that per document. When a group's
// clusters are a small part of a large provider, it reads more documents than it needs,
// once per epoch.
func (s *Store) Prefetch(ctx context.Context, parent, kind string, ids []string) error {
	epoch, err := s.epochOf(ctx, parent)
	if err != nil {
		return err
	}
	missing := 0
	for _, id := range ids {
		if _, ok := s.current.get(id, epoch); !ok {
			missing++
		}
	}
	key := "children\x00" + kind + "\x00" + parent + "\x00" + epoch
	if missing < PrefetchMin || s.current.tooMany(key, false) {
		return nil
	}
	_, err = s.current.flights.Do(ctx, key, func(ctx context.Context) (any, error) {
		docs, err := s.List(ctx, Query{Parent: parent, Kind: kind, Full: true})
		if len(docs) > maxCurrent/2 { // kept, they would push out everything else: read one by one
			s.current.tooMany(key, true)
			return nil, err
		}
		for _, d := range docs {
			s.current.put(d.ID, epoch, []*Doc{d})
		}
		return nil, err
	})
	return err
}

// tooMany reports whether a Prefetch's listing (key) found more children than are kept,
// recording it when mark is set.
func (c *current) tooMany(key string, mark bool) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if mark {
		if c.large == nil || len(c.large) >= maxIdleKeys {
			c.large = map[string]bool{}
		}
		c.large[key] = true
	}
	return c.large[key]
}
