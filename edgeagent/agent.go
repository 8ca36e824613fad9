package edgeagent

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
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
}

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
		t := time.NewTimer(poll)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-t.C:
		}
	}
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
	for _, it := range w.Items {
		if it.Reported != nil && it.Reported.Gen == it.Gen {
			continue
		}
		if err := a.item(ctx, it); err != nil {
			first = cmp.Or(first, fmt.Errorf("instance %s: %w", it.Instance, err))
			if errors.Is(err, ErrRefused) {
				return 0, err
			}
		}
	}
	return cmp.Or(a.Poll, time.Duration(w.Poll)*time.Second, 10*time.Second), first
}

// item brings one deployment to what its item says, and reports it. What the cluster
// holds is what the agent last reported applied: objects of that revision applied with
// the same content are left alone, and those the new one lacks are deleted after it.
func (a *Agent) item(ctx context.Context, it Item) error {
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
			return err
		}
		var prev *agent.Revision
		if held != "" && held != it.Context {
			if prev, err = a.API.Revision(ctx, held); err != nil {
				return err
			}
		}
		if res, err = a.Local.Apply(ctx, rev, prev, a.API, it.Published); err != nil {
			return err
		}
		now = it.Context
	} else {
		rev, err := a.API.Revision(ctx, cmp.Or(held, it.Remove))
		if err != nil {
			return err
		}
		if res, err = a.Local.Remove(ctx, rev, a.API, it.Published); err != nil {
			return err
		}
	}
	a.Log.Info("agent: done", "instance", it.Instance, "revision", cmp.Or(now, "none"), "applied", res.Done, "failed", res.Failed)
	return a.API.Report(ctx, it.Instance, Report{Gen: it.Gen, Result: res, Applied: now})
}
