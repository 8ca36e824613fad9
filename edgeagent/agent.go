package edgeagent

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"time"

	"github.com/temco/temco/activities/cluster"
	"github.com/temco/temco/internal/core/agent"
	"github.com/temco/temco/internal/core/lifecycle"
)

// Agent works on its cluster's items.
type Agent struct {
	API   *API
	Local *cluster.Local
	Log   *slog.Logger
	// Poll overrides how often the agent asks for its work (0: as the api says).
	Poll time.Duration
	// Report is how often it reports what the cluster shows of the revisions it holds
	// once every object is ready (0: ReportEvery); while one is not, every notReadyEvery.
	Report time.Duration

	revisions map[string]*agent.Revision // by context: what the agent was given, kept while it holds it
	reported  map[string]liveMark        // by instance: its last report of what the cluster shows
	drift     driftSent                  // by context: its last drift finding sent (drift.go)
}

// liveMark is when the agent last reported what the cluster shows of an instance's
// revision, and whether everything was ready then.
type liveMark struct {
	revision string
	at       time.Time
	ready    bool
}

// ReportEvery is how often an agent reports what its cluster shows of revisions whose
// objects are all ready: what changes there without temco (an object deleted, a workload
// down) shows within it. Each report is a few store commands at the centre, about as
// many as a minute of polls.
const ReportEvery = 5 * time.Minute

// notReadyEvery is how often the cluster's state is reported while an object is not
// ready: a rollout's health gate reads it.
const notReadyEvery = 3 * time.Second

// Run works until ctx ends or the api refuses the credential (ErrRefused: the agent
// stops; an operator revoked it or the cluster was registered anew). Other failures
// (the api or the cluster unreachable) are retried at the next poll, backing off to
// five minutes.
func (a *Agent) Run(ctx context.Context) error {
	backoff := time.Second
	for {
		poll, err := a.Once(ctx)
		switch {
		case errors.Is(err, ErrRefused):
			return err
		case ctx.Err() != nil:
			return nil
		case err != nil:
			a.Log.Warn("agent: work not finished; retrying", "error", err, "in", backoff)
			poll, backoff = backoff, min(2*backoff, 5*time.Minute)
		default:
			backoff = time.Second
		}
		t := time.NewTimer(spread(poll))
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

// Once reads the work and does every item whose newest generation it has not reported:
// the newest revision of each deployment, whatever was published before it. It answers
// when to ask again; the first error, the other items done all the same.
func (a *Agent) Once(ctx context.Context) (time.Duration, error) {
	w, err := a.API.Work(ctx)
	if err != nil {
		return 0, err
	}
	var first error
	held := map[string]string{} // instance -> the revision the cluster holds
	for _, it := range w.Items {
		if it.Reported != nil {
			held[it.Instance] = it.Reported.Applied
		}
		if it.Reported != nil && it.Reported.Gen == it.Gen {
			continue
		}
		now, err := a.item(ctx, it)
		if err != nil {
			first = cmp.Or(first, fmt.Errorf("instance %s: %w", it.Instance, err))
			if errors.Is(err, ErrRefused) {
				return 0, err
			}
			continue
		}
		held[it.Instance] = now
	}
	if err := a.reportLive(ctx, held); err != nil && first == nil {
		first = err
	}
	return cmp.Or(a.Poll, time.Duration(w.Poll)*time.Second, 10*time.Second), first
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

// reportLive reports what the cluster shows of the revisions it holds (held, by
// instance), each when due: right after it changed, every notReadyEvery while an object
// is not ready, else every Report. It forgets the revisions it no longer holds.
func (a *Agent) reportLive(ctx context.Context, held map[string]string) error {
	if a.reported == nil {
		a.reported = map[string]liveMark{}
	}
	keep := map[string]bool{}
	var first error
	for instance, ctxID := range held {
		if ctxID == "" {
			continue
		}
		keep[ctxID] = true
		m := a.reported[instance]
		every := cmp.Or(a.Report, ReportEvery)
		if !m.ready {
			every = notReadyEvery
		}
		if m.revision == ctxID && time.Since(m.at) < every {
			continue
		}
		rev, err := a.revision(ctx, ctxID)
		if err != nil {
			first = cmp.Or(first, err)
			continue
		}
		res, err := a.Local.Read(ctx, rev)
		if err == nil {
			err = a.API.SaveLive(ctx, ctxID, rev.Placements)
		}
		if err != nil {
			first = cmp.Or(first, fmt.Errorf("report what the cluster shows of %s: %w", ctxID, err))
			continue
		}
		a.reported[instance] = liveMark{revision: ctxID, at: time.Now(), ready: res.NotReady == 0}
		first = cmp.Or(first, a.reportDrift(ctx, rev))
	}
	for ctxID := range a.revisions {
		if !keep[ctxID] {
			delete(a.revisions, ctxID)
		}
	}
	return first
}

// item brings one deployment to what its item says, and reports it. What the cluster
// holds is what the agent last reported applied: objects of that revision applied with
// the same content are left alone, and those the new one lacks are deleted after it.
//
// The revisions are read anew (their statuses are the starting point of the run), and it
// answers the revision the cluster holds after.
func (a *Agent) item(ctx context.Context, it agent.WorkItem) (string, error) {
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
		if res, err = a.Local.Apply(ctx, rev, prev, a.API, it.Published); err != nil {
			return held, err
		}
		now = it.Context
	} else {
		rev, err := a.API.Revision(ctx, cmp.Or(held, it.Remove))
		if err != nil {
			return held, err
		}
		if res, err = a.Local.Remove(ctx, rev, a.API, it.Published); err != nil {
			return held, err
		}
	}
	a.Log.Info("agent: done", "instance", it.Instance, "revision", cmp.Or(now, "none"), "applied", res.Done, "failed", res.Failed)
	delete(a.reported, it.Instance) // what the cluster shows of it changed: reported next
	return now, a.API.Report(ctx, it.Instance, agent.Outcome{Gen: it.Gen, Result: res, Applied: now})
}
