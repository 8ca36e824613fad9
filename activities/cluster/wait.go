// Waits inside a cluster activity: for dependencies, for objects to be ready, and sleeps.

package cluster

import (
	"context"
	"time"

	"github.com/temco/temco/internal/core/appctx"
	"github.com/temco/temco/internal/core/lifecycle"
	"github.com/temco/temco/internal/core/model"
)

// pollInterval paces waiting for dependencies to become ready and objects to disappear.
const pollInterval = time.Second

// waitDependencies waits until the app's dependencies placed on this cluster reached
// their opStatus (Deployed: applied; Ready: ready), then their extra wait. It returns the
// name of a dependency that failed on this cluster.
func (r *run) waitDependencies(app *appctx.App) (string, error) {
	for _, d := range app.Deps {
		dp := r.byApp[d.App]
		if dp == nil {
			continue // dependencies are per cluster
		}
		for _, res := range dp.Resources {
			if res.Status == lifecycle.ResFailed {
				return d.App, nil
			}
		}
		if err := r.flush(r.ctx); err != nil {
			return "", err
		}
		if d.OpStatus == model.OpStatusReady {
			if err := r.waitReady(dp, nil); err != nil {
				return "", err
			}
		}
		if err := sleep(r.ctx, time.Duration(d.Wait)*time.Second); err != nil {
			return "", err
		}
	}
	return "", nil
}

// waitReady polls the objects of a placed app (those at idx; all when nil) until they
// are ready; objects that failed to apply are not waited for.
func (r *run) waitReady(p *appctx.ClusterApp, idx []int) error {
	if idx == nil {
		for i := range p.Resources {
			idx = append(idx, i)
		}
	}
	for {
		ready := true
		for _, i := range idx {
			res := p.Resources[i]
			if res.Status == lifecycle.ResFailed {
				continue
			}
			ok, err := r.cl.ready(r.ctx, res.Ref)
			if err != nil {
				return err
			}
			if !ok {
				ready = false
				break
			}
		}
		if ready {
			return nil
		}
		r.heartbeat("waiting for " + p.App + " to be ready")
		if err := sleep(r.ctx, pollInterval/5); err != nil {
			return err
		}
	}
}

// sleep waits d while heartbeating, or until the activity is cancelled.
func sleep(ctx context.Context, d time.Duration) error {
	deadline := time.Now().Add(d)
	for {
		left := time.Until(deadline)
		if left <= 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(min(left, 5*time.Second)):
			beat(ctx)
		}
	}
}
