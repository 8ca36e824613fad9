package cluster

import (
	"context"
	"errors"
	"time"

	"go.temporal.io/sdk/temporal"

	"github.com/temco/temco/internal/appctx"
	"github.com/temco/temco/internal/lifecycle"
)

// ReadCluster reads the live state of every object of the context on one cluster. An
// unreachable cluster is reported (state Unknown), not retried: a status query waits.
func (a *Activities) ReadCluster(ctx context.Context, in lifecycle.ClusterInput) (_ lifecycle.ClusterResult, err error) {
	defer a.observe(ctx, in.Cluster, "read", time.Now(), &err)
	placements, err := a.Contexts.ClusterApps(ctx, in.ContextID, in.Cluster)
	if err != nil {
		return lifecycle.ClusterResult{}, err
	}
	header, err := a.Contexts.Get(ctx, in.ContextID)
	if err != nil {
		return lifecycle.ClusterResult{}, err
	}
	cl, err := a.Clients.For(ctx, in.Cluster, header.Credentials)
	var appErr *temporal.ApplicationError
	if err != nil && !(errors.As(err, &appErr) && appErr.NonRetryable()) {
		return lifecycle.ClusterResult{}, err
	}
	now := time.Now().UTC()
	var res lifecycle.ClusterResult
	for _, p := range placements {
		p.Live, p.LiveAt = make([]appctx.Live, len(p.Resources)), now
		for i, r := range p.Resources {
			if cl == nil {
				p.Live[i] = appctx.Live{State: appctx.LiveUnknown, Error: appErr.Message()}
				res.NotReady++
				continue
			}
			rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			u, err := cl.get(rctx, r.Ref)
			cancel()
			switch {
			case err != nil:
				p.Live[i] = appctx.Live{State: appctx.LiveUnknown, Error: err.Error()}
				res.NotReady++
			case u == nil:
				p.Live[i] = appctx.Live{State: appctx.LiveNotPresent}
				res.NotReady++
			default:
				p.Live[i] = appctx.Live{State: appctx.LivePresent, Ready: Ready(u)}
				if !p.Live[i].Ready {
					res.NotReady++
				}
				if in.Detail {
					p.Live[i].Detail = appctx.DetailOf(u.Object)
				}
				res.Done++
			}
		}
	}
	return res, a.Contexts.SaveClusters(ctx, in.ContextID, placements)
}
