package store

import (
	"context"
	"sync"
)

// Flights shares reads of one key among the callers that want it at once (the clusters
// of a group begin together), without ever answering a caller with a read that began
// before it asked: a caller that comes while a read is under way waits for the next,
// which begins when that one ends and serves every caller that came meanwhile. So a
// caller sees every write that ended before it asked, from any process, as with a read
// of its own; and a key is read at most twice for any number of callers at once.
type Flights struct {
	mu sync.Mutex
	m  map[string]*flightPair
}

type flightPair struct{ cur, next *flight }

type flight struct {
	done chan struct{}
	val  any
	err  error
}

// Do returns read's answer for key, read after this call began. read runs without the
// caller's cancellation (others may be waiting on it); a caller gives up waiting when
// its ctx ends.
func (fs *Flights) Do(ctx context.Context, key string, read func(context.Context) (any, error)) (any, error) {
	fs.mu.Lock()
	if fs.m == nil {
		fs.m = map[string]*flightPair{}
	}
	p := fs.m[key]
	if p == nil {
		p = &flightPair{}
		fs.m[key] = p
	}
	var f *flight
	switch {
	case p.next != nil: // the next read is waiting to begin: it is late enough
		f = p.next
		fs.mu.Unlock()
	case p.cur == nil: // nothing under way: read now
		f = &flight{done: make(chan struct{})}
		p.cur = f
		fs.mu.Unlock()
		go fs.run(context.WithoutCancel(ctx), key, p, f, nil, read)
	default: // a read began before this call: the next one, after it
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

// run waits for prev (if any), then reads for f.
func (fs *Flights) run(ctx context.Context, key string, p *flightPair, f, prev *flight, read func(context.Context) (any, error)) {
	if prev != nil {
		<-prev.done
		fs.mu.Lock()
		p.cur, p.next = f, nil
		fs.mu.Unlock()
	}
	f.val, f.err = read(ctx)
	fs.mu.Lock()
	if p.cur == f {
		p.cur = nil
	}
	if p.cur == nil && p.next == nil && fs.m[key] == p {
		delete(fs.m, key)
	}
	fs.mu.Unlock()
	close(f.done)
}
