package edgeagent

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"time"

	"github.com/temco/temco/activities/cluster"
	"github.com/temco/temco/internal/core/agent"
	"github.com/temco/temco/internal/core/appctx"
	"github.com/temco/temco/internal/core/lifecycle"
)

// Agent works on its cluster's items.
type Agent struct {
	API   *API
	Local *cluster.Local
	Log   *slog.Logger
	// Poll overrides how often the agent asks for its work from an api that does not hold
	// polls (0: as the api says).
	Poll time.Duration
	// Report is how often it reads what the cluster shows of the revisions it holds once
	// every object is ready (0: ReportEvery); while one is not, every notReadyEvery.
	Report time.Duration

	work      agent.Work                 // as last answered
	done      map[string]int64           // by item: the gen it reported since
	fresh     map[string]int64           // by item: a gen published while it ran, not tried yet
	held      map[string]string          // by instance: the revision the cluster holds
	revisions map[string]*agent.Revision // by context: what the agent was given, kept while it holds it
	reported  map[string]liveMark        // by instance: its last read of what the cluster shows
	drift     driftSent                  // by context: its last drift finding sent (drift.go)
}

// liveMark is when the agent last read what the cluster shows of an instance's revision,
// whether everything was ready then, and what it sent.
type liveMark struct {
	revision string
	at, sent time.Time
	ready    bool
	digest   string
}

// ReportEvery is how often an agent reads what its cluster shows of revisions whose
// objects are all ready: what changes there without temco (an object deleted, a workload
// down) shows within it. It is sent only when it changed, or liveRefresh after the last.
const ReportEvery = 5 * time.Minute

// liveRefresh is how old what temco knows of the cluster may grow while it stays the same.
const liveRefresh = 30 * time.Minute

// notReadyEvery is how often the cluster's state is read while an object is not ready: a
// rollout's health gate reads it.
const notReadyEvery = 3 * time.Second

// Run works until ctx ends or the api refuses the credential (ErrRefused: the agent
// stops; an operator revoked it or the cluster was registered anew). Other failures
// (the api or the cluster unreachable) are retried, backing off to five minutes.
func (a *Agent) Run(ctx context.Context) error {
	backoff := time.Second
	for {
		next, err := a.Once(ctx)
		switch {
		case errors.Is(err, ErrRefused):
			return err
		case ctx.Err() != nil:
			return nil
		case err != nil:
			a.Log.Warn("agent: work not finished; retrying", "error", err, "in", backoff)
			next, backoff = spread(backoff), min(2*backoff, 5*time.Minute)
		default:
			backoff = time.Second
		}
		if next <= 0 {
			continue // the api holds polls: the next one waits there
		}
		t := time.NewTimer(next)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-t.C:
		}
	}
}

// spread is d give or take a tenth, at random: agents restarted together (after an api's
// outage) do not keep calling together.
func spread(d time.Duration) time.Duration {
	return d - d/10 + rand.N(d/5+1)
}

// Once asks for the work (held at the api until it changes, or until the agent's next
// read of its cluster is due) and does every item whose newest generation it has not
// reported: the newest revision of each deployment, whatever was published before it. It
// answers how long to wait before asking again (0: at once, the api holds the next
// poll); the first error, the other items done all the same.
func (a *Agent) Once(ctx context.Context) (time.Duration, error) {
	w, changed, err := a.API.Work(ctx, a.work.Version, a.wait())
	if err != nil {
		return 0, err
	}
	if a.held == nil {
		a.held, a.done, a.fresh = map[string]string{}, map[string]int64{}, map[string]int64{}
	}
	if changed {
		// An item published since the work was first read cannot have been tried by an
		// earlier run of the agent: its apply needs no look at the cluster first.
		if a.work.Version != "" {
			seen := map[string]int64{}
			for _, it := range a.work.Items {
				seen[it.ID] = it.Gen
			}
			for _, it := range w.Items {
				if seen[it.ID] != it.Gen {
					a.fresh[it.ID] = it.Gen
				}
			}
		}
		a.work = w
		for _, it := range w.Items {
			if it.Reported != nil {
				a.held[it.Instance] = it.Reported.Applied
				a.done[it.ID] = max(a.done[it.ID], it.Reported.Gen)
			}
		}
	}
	var first error
	for _, it := range a.work.Items {
		if a.done[it.ID] == it.Gen {
			continue
		}
		it.Reported = a.outcome(it)
		from := cluster.Pass{Since: it.Published, Resume: a.fresh[it.ID] != it.Gen}
		delete(a.fresh, it.ID) // tried: a retry looks at the cluster first
		now, err := a.item(ctx, it, from)
		if err != nil {
			first = cmp.Or(first, fmt.Errorf("instance %s: %w", it.Instance, err))
			if errors.Is(err, ErrRefused) {
				return 0, err
			}
			continue
		}
		a.held[it.Instance], a.done[it.ID] = now, it.Gen
	}
	if err := a.reportLive(ctx); err != nil && first == nil {
		first = err
	}
	if a.work.Hold > 0 {
		return 0, first
	}
	return cmp.Or(a.Poll, time.Duration(a.work.Poll)*time.Second, 10*time.Second), first
}

// outcome is what the cluster holds of it as far as the agent knows: what it did since
// the work was read, else what the work said.
func (a *Agent) outcome(it agent.WorkItem) *agent.Outcome {
	if applied, ok := a.held[it.Instance]; ok {
		return &agent.Outcome{Applied: applied}
	}
	return it.Reported
}

// wait is how long the api may hold the next poll: until the next read of the cluster is
// due, at most what the api holds.
func (a *Agent) wait() time.Duration {
	if a.work.Hold <= 0 || a.work.Version == "" {
		return 0
	}
	for _, it := range a.work.Items {
		if a.done[it.ID] != it.Gen {
			return 0 // an item to try again: asked at once
		}
	}
	wait := time.Duration(a.work.Hold) * time.Second
	for instance, ctxID := range a.held {
		if ctxID == "" {
			continue
		}
		m := a.reported[instance]
		if m.revision != ctxID {
			return 0
		}
		wait = min(wait, time.Until(m.at.Add(a.readEvery(m))))
	}
	return max(wait, time.Second)
}

func (a *Agent) readEvery(m liveMark) time.Duration {
	if !m.ready {
		return notReadyEvery
	}
	return cmp.Or(a.Report, ReportEvery)
}

// revision is context ctxID as placed on the cluster, read once.
func (a *Agent) revision(ctx context.Context, ctxID string) (*agent.Revision, error) {
	if r := a.revisions[ctxID]; r != nil {
		return r, nil
	}
	r, err := a.API.Revision(ctx, ctxID)
	if err != nil {
		return nil, err
	}
	if a.revisions == nil {
		a.revisions = map[string]*agent.Revision{}
	}
	a.revisions[ctxID] = r
	return r, nil
}

// reportLive reads what the cluster shows of the revisions it holds (a.held), each when
// due (right after it changed, every notReadyEvery while an object is not ready, else
// every Report), and sends it when it changed or liveRefresh after it last did. It
// forgets the revisions it no longer holds.
func (a *Agent) reportLive(ctx context.Context) error {
	if a.reported == nil {
		a.reported = map[string]liveMark{}
	}
	keep := map[string]bool{}
	var first error
	for instance, ctxID := range a.held {
		if ctxID == "" {
			continue
		}
		keep[ctxID] = true
		m := a.reported[instance]
		if m.revision == ctxID && time.Since(m.at) < a.readEvery(m) {
			continue
		}
		rev, err := a.revision(ctx, ctxID)
		if err != nil {
			first = cmp.Or(first, err)
			continue
		}
		res, err := a.Local.Read(ctx, rev)
		if err != nil {
			first = cmp.Or(first, fmt.Errorf("read what the cluster shows of %s: %w", ctxID, err))
			continue
		}
		now, digest := time.Now(), liveDigest(rev.Placements)
		if m.revision != ctxID || digest != m.digest || now.Sub(m.sent) >= liveRefresh {
			if err := a.API.SaveLive(ctx, ctxID, rev.Placements); err != nil {
				first = cmp.Or(first, fmt.Errorf("report what the cluster shows of %s: %w", ctxID, err))
				continue
			}
			m.sent, m.digest = now, digest
		}
		a.reported[instance] = liveMark{revision: ctxID, at: now, sent: m.sent, ready: res.NotReady == 0, digest: m.digest}
		first = cmp.Or(first, a.reportDrift(ctx, rev))
	}
	for ctxID := range a.revisions {
		if !keep[ctxID] {
			delete(a.revisions, ctxID)
		}
	}
	return first
}

// liveDigest names what the placements' Live says (not when it was read).
func liveDigest(cas []*appctx.ClusterApp) string {
	h := sha256.New()
	for _, ca := range cas {
		_, _ = fmt.Fprintf(h, "%s\x00", ca.App)
		for _, l := range ca.Live {
			_, _ = fmt.Fprintf(h, "%s\x00%t\x00%s\x00%s\x00", l.State, l.Ready, l.Error, l.Reason)
		}
	}
	return hex.EncodeToString(h.Sum(nil))
}

// item brings one deployment to what its item says, and reports it. What the cluster
// holds is what the agent last reported applied: objects of that revision applied with
// the same content are left alone, and those the new one lacks are deleted after it.
//
// The revisions are read anew (their statuses are the starting point of the run), and it
// answers the revision the cluster holds after.
func (a *Agent) item(ctx context.Context, it agent.WorkItem, from cluster.Pass) (string, error) {
	held := ""
	if it.Reported != nil {
		held = it.Reported.Applied
	}
	var (
		res lifecycle.ClusterResult
		now string
	)
	if it.Context != "" {
		rev, err := a.API.Revision(ctx, it.Context)
		if err != nil {
			return held, err
		}
		var prev *agent.Revision
		if held != "" && held != it.Context {
			if prev, err = a.API.Revision(ctx, held); err != nil {
				return held, err
			}
		}
		if res, err = a.Local.Apply(ctx, rev, prev, a.API, from); err != nil {
			return held, err
		}
		now = it.Context
	} else {
		rev, err := a.API.Revision(ctx, cmp.Or(held, it.Remove))
		if err != nil {
			return held, err
		}
		if res, err = a.Local.Remove(ctx, rev, a.API, from); err != nil {
			return held, err
		}
	}
	a.Log.Info("agent: done", "instance", it.Instance, "revision", cmp.Or(now, "none"), "applied", res.Done, "failed", res.Failed)
	delete(a.reported, it.Instance) // what the cluster shows of it changed: read and sent next
	return now, a.API.Report(ctx, it.Instance, agent.Outcome{Gen: it.Gen, Result: res, Applied: now})
}
