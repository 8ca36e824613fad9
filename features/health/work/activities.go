// Package work holds the cluster health activities: a page of registered clusters
// probed (each API server's /readyz, with the cluster's own credentials), and the end of
// a round recorded. The ClusterHealth workflow (features/health/flow) paces them; what they
// find is kept in internal/core/health.
package work

import (
	"context"
	"strings"
	"time"

	"go.temporal.io/sdk/activity"
	"golang.org/x/sync/errgroup"

	"github.com/temco/temco/activities/cluster"
	"github.com/temco/temco/features/health/flow"
	"github.com/temco/temco/internal/core/events/feed"
	core "github.com/temco/temco/internal/core/health"
	"github.com/temco/temco/internal/core/lifecycle"
	"github.com/temco/temco/internal/core/model"
	"github.com/temco/temco/internal/core/store"
)

// probeTimeout bounds one cluster's probe: an API server slower than that is unreachable
// for the fleet's purposes.
const probeTimeout = 5 * time.Second

// parallel is how many clusters of a page are probed at once (they mostly wait).
const parallel = 32

// Activities probe clusters and record what they find.
type Activities struct {
	Store    *store.Store
	Health   *core.Store
	Clusters cluster.Access
	Events   *feed.Emitter // nil: none raised
}

// ProbeClusters probes the page of clusters in.After..in.Limit and stores what changed; it
// forgets the outcomes of clusters in that range that are no longer registered (and of
// every cluster after in.After when the page is empty: the round is over).
func (a *Activities) ProbeClusters(ctx context.Context, in flow.ProbePage) (flow.ProbedPage, error) {
	keys, docs, err := a.page(ctx, in.After, max(in.Limit, 1))
	if err != nil {
		return flow.ProbedPage{}, err
	}
	last := ""
	if len(keys) > 0 {
		last = keys[len(keys)-1]
	}
	probed := make([]core.Cluster, len(keys))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(parallel)
	now := time.Now().UTC()
	for i, key := range keys {
		g.Go(func() error {
			probed[i] = a.probe(gctx, key, docs[i], now)
			activity.RecordHeartbeat(ctx, i)
			return nil
		})
	}
	_ = g.Wait()
	if err := a.Health.Save(ctx, probed, func(cs []core.Change) error { return a.raise(ctx, cs) }); err != nil {
		return flow.ProbedPage{}, err
	}
	if err := a.Health.Forget(ctx, in.After, last, keys); err != nil {
		return flow.ProbedPage{}, err
	}
	out := flow.ProbedPage{Last: last, States: map[string]int{}}
	for _, c := range probed {
		out.States[c.State]++
	}
	return out, nil
}

// probe is one cluster's outcome.
func (a *Activities) probe(ctx context.Context, key string, doc *store.Doc, now time.Time) core.Cluster {
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	c := core.Cluster{Key: key, State: core.Reachable, Since: now}
	via, err := a.Clusters.Probe(ctx, key, doc)
	switch {
	case err != nil:
		c.State, c.Error = core.Unreachable, err.Error()
	case via == model.AccessGitOps:
		c.State = core.GitOps
	case via == model.AccessAgent:
		c.State = core.Agent
	}
	return c
}

// RecordProbeRound records the end of a round of probes that started at started.
func (a *Activities) RecordProbeRound(ctx context.Context, started time.Time) error {
	return a.Health.Round(ctx, started)
}

// page lists the keys (provider+cluster) of up to limit registered clusters after the
// key after, in key order (the order of the providers' and then the clusters' names:
// "+" sorts before every character a name may have), and their registrations: the probes
// use them rather than reading each again (10,000 reads a round at 10,000 clusters).
func (a *Activities) page(ctx context.Context, after string, limit int) ([]string, []*store.Doc, error) {
	afterProvider, afterCluster, _ := strings.Cut(after, "+")
	providers, err := a.Store.List(ctx, store.Query{Kind: model.KindClusterProvider})
	if err != nil {
		return nil, nil, err
	}
	var keys []string
	var all []*store.Doc
	for _, p := range providers {
		if p.Name < afterProvider {
			continue
		}
		q := store.Query{Parent: p.ID, Kind: model.KindCluster, Limit: limit - len(keys), Full: true}
		if p.Name == afterProvider {
			q.After = p.ID + "/clusters/" + afterCluster
		}
		docs, err := a.Store.List(ctx, q)
		if err != nil {
			return nil, nil, err
		}
		for _, d := range docs {
			keys = append(keys, lifecycle.ClusterKey(p.Name, d.Name))
		}
		all = append(all, docs...)
		if len(keys) >= limit {
			break
		}
	}
	return keys, all, nil
}
