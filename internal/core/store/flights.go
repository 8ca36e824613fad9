package store

import (
	"context"
	"sync"
	"time"
)

// Flights shares reads of one key among the callers that want it at once (the clusters
// of a group begin together), without ever answering a caller with a read that began
// before it asked: a caller that comes while a read is under way waits for the next,
// which begins when that one ends and serves every caller that came meanwhile. So a
// caller sees every write that ended before it asked, from any process, as with a read
// of its own; and a key is read at most twice for any number of callers at once.
//
// A caller's question may be older than its call: the clusters of a group activity ask
// as the group starts (AsOf), however long each waits for its turn, so any read begun
// since then answers them, one under way or one that ended (kept for keepRead): a group's
// clusters share one read however spread out they start. A write this process makes
// (Invalidate) refuses every read that began before it, to every caller.
type Flights struct {
	mu    sync.Mutex
	m     map[string]*flightPair
	swept time.Time // when drop last dropped the reads kept too long
}

type flightPair struct {
	cur, next *flight
	last      *flight   // the last read that ended without error, while kept
	notBefore time.Time // no read that began earlier answers anyone (Invalidate)
}

type flight struct {
	done  chan struct{}
	began time.Time // zero until it begins
	val   any
	err   error
}

// keepRead is how long an ended read may answer callers whose question is older than it.
const keepRead = time.Minute

// maxIdleKeys is how many keys with only a kept read the map holds before it drops them.
const maxIdleKeys = 1024

type asOfKey struct{}

// AsOf marks the reads made with ctx as asked at t: Flights answers them with any read
// that began at t or later.
func AsOf(ctx context.Context, t time.Time) context.Context {
	return context.WithValue(ctx, asOfKey{}, t)
}

// Do returns read's answer for key, read after this call began (or after its AsOf
// time). read runs without the caller's cancellation (others may be waiting on it); a
// caller gives up waiting when its ctx ends.
func (fs *Flights) Do(ctx context.Context, key string, read func(context.Context) (any, error)) (any, error) {
	now := time.Now()
	asked := now
	if t, ok := ctx.Value(asOfKey{}).(time.Time); ok && t.Before(now) {
		asked = t
	}
	fs.mu.Lock()
	if fs.m == nil {
		fs.m = map[string]*flightPair{}
	}
	p := fs.m[key]
	if p == nil {
		p = &flightPair{}
		fs.m[key] = p
	}
	if p.notBefore.After(asked) {
		asked = p.notBefore
	}
	late := func(f *flight) bool { return f != nil && !f.began.IsZero() && !f.began.Before(asked) }
	var f *flight
	switch {
	case late(p.last) && now.Sub(p.last.began) < keepRead:
		f = p.last
		fs.mu.Unlock()
	case late(p.cur): // under way, begun after the question
		f = p.cur
		fs.mu.Unlock()
	case p.next != nil: // the next read is waiting to begin: it is late enough
		f = p.next
		fs.mu.Unlock()
	case p.cur == nil: // nothing under way: read now
		f = &flight{done: make(chan struct{}), began: now}
		p.cur = f
		fs.mu.Unlock()
		go fs.run(context.WithoutCancel(ctx), key, p, f, nil, read)
	default: // a read began before the question: the next one, after it
		f = &flight{done: make(chan struct{})}
		p.next = f
		prev := p.cur
		fs.mu.Unlock()
		go fs.run(context.WithoutCancel(ctx), key, p, f, prev, read)
	}
	select {
	case <-f.done:
		return f.val, f.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Invalidate makes every read of key that began before now unfit for any caller: this
// process has just written what key reads.
func (fs *Flights) Invalidate(key string) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if p := fs.m[key]; p != nil {
		p.last, p.notBefore = nil, time.Now()
	}
}

// run waits for prev (if any), then reads for f.
func (fs *Flights) run(ctx context.Context, key string, p *flightPair, f, prev *flight, read func(context.Context) (any, error)) {
	if prev != nil {
		<-prev.done
		fs.mu.Lock()
		p.cur, p.next, f.began = f, nil, time.Now()
		fs.mu.Unlock()
	}
	f.val, f.err = read(ctx)
	fs.mu.Lock()
	if p.cur == f {
		p.cur = nil
	}
	if f.err == nil && !f.began.Before(p.notBefore) {
		p.last = f
	}
	if p.cur == nil && p.next == nil {
		fs.drop(key, p)
	}
	fs.mu.Unlock()
	close(f.done)
}

// drop forgets idle key p unless it keeps a read (nothing older than an Invalidate is
// left to refuse then); every keepRead, or past maxIdleKeys, it drops the idle keys whose
// reads are too old (a group's read holds its clusters' statuses). Called with fs.mu held.
func (fs *Flights) drop(key string, p *flightPair) {
	if p.last == nil {
		delete(fs.m, key)
	}
	if len(fs.m) <= maxIdleKeys && time.Since(fs.swept) < keepRead {
		return
	}
	fs.swept = time.Now()
	for k, q := range fs.m {
		if q.cur == nil && q.next == nil && (q.last == nil || time.Since(q.last.began) >= keepRead || len(fs.m) > 2*maxIdleKeys) {
			delete(fs.m, k)
		}
	}
}
