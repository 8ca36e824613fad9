// Local: a cluster activity's run on a cluster its caller reaches itself, for temco agent,
// which runs inside the cluster and gets its work from temco's api (docs/agent.md). The
// apply, the readiness waits, the deletion and the statuses are the push path's own code.

package cluster

import (
	"context"
	"sync/atomic"
	"time"

	"k8s.io/client-go/rest"

	"github.com/temco/temco/internal/core/agent"
	"github.com/temco/temco/internal/core/appctx"
	"github.com/temco/temco/internal/core/lifecycle"
)

// Revision is what an agent is given of one context on its cluster.
type Revision = agent.Revision

// StatusSaver writes a cluster's statuses of one context: appctx.Store in the worker; an
// agent sends them to the api.
type StatusSaver interface {
	SaveStatuses(ctx context.Context, ctxID string, by appctx.Attempt, cas []*appctx.ClusterApp) error
}

// Local works on one cluster with credentials of its own.
type Local struct {
	key       string
	cfg       *rest.Config
	namespace string // for objects that name none ("": the context's)
	clients   *Clients
}

// NewLocal reaches cluster key (provider+cluster, as temco names it) with cfg; objects
// that name no namespace go to namespace, or, when it is "", the context's.
func NewLocal(key string, cfg *rest.Config, namespace string) *Local {
	return (&Locals{}).New(key, cfg, namespace)
}

// Locals makes Locals that share what clusters reached through the same API server share
// (its transport, its discovery and schemas): many agents in one process (make
// bench-agents).
type Locals struct{ clients Clients }

// New is NewLocal sharing ls's connections.
func (ls *Locals) New(key string, cfg *rest.Config, namespace string) *Local {
	return &Local{key: key, cfg: cfg, namespace: namespace, clients: &ls.clients}
}

func (l *Local) client() (*client, error) {
	cn, err := l.clients.conn(l.cfg)
	if err != nil {
		return nil, err
	}
	return &client{conn: cn, namespace: l.namespace}, nil
}

// Pass says where a run of the agent starts from.
type Pass struct {
	// Since is when the work was published: an apply made before it is not the work's.
	Since time.Time
	// Resume: an earlier attempt may have applied objects and not got their statuses to
	// temco (the agent restarted, or temco did not answer): each object is looked at on
	// the cluster before it is applied, as a retried activity does. Without it, statuses
	// other than Pending say so.
	Resume bool
}

// run is a run of rev on the cluster, outside any activity: its progress is noted, not
// heartbeaten.
func (l *Local) run(ctx context.Context, rev *Revision, save StatusSaver, from Pass) (*run, context.Context, error) {
	cl, err := l.client()
	if err != nil {
		return nil, nil, err
	}
	ctx = context.WithValue(ctx, memberKey{}, member{last: new(atomic.Int64)})
	retried := from.Resume
	for _, p := range rev.Placements {
		for _, res := range p.Resources {
			retried = retried || res.Status != lifecycle.ResPending
		}
	}
	r := &run{ctx: ctx, contexts: save, header: rev.Header, apps: rev.Apps, byApp: map[string]*appctx.ClusterApp{},
		target: cl, cl: cl, retried: retried, started: time.Now(), saved: time.Now(), scheduled: from.Since}
	for _, p := range rev.Placements {
		p.Cluster = l.key
		r.byApp[p.App] = p
	}
	return r, ctx, nil
}

// Apply applies rev as an apply activity would (objects prev applied with the same
// content are left alone), then deletes what prev (nil: none) had and rev has not, as the
// prune of an update would. prev's statuses record the deletions.
func (l *Local) Apply(ctx context.Context, rev, prev *Revision, save StatusSaver, from Pass) (lifecycle.ClusterResult, error) {
	r, rctx, err := l.run(ctx, rev, save, from)
	if err != nil {
		return lifecycle.ClusterResult{}, err
	}
	if prev != nil {
		r.applied, r.previous = appliedHashes(prev.Placements, prev.Apps), true
	}
	res, err := r.applyAll(rctx)
	if err != nil || prev == nil {
		return res, err
	}
	prune := toPrune(prev.Placements, rev.Placements)
	if len(prune) == 0 {
		return res, nil
	}
	p, pctx, err := l.run(ctx, prev, save, from)
	if err != nil {
		return res, err
	}
	return res, p.remove(pctx, prune, &placed{header: rev.Header, placements: rev.Placements, apps: rev.Apps})
}

// Remove deletes rev's objects from the cluster, as a terminate's delete activity would.
func (l *Local) Remove(ctx context.Context, rev *Revision, save StatusSaver, from Pass) (lifecycle.ClusterResult, error) {
	r, rctx, err := l.run(ctx, rev, save, from)
	if err != nil {
		return lifecycle.ClusterResult{}, err
	}
	err = r.remove(rctx, nil, nil)
	return r.result, err
}

// Read fills rev's placements with what the cluster shows of each object (Live, LiveAt),
// as a status read of the push path finds it.
func (l *Local) Read(ctx context.Context, rev *Revision) (lifecycle.ClusterResult, error) {
	cl, err := l.client()
	if err != nil {
		return lifecycle.ClusterResult{}, err
	}
	return cl.read(ctx, rev.Header, rev.Placements, reading{}), nil
}

// API is the cluster's Kubernetes API for header's context, as Access.API gives a
// worker's per-cluster activities: the agent checks its cluster for drift with the drift
// check's own comparison (features/drift/detect).
func (l *Local) API(header *appctx.Context) (*API, error) {
	cl, err := l.client()
	if err != nil {
		return nil, err
	}
	return &API{cl: cl, header: header}, nil
}
