// Placements kept per batch: one document holds every cluster of a batch (its group).

package appctx

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"golang.org/x/sync/errgroup"

	"github.com/temco/temco/internal/core/store"
)

// Why groups (docs/architecture.md, "The store's unit is the group"): a MongoDB-wire
// server's cost is per command and per document, FerretDB's about a millisecond of CPU
// each, so a cluster with a document of its own cost five or six of them in every
// operation, more than its API server's work. A context placed since groups keeps the
// placements, statuses and live reads of a batch's clusters (ClustersPerBatch, 100) in one
// document (groupDoc): the clusters of a batch are worked on together, so their reads are
// one read (readGroup) and their writes one write (groupWriter), and temco's documents and
// round trips grow with batches, not clusters. Contexts placed before keep a document per
// cluster (clusterDoc in ctxclusters) and are read and written as they were; a context's
// batch documents say which it is (batchDoc.Grouped).

// groupDoc holds the clusters of one batch of a context, sorted by cluster.
type groupDoc struct {
	ID      string `bson:"_id"` // <ctx>/batch/<n>, as its batchDoc's
	Context string `bson:"ctx"`
	Batch   int    `bson:"batch"`
	// Clusters are the BSON of each clusterDoc (without _id and ctx), as binary values:
	// the server keeps them as they are, never looking inside (FerretDB spends ten times
	// the CPU on a group whose clusters it must parse as documents; BENCHMARKS.md). Stored
	// so by groups written before 2026-12-06; since then stored in Packed (packed.go) and
	// Clusters holds them only in memory.
	Clusters [][]byte `bson:"clusters,omitempty"`
	Packed   []byte   `bson:"packed,omitempty"`
	// Ver is new at every write: a writer that knows the group as it last wrote it
	// writes again without reading it first, if it is still that version.
	Ver string `bson:"ver,omitempty"`
	// at is the index in Clusters of each cluster's entry, for a group as read and the
	// versions the writer made of it: each of its clusters asks for its own entry, and a
	// scan of every entry per question was quadratic in the group's size (5 % of the
	// worker's CPU in the rollouts).
	at map[string]int
}

// index fills g.at from its entries.
func (g *groupDoc) index() {
	g.at = make(map[string]int, len(g.Clusters))
	for i, e := range g.Clusters {
		g.at[clusterOf(e)] = i
	}
}

// find returns the index of cluster's entry in g.Clusters (-1: none).
func (g *groupDoc) find(cluster string) int {
	if g.at == nil {
		return slices.IndexFunc(g.Clusters, func(e []byte) bool { return clusterOf(e) == cluster })
	}
	if i, ok := g.at[cluster]; ok {
		return i
	}
	return -1
}

// newVer returns a version no write has used.
func newVer() string { return rand.Text() }

// maxGroupBytes bounds a group document as placement writes it: statuses and live reads
// make it grow afterwards, and MongoDB refuses documents over 16 MiB. A context whose
// group would be larger (apps with many objects edited per cluster) keeps a document per
// cluster.
const maxGroupBytes = 4 << 20

// layout is how a context's placements are stored: grouped, and each cluster's batch.
type layout struct {
	grouped bool
	batchOf map[string]int
}

// layouts caches the layouts of grouped contexts: a context's batches do not change once
// placed, but when placement is redone (PutPlacement, here or in another process), and a
// reader that misses a cluster reads them again (layoutOf's refresh).
type layouts struct {
	mu sync.Mutex
	m  map[string]*layout
}

// maxLayouts bounds the cache; past it the cache starts again.
const maxLayouts = 4096

func (l *layouts) get(ctxID string) *layout {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.m[ctxID]
}

func (l *layouts) put(ctxID string, lay *layout) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.m == nil || len(l.m) >= maxLayouts {
		l.m = map[string]*layout{}
	}
	if lay == nil {
		delete(l.m, ctxID)
		return
	}
	l.m[ctxID] = lay
}

// layoutOf returns how context ctxID's placements are stored, from its batch documents
// (cached when grouped; refresh reads them again).
func (s *Store) layoutOf(ctx context.Context, ctxID string, refresh bool) (*layout, error) {
	if l := s.layouts.get(ctxID); l != nil && !refresh {
		return l, nil
	}
	// The clusters of a group begin together: one read of the batches serves them.
	v, err := s.flights.Do(ctx, "layout:"+ctxID, func(ctx context.Context) (any, error) { return s.readLayout(ctx, ctxID) })
	l, _ := v.(*layout)
	return l, err
}

// readLayout reads a context's layout from its batch documents, and caches it if grouped.
func (s *Store) readLayout(ctx context.Context, ctxID string) (*layout, error) {
	cur, err := s.batches.Find(ctx, bson.D{{Key: "ctx", Value: ctxID}})
	if err != nil {
		return nil, err
	}
	var bs []batchDoc
	if err := cur.All(ctx, &bs); err != nil {
		return nil, err
	}
	l := &layout{batchOf: map[string]int{}}
	for _, b := range bs {
		l.grouped = l.grouped || b.Grouped
		for _, c := range b.Clusters {
			l.batchOf[c] = b.Batch
		}
	}
	if l.grouped {
		s.layouts.put(ctxID, l)
	}
	return l, nil
}

// groupsOf lays out docs, a context's clusterDocs with their Batch set, as its group
// documents; false when one would pass limit bytes (0: maxGroupBytes).
func groupsOf(ctxID string, docs []*clusterDoc, limit int) ([]any, bool, error) {
	if limit == 0 {
		limit = maxGroupBytes
	}
	byBatch := map[int]*groupDoc{}
	var order []int
	size := map[int]int{}
	slices.SortFunc(docs, func(a, b *clusterDoc) int { return strings.Compare(a.Cluster, b.Cluster) })
	for _, d := range docs {
		g := byBatch[d.Batch]
		if g == nil {
			g = &groupDoc{ID: batchID(ctxID, d.Batch), Context: ctxID, Batch: d.Batch, Ver: newVer()}
			byBatch[d.Batch] = g
			order = append(order, d.Batch)
		}
		raw, err := entryOf(d)
		if err != nil {
			return nil, false, err
		}
		if size[d.Batch] += len(raw); size[d.Batch] > limit {
			return nil, false, nil
		}
		g.Clusters = append(g.Clusters, raw)
	}
	out := make([]any, 0, len(order))
	for _, b := range order {
		out = append(out, byBatch[b].stored())
	}
	return out, true, nil
}

// entryOf is the stored form of a cluster in its group: its document without the _id
// and ctx the group gives.
func entryOf(d *clusterDoc) ([]byte, error) {
	e := *d
	e.ID, e.Context = "", ""
	return bson.Marshal(&e)
}

// clusterOf reads the cluster an entry is of.
func clusterOf(e []byte) string {
	c, _ := bson.Raw(e).Lookup("cluster").StringValueOK()
	return c
}

// entryDoc decodes an entry of context ctxID's group as the cluster's document, opened.
func (s *Store) entryDoc(ctxID string, e []byte) (*clusterDoc, error) {
	var d clusterDoc
	if err := bson.Unmarshal(e, &d); err != nil {
		return nil, err
	}
	d.ID, d.Context = clusterID(ctxID, d.Cluster), ctxID
	return &d, s.opened(ctxID, &d)
}

// groupedDocs reads the documents of the given clusters of a grouped context (all of
// them when clusters is nil), one read per group.
func (s *Store) groupedDocs(ctx context.Context, ctxID string, lay *layout, clusters []string) ([]*clusterDoc, error) {
	if clusters == nil {
		cur, err := s.placed.Find(ctx, bson.D{{Key: "ctx", Value: ctxID}})
		if err != nil {
			return nil, err
		}
		var gs []groupDoc
		if err := cur.All(ctx, &gs); err != nil {
			return nil, err
		}
		var out []*clusterDoc
		for _, g := range gs {
			if err := g.opened(); err != nil {
				return nil, err
			}
			for _, e := range g.Clusters {
				d, err := s.entryDoc(ctxID, e)
				if err != nil {
					return nil, err
				}
				out = append(out, d)
			}
		}
		return out, nil
	}
	want := map[int][]string{}
	for _, c := range slices.Compact(slices.Sorted(slices.Values(clusters))) {
		if b, ok := lay.batchOf[c]; ok {
			want[b] = append(want[b], c)
		}
	}
	found := make([][]*clusterDoc, 0, len(want))
	var mu sync.Mutex
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(8)
	for b, cs := range want {
		g.Go(func() error {
			group, err := s.readGroup(gctx, batchID(ctxID, b))
			if err != nil || group == nil {
				return err
			}
			var docs []*clusterDoc
			for _, c := range cs {
				i := group.find(c)
				if i < 0 {
					continue
				}
				d, err := s.entryDoc(ctxID, group.Clusters[i])
				if err != nil {
					return err
				}
				docs = append(docs, d)
			}
			mu.Lock()
			found = append(found, docs)
			mu.Unlock()
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	out := slices.Concat(found...)
	slices.SortFunc(out, func(a, b *clusterDoc) int { return strings.Compare(a.Cluster, b.Cluster) })
	return out, nil
}

// readGroup reads the entries of one group: one read for the callers that ask at once
// (the clusters of a group begin together), never one that began before a caller asked.
// The group comes indexed, and is shared: it is not to be changed.
func (s *Store) readGroup(ctx context.Context, id string) (*groupDoc, error) {
	v, err := s.flights.Do(ctx, id, func(ctx context.Context) (any, error) {
		g, err := s.fetchGroupDoc(ctx, id)
		if g != nil {
			g.index()
		}
		return g, err
	})
	g, _ := v.(*groupDoc)
	return g, err
}

func (s *Store) fetchGroupDoc(ctx context.Context, id string) (*groupDoc, error) {
	var g groupDoc
	err := store.FindOne(ctx, s.placed, bson.D{{Key: "_id", Value: id}}, &g)
	if errors.Is(err, mongo.ErrNoDocuments) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return &g, g.opened()
}

// change is one cluster's write to its group: its apps (nil: unchanged), its live reads
// (when setLive), as attempt by of a cluster activity.
type change struct {
	cluster string
	apps    []*ClusterApp // stored form (sealed)
	setLive bool
	live    []appLive
	// liveFor: a live read's, applied only while the entry's apps are still these.
	liveFor []string
	by      Attempt
	err     error
	done    chan struct{}
}

// groupWriter writes the changes to a group together: a change that comes while a write
// of its group is under way goes into the next, and writes of one group are spaced by
// about four times their own duration (40-250 ms) after a burst of groupBurst, so that
// the store spends at most a fifth of its time on one group however many of its clusters
// save at once, while the few clusters of a small group save without waiting.
type groupWriter struct {
	mu     sync.Mutex
	queues map[string]*groupQueue
	// known is each group as this process last wrote it (only its leader uses it).
	known map[string]*groupDoc
}

// maxKnown bounds groupWriter.known; past it, it starts again.
const maxKnown = 256

type groupQueue struct {
	pending []*change
	wake    chan struct{} // a change was queued
	spacing
}

// spacing spaces a group's writes: a leaky bucket whose level, due, is when the writes so
// far will have used up their time and spacing (each write adds what it took and its
// gap). A write waits until due is at most groupBurst-1 gaps away: past a burst, a write
// starts a gap after the one before ended.
type spacing struct {
	due  time.Time
	took time.Duration // how long the last write took
}

// gap is the spacing of the group's writes.
func (p *spacing) gap() time.Duration { return min(max(4*p.took, minGroupGap), maxGroupGap) }

// wait is how long a write at now waits.
func (p *spacing) wait(now time.Time) time.Duration {
	return p.due.Add(-(groupBurst - 1) * p.gap()).Sub(now)
}

// wrote records a write from start to end: it costs its own time and its gap.
func (p *spacing) wrote(start, end time.Time) {
	p.took = end.Sub(start)
	if start.After(p.due) {
		p.due = start
	}
	p.due = p.due.Add(p.took + p.gap())
}

// minGroupGap and maxGroupGap bound the spacing of a group's writes: a packed group is
// written in a few milliseconds, and each write costs the store about as much whatever it
// carries, so writes a few milliseconds apart would cost it more than the clusters' own.
// groupBurst writes go at once before the spacing holds.
const (
	minGroupGap = 40 * time.Millisecond
	maxGroupGap = 250 * time.Millisecond
	groupBurst  = 3
)

// writeGroup queues c for group id and waits until it is written.
func (s *Store) writeGroup(id string, c *change) error {
	w := &s.writer
	c.done = make(chan struct{})
	w.mu.Lock()
	if w.queues == nil {
		w.queues = map[string]*groupQueue{}
	}
	q := w.queues[id]
	if q == nil {
		q = &groupQueue{wake: make(chan struct{}, 1)}
		w.queues[id] = q
		go s.leadGroup(id, q)
	}
	q.pending = append(q.pending, c)
	w.mu.Unlock()
	select {
	case q.wake <- struct{}{}:
	default:
	}
	<-c.done // not abandoned with the caller's context: a change queued is written
	return c.err
}

// leadGroup writes the changes queued for group id until none are left and the spacing
// of its writes is used up. It holds the group's claim across writes that follow one
// another closely (maxHold), claiming once for them: FerretDB 1.x makes a conditional
// update a read and then a write, so only a claim keeps two processes from both writing
// over one version.
func (s *Store) leadGroup(id string, q *groupQueue) {
	w := &s.writer
	var held *store.Claim
	release := func() {
		if held != nil {
			held.Release(context.Background()) // others may be waiting for it
			held = nil
		}
	}
	defer release()
	for {
		w.mu.Lock()
		wait := q.wait(time.Now())
		w.mu.Unlock()
		if wait > 0 {
			time.Sleep(wait) // more changes gather meanwhile
		}
		w.mu.Lock()
		batch := q.pending
		q.pending = nil
		if len(batch) == 0 {
			rest := time.Until(q.due)
			if rest <= 0 {
				delete(w.queues, id)
				w.mu.Unlock()
				return
			}
			w.mu.Unlock()
			if held != nil && time.Since(held.At)+rest > maxHold {
				release()
			}
			select { // the spacing is kept for changes to come
			case <-q.wake:
			case <-time.After(rest):
			}
			continue
		}
		w.mu.Unlock()
		start := time.Now()
		if held != nil && start.Sub(held.At) > maxHold {
			release()
		}
		var err error
		if held == nil {
			ctx, cancel := context.WithTimeout(context.Background(), lease)
			held, err = s.claims.Hold(ctx, s.placed.Name()+":"+id, groupHolder)
			cancel()
		}
		if err == nil {
			ctx, cancel := context.WithDeadline(context.Background(), held.Deadline())
			err = s.applyChanges(ctx, id, batch)
			cancel()
		}
		w.mu.Lock()
		q.wrote(start, time.Now())
		w.mu.Unlock()
		for _, c := range batch {
			if err != nil {
				c.err = err
			}
			close(c.done)
		}
	}
}

// maxHold bounds how long a leader keeps its group's claim across writes: another
// process's write of the group (a live read saved by the api) waits for it at most about
// this plus one gap, well within the claim wait (2 s).
const maxHold = time.Second

// groupHolder holds a group's claim for this process's writes: a process started later
// takes over a claim an earlier one left within seconds (store.Holder), not a lease, so a
// worker restarted after a crash mid-write does not wait half a minute for its groups.
// A claim is held for about a second: one still held after several is a dead process's.
var groupHolder = store.Holder{Name: "appctx groups", Attempt: int32(time.Now().Unix() - 1_700_000_000)}

// lease bounds the claim of a group and a write under it.
const lease = 30 * time.Second

// applyChanges writes batch to group id, under its claim: each change checked against
// the entry as stored (its writer, its apps), in the order they came, the result written
// over the version it was made from. The group as this process last wrote it is written
// over if it is still that version; else (placement replaced it) it is read and the
// changes made again.
func (s *Store) applyChanges(ctx context.Context, id string, batch []*change) error {
	w := &s.writer
	w.mu.Lock()
	g := w.known[id]
	w.mu.Unlock()
	for range 2 {
		if g == nil {
			var err error
			if g, err = s.fetchGroupDoc(ctx, id); err != nil || g == nil {
				return err // a group that does not exist is left so
			}
			g.index() // kept by its versions after it (merged)
		}
		for _, c := range batch {
			c.err = nil
		}
		next, err := merged(g, batch)
		if err != nil || next == nil {
			return err
		}
		filter := bson.D{{Key: "_id", Value: id}, {Key: "ver", Value: g.Ver}}
		res, err := s.placed.UpdateOne(ctx, filter, bson.D{
			{Key: "$set", Value: bson.D{{Key: "packed", Value: pack(next.Clusters)}, {Key: "ver", Value: next.Ver}}},
			{Key: "$unset", Value: bson.D{{Key: "clusters", Value: ""}}}, // a group written before packing
		})
		if err != nil {
			return err
		}
		if res.MatchedCount > 0 {
			s.flights.Invalidate(id)
			w.mu.Lock()
			if len(w.known) >= maxKnown {
				w.known = nil
			}
			if w.known == nil {
				w.known = map[string]*groupDoc{}
			}
			w.known[id] = next
			w.mu.Unlock()
			return nil
		}
		g = nil // written by another process, or placed again: read it
	}
	return fmt.Errorf("group %s changed under its claim", id)
}

// merged is g with batch's changes made (nil when none applies), as a new version.
func merged(g *groupDoc, batch []*change) (*groupDoc, error) {
	entries := slices.Clone(g.Clusters)
	changed := false
	for _, c := range batch {
		i := g.find(c.cluster)
		if i < 0 {
			continue
		}
		var d clusterDoc
		if err := bson.Unmarshal(entries[i], &d); err != nil {
			return nil, err
		}
		if !c.applyTo(&d) {
			continue
		}
		var err error
		if entries[i], err = entryOf(&d); err != nil {
			return nil, err
		}
		changed = true
	}
	if !changed {
		return nil, nil
	}
	next := *g
	next.Clusters, next.Ver = entries, newVer()
	return &next, nil
}

// applyTo makes change c to d, as stored; false (c.err set when refused) if it does not apply.
func (c *change) applyTo(d *clusterDoc) bool {
	if c.liveFor != nil {
		if len(d.Apps) < len(c.liveFor) {
			return false
		}
		for i, app := range c.liveFor {
			if d.Apps[i].App != app {
				return false
			}
		}
		d.Live = c.live
		return true
	}
	if c.by.Activity != "" && d.Writer != nil && d.Writer.Activity == c.by.Activity && d.Writer.Number > c.by.Number {
		c.err = fmt.Errorf("statuses of %s: %w", c.cluster, ErrSuperseded)
		return false
	}
	d.Apps = c.apps
	if c.setLive {
		d.Live = c.live
	}
	if c.by.Activity != "" {
		by := c.by
		d.Writer = &by
	}
	return true
}
