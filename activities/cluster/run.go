// run, the state of one cluster activity, and begin, which loads what it needs.

package cluster

import (
	"context"
	"errors"
	"sync"
	"time"

	"go.temporal.io/sdk/temporal"
	"golang.org/x/sync/errgroup"

	"github.com/temco/temco/internal/core/appctx"
	"github.com/temco/temco/internal/core/lifecycle"
)

// run is the state of one cluster activity. Apps and objects are worked on concurrently;
// each goroutine writes only its own resources' statuses, under mu because a save may be
// copying them.
type run struct {
	mu       sync.Mutex  // guards the statuses, counters and save times
	writeMu  sync.Mutex  // one write of the statuses at a time
	contexts StatusSaver // the AppContexts' store; the api, for an agent (local.go)
	ctx      context.Context
	target   target  // nil: the cluster cannot be used (its objects are marked Failed)
	cl       *client // the target when reached through its Kubernetes API
	header   *appctx.Context
	applied  map[string]string // update: what the previous revision has applied here (objectKey -> hash)
	previous bool              // an update (the context follows a previous revision)
	// previousID is that revision's context (an agent is given it: agent.go).
	previousID string
	apps       map[string]*appctx.App
	byApp      map[string]*appctx.ClusterApp
	attempt    int32
	retried    bool           // not the first attempt: objects are looked at before they are applied
	writer     appctx.Attempt // saves its statuses as: a later attempt's saves refuse this one's
	result     lifecycle.ClusterResult
	started    time.Time
	// scheduled is when the activity's first attempt was scheduled.
	scheduled time.Time
	saved     time.Time // last write of the statuses
	unsaved   bool      // statuses changed since
	barrier   configBarrier
}

// heartbeatAfter is how long a cluster activity runs before it heartbeats: the first
// heartbeat is a write in Temporal, which most clusters, done in well under a second, do
// not need; the HeartbeatTimeout (10 s) still catches a worker that died.
const heartbeatAfter = 3 * time.Second

// heartbeat records progress once the activity has run heartbeatAfter.
func (r *run) heartbeat(details string) {
	if time.Since(r.started) >= heartbeatAfter {
		beat(r.ctx, details)
	}
}

// begin loads what a cluster activity needs; a cluster that can never work (unregistered,
// no kubeconfig) gets all its resources Failed and a nil client. The loads run as much
// together as they can (the apps and the client need the context's header first): they
// are the time between the activity's start and its first request to the cluster.
func (a *Activities) begin(ctx context.Context, in lifecycle.ClusterInput) (*run, error) {
	var (
		header     *appctx.Context
		apps       map[string]*appctx.App
		placements []*appctx.ClusterApp
		applied    map[string]string
		tg         target
		clErr      error // kept apart: a permanently unusable cluster is recorded, not returned
	)
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() (err error) {
		if header, err = a.header(gctx, in.ContextID, true); err != nil {
			return err
		}
		// The apps and the cluster's credentials both need only the header.
		var apl errgroup.Group
		apl.Go(func() (err error) {
			_, apps, err = a.context(gctx, in.ContextID, true)
			return err
		})
		tg, clErr = a.Clients.target(gctx, in.Cluster, header)
		return apl.Wait()
	})
	g.Go(func() (err error) {
		placements, err = a.Contexts.PlacedApps(gctx, in.ContextID, in.Cluster)
		return err
	})
	if in.Previous != "" {
		g.Go(func() (err error) {
			applied, err = a.previouslyApplied(gctx, in.Previous, in.Cluster)
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	writer, scheduled := attemptOf(ctx, in)
	apps = appctx.ForCluster(apps, placements) // controllers may have edited this cluster's objects
	appctx.List(placements, apps)
	r := &run{ctx: ctx, contexts: a.Contexts, header: header, apps: apps, byApp: map[string]*appctx.ClusterApp{},
		applied: applied, previous: in.Previous != "", previousID: in.Previous, target: tg, attempt: writer.Number, retried: writer.Number > 1, started: time.Now(), saved: time.Now(),
		scheduled: scheduled, writer: writer}
	for _, p := range placements {
		r.byApp[p.App] = p
	}
	r.cl, _ = tg.(*client)
	var appErr *temporal.ApplicationError
	if errors.As(clErr, &appErr) && appErr.NonRetryable() {
		for _, p := range placements {
			for i := range p.Resources {
				r.setFailed(&p.Resources[i], appErr.Message())
			}
		}
		r.target, r.cl = nil, nil
		return r, r.save(ctx)
	}
	return r, clErr
}

// previouslyApplied indexes what context prev has applied on cluster.
func (a *Activities) previouslyApplied(ctx context.Context, prev, cluster string) (map[string]string, error) {
	// As stored: an unlisted placement has applied nothing.
	placed, err := a.Contexts.PlacedApps(ctx, prev, cluster)
	if err != nil || len(placed) == 0 {
		return nil, err
	}
	_, apps, err := a.context(ctx, prev, true)
	if err != nil {
		return nil, err
	}
	return appliedHashes(placed, appctx.ForCluster(apps, placed)), nil
}

// placedApps lists the apps placed on the cluster, in dependency order.
func (r *run) placedApps() []string {
	var out []string
	for _, name := range r.header.Apps {
		if r.byApp[name] != nil {
			out = append(out, name)
		}
	}
	return out
}

func (r *run) placements() []*appctx.ClusterApp {
	out := make([]*appctx.ClusterApp, 0, len(r.byApp))
	for _, name := range r.placedApps() {
		out = append(out, r.byApp[name])
	}
	return out
}

func depNames(app *appctx.App) []string {
	out := make([]string, len(app.Deps))
	for i, d := range app.Deps {
		out[i] = d.App
	}
	return out
}
