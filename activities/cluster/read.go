package cluster

import (
	"context"
	"errors"
	"time"

	"go.temporal.io/sdk/temporal"

	"github.com/temco/temco/internal/core/appctx"
	"github.com/temco/temco/internal/core/lifecycle"
	"github.com/temco/temco/internal/core/readiness"
)

// ReadCluster reads the live state of every object of the context on one cluster. An
// unreachable cluster is reported (state Unknown), not retried: a status query waits.
func (a *Activities) ReadCluster(ctx context.Context, in lifecycle.ClusterInput) (out lifecycle.ClusterResult, err error) {
	ctx, traced := traceCluster(ctx, in, "read")
	defer traced(&out, &err)
	defer a.observe(ctx, in, "read", time.Now(), &err)
	placements, err := a.Contexts.ClusterApps(ctx, in.ContextID, in.Cluster)
	if err != nil {
		return lifecycle.ClusterResult{}, err
	}
	header, err := a.header(ctx, in.ContextID, false) // a kept copy when there is one: a rollout's gates read every cluster of a stage
	if err != nil {
		return lifecycle.ClusterResult{}, err
	}
	tg, err := a.Clients.target(ctx, in.Cluster, header)
	var appErr *temporal.ApplicationError
	if err != nil && !(errors.As(err, &appErr) && appErr.NonRetryable()) {
		return lifecycle.ClusterResult{}, err
	}
	var res lifecycle.ClusterResult
	if tg == nil {
		for _, p := range placements {
			p.Live, p.LiveAt = make([]appctx.Live, len(p.Resources)), time.Now().UTC()
			for i := range p.Live {
				p.Live[i] = appctx.Live{State: appctx.LiveUnknown, Error: appErr.Message()}
				res.NotReady++
			}
		}
	} else {
		res = tg.read(ctx, header, placements, reading{detail: in.Detail, gate: in.Gate})
	}
	// Failed counts what this context has not applied (failed, retrying or not reached
	// yet): on an update the object read may be the previous revision's, Ready but not
	// what was asked for. A rollout's gates count both. An offline agent cluster the
	// operation went on without counts nothing (agent.go).
	for _, p := range placements {
		for _, r := range p.Resources {
			if r.Status != lifecycle.ResApplied && res.Offline == nil {
				res.Failed++
			}
		}
	}
	return res, a.Contexts.SaveLive(ctx, in.ContextID, in.Cluster, placements)
}

// reading is what a read is for: detail keeps each object's metadata, spec and status;
// a gate reads only what can still be unready (lifecycle.ClusterInput.Gate).
type reading struct{ detail, gate bool }

// read gets every object from the API server, one request each, but those a gate takes
// as applied.
func (c *client) read(ctx context.Context, _ *appctx.Context, placements []*appctx.ClusterApp, how reading) lifecycle.ClusterResult {
	now := time.Now().UTC()
	var res lifecycle.ClusterResult
	for _, p := range placements {
		p.Live, p.LiveAt = make([]appctx.Live, len(p.Resources)), now
		for i, r := range p.Resources {
			if how.gate && r.Status == lifecycle.ResApplied && readiness.ByExistence(r.Group, r.Kind) {
				p.Live[i] = appctx.Live{State: appctx.LivePresent, Ready: true, Applied: true}
				res.Done++
				continue
			}
			rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			u, err := c.get(rctx, r.Ref)
			cancel()
			switch {
			case err != nil:
				p.Live[i] = appctx.Live{State: appctx.LiveUnknown, Error: err.Error()}
				res.NotReady++
			case u == nil:
				p.Live[i] = appctx.Live{State: appctx.LiveNotPresent}
				res.NotReady++
			default:
				v := readiness.Judge(u)
				p.Live[i] = appctx.Live{State: appctx.LivePresent, Ready: v.Ready, Reason: v.Reason}
				if !p.Live[i].Ready {
					res.NotReady++
				}
				if how.detail {
					p.Live[i].Detail = appctx.DetailOf(u.Object)
				}
				res.Done++
			}
		}
	}
	return res
}
