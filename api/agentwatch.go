package api

// Agents' long polls. An agent asks for its work with the version it holds (?known) and
// how long it may wait (?wait); the api answers at once when the work changed, else holds
// the request until it does or the wait ends (304). The api learns what changed from the
// store once a second with one query per second of publications (agent.Store.Changes), not
// per agent, and keeps each agent's work version as it last read it. It also keeps the
// agents' calls and writes them every seenFlush (agent.Store.SaveSeen): an idle fleet
// costs the store a few commands a second, whatever its size.

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/temco/temco/internal/core/agent"
)

const (
	// agentHold is the longest a poll is held: below the idle timeouts of the NATs and
	// proxies between an edge and temco (often 60 s).
	agentHold = 25 * time.Second
	// recheckAfter bounds how long the api trusts the work version it holds for an agent
	// without reading the store: a safety net, not the way changes are learnt.
	recheckAfter = 30 * time.Minute
	// seenFlush is how often the agents' calls are written; an agent whose poll is held
	// counts as calling.
	seenFlush = 10 * time.Second
	// watchIdle stops the watch when no agent has called for this long.
	watchIdle = 2 * time.Minute
)

// agentWatch is one api's view of its agents' work and calls.
type agentWatch struct {
	mu      sync.Mutex
	running bool
	work    map[string]*watchedWork               // by cluster
	waiters map[string]map[chan struct{}]struct{} // by cluster: polls held
	calls   map[string]time.Time                  // calls not yet written
	last    time.Time                             // the latest call
	// completed is, by item, the gen whose wait this api completed (or tried to).
	completed map[string]int64
}

// watchedWork is an agent's work as the api last read or learnt it.
type watchedWork struct {
	items   map[string]agent.Item // by id, without their task tokens
	applied map[string]string     // by item: the revision its agent last reported holding
	// exact: items and applied are as read; false once a publication learnt from the
	// changes (only its gen) was not read yet.
	exact bool
	read  time.Time
}

func (e *watchedWork) version() string {
	gens := make(map[string]int64, len(e.items))
	for id, it := range e.items {
		gens[id] = it.Gen
	}
	return version(gens)
}

// version names a set of items' generations: the same work has the same version on
// every api, so an agent may poll any of them.
func version(gens map[string]int64) string {
	ids := make([]string, 0, len(gens))
	for id := range gens {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	h := sha256.New()
	for _, id := range ids {
		h.Write([]byte(id + "\x00" + strconv.FormatInt(gens[id], 10) + "\x00"))
	}
	return hex.EncodeToString(h.Sum(nil)[:12])
}

// record keeps cluster's work as just read and returns its version.
func (w *agentWatch) record(cluster string, items []agent.Item, reports []agent.Report, now time.Time) string {
	e := &watchedWork{items: make(map[string]agent.Item, len(items)), applied: map[string]string{}, exact: true, read: now}
	for _, it := range items {
		it.Token = nil
		e.items[it.ID] = it
	}
	for _, r := range reports {
		e.applied[r.ID] = r.Applied
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.work == nil {
		w.work = map[string]*watchedWork{}
	}
	w.work[cluster] = e
	return e.version()
}

// named answers the item of cluster's work that names revision ctxID (one it wants,
// removes or follows, or, as an empty item, the one its agent reported holding), from
// what the api holds exactly; false when it cannot tell (the store is read then).
func (w *agentWatch) named(cluster, ctxID string, now time.Time) (*agent.Item, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	e := w.work[cluster]
	if e == nil || !e.exact || now.Sub(e.read) > recheckAfter {
		return nil, false
	}
	for _, it := range e.items {
		if it.Context == ctxID || it.Remove == ctxID || it.Previous == ctxID {
			return &it, true
		}
	}
	for _, applied := range e.applied {
		if applied == ctxID {
			return &agent.Item{}, true
		}
	}
	return nil, false
}

// item is item id of cluster's work as the api holds it exactly (nil: it cannot tell).
func (w *agentWatch) item(cluster, id string, now time.Time) *agent.Item {
	w.mu.Lock()
	defer w.mu.Unlock()
	e := w.work[cluster]
	if e == nil || !e.exact || now.Sub(e.read) > recheckAfter {
		return nil
	}
	if it, ok := e.items[id]; ok {
		return &it
	}
	return nil
}

// reported notes the revision cluster's agent reported holding for item id.
func (w *agentWatch) reported(cluster, id, applied string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if e := w.work[cluster]; e != nil {
		e.applied[id] = applied
	}
}

// subscribe returns a channel closed when cluster's work changes, nil when the api cannot
// tell that the agent's version (known) is current: it reads the store then.
func (w *agentWatch) subscribe(cluster, known string, now time.Time) chan struct{} {
	w.mu.Lock()
	defer w.mu.Unlock()
	e := w.work[cluster]
	if !w.running || e == nil || now.Sub(e.read) > recheckAfter || e.version() != known {
		return nil
	}
	if w.waiters == nil {
		w.waiters = map[string]map[chan struct{}]struct{}{}
	}
	if w.waiters[cluster] == nil {
		w.waiters[cluster] = map[chan struct{}]struct{}{}
	}
	ch := make(chan struct{})
	w.waiters[cluster][ch] = struct{}{}
	return ch
}

func (w *agentWatch) unsubscribe(cluster string, ch chan struct{}) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.waiters[cluster], ch)
	if len(w.waiters[cluster]) == 0 {
		delete(w.waiters, cluster)
	}
}

// called notes a call of cluster's agent; it answers whether the watch must be started.
func (w *agentWatch) called(cluster string, now time.Time) (start bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.calls == nil {
		w.calls = map[string]time.Time{}
	}
	w.calls[cluster], w.last = now, now
	start = !w.running
	w.running = true
	return start
}

// apply takes what the store says changed: an item published anew wakes its cluster's
// held polls; a credential voided also drops what is known of its cluster. It answers
// the clusters whose credentials were voided.
func (w *agentWatch) apply(changes []agent.Change) (voided []string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, c := range changes {
		e := w.work[c.Cluster]
		switch {
		case c.Item == "":
			voided = append(voided, c.Cluster)
			delete(w.work, c.Cluster)
		case e == nil || e.items[c.Item].Gen == c.Gen:
			continue // never read here (its next poll reads), or known already
		default:
			e.items[c.Item], e.exact = agent.Item{ID: c.Item, Gen: c.Gen}, false
		}
		for ch := range w.waiters[c.Cluster] {
			close(ch)
		}
		delete(w.waiters, c.Cluster)
	}
	return voided
}

// stale forgets every version held, and wakes the polls held: what changed since the last
// look is not known (the store did not answer, or too late), so each agent's next answer
// comes from the store.
func (w *agentWatch) stale() {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, e := range w.work {
		e.read = time.Time{}
	}
	for cluster, chs := range w.waiters {
		for ch := range chs {
			close(ch)
		}
		delete(w.waiters, cluster)
	}
}

// flush takes the calls to write: those since the last flush, and every agent whose poll
// is held now.
func (w *agentWatch) flush(now time.Time) map[string]time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := w.calls
	w.calls = map[string]time.Time{}
	for cluster := range w.waiters {
		if out == nil {
			out = map[string]time.Time{}
		}
		out[cluster] = now
	}
	return out
}

// idle stops the watch when no agent called for watchIdle and none is held; what it
// knew is dropped (a later call starts afresh).
func (w *agentWatch) idle(now time.Time) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if now.Sub(w.last) < watchIdle || len(w.waiters) > 0 {
		return false
	}
	w.running, w.work = false, nil
	return true
}

// maxBehind bounds how many seconds of publications one look reads: a watch further
// behind (the store slow to answer) stops trusting what it holds instead.
const maxBehind = 2 * time.Minute

// watchAgents runs the watch: each second it reads what was published since its last
// look, and agent.ChangesLag before it (a publication is seen even when its write landed
// after its second was read), and every seenFlush it writes the agents' calls. It ends
// when the agents stop calling (agentWatch.idle).
func (s *Server) watchAgents() {
	ctx := context.Background()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	flushed, looked := time.Now(), time.Now()
	save := func(now time.Time) {
		if err := s.agents().SaveSeen(ctx, s.agentWatch.flush(now.UTC())); err != nil {
			s.Log.Warn("record agents' calls", "error", err)
		}
	}
	for range tick.C {
		// Seconds from the last look's, not the tick's: a look slower than a tick must
		// leave no second unread.
		now := time.Now()
		from := looked.Add(-agent.ChangesLag)
		var changes []agent.Change
		failed := now.Sub(from) > maxBehind
		for t := from; !failed && !t.After(now); t = t.Add(time.Second) {
			cs, err := s.agents().Changes(ctx, t)
			if err != nil {
				failed = true
				s.Log.Warn("read what was published to agents", "error", err)
				break
			}
			changes = append(changes, cs...)
		}
		if failed {
			s.agentWatch.stale()
		}
		looked = now
		for _, cluster := range s.agentWatch.apply(changes) {
			s.agentCache.forget(cluster)
		}
		if now.Sub(flushed) >= seenFlush {
			flushed = now
			save(now)
		}
		if s.agentWatch.idle(now) {
			save(now)
			s.agentCache.clear() // revocations are no longer read: check credentials anew
			return
		}
	}
}

// current reports whether known is still cluster's version as the api knows it;
// dropped, whether the api knows none (a credential voided, the store not answering).
func (w *agentWatch) current(cluster, known string) (current, dropped bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	e := w.work[cluster]
	return e != nil && e.version() == known, e == nil || e.read.IsZero()
}

// toComplete reports whether the wait for gen of item id is still to be completed by this
// api, and notes that it is being.
func (w *agentWatch) toComplete(id string, gen int64) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.completed == nil || len(w.completed) > maxAgentCache {
		w.completed = map[string]int64{}
	}
	if w.completed[id] >= gen {
		return false
	}
	w.completed[id] = gen
	return true
}
