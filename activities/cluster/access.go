// Access and API: what the per-cluster activities of other domains (features/drift/work's
// DetectDrift) use of this package's machinery (temco agent gets the API of its own
// cluster from Local.API). They are not methods of Activities, whose exported methods are
// all registered as activities.

package cluster

import (
	"cmp"
	"context"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/temco/temco/internal/core/appctx"
	"github.com/temco/temco/internal/core/lifecycle"
	"github.com/temco/temco/internal/core/model"
	"github.com/temco/temco/internal/core/store"
)

// Access is the cluster activities' machinery for a per-cluster activity of another
// domain: the contexts as they cache them, each cluster as they reach it, and the
// observation of every attempt.
type Access struct{ a *Activities }

// AccessOf returns the machinery of a (the worker's: Shared).
func AccessOf(a *Activities) Access { return Access{a} }

// Observe records one attempt of a per-cluster activity as the cluster activities' own
// are recorded (metrics, and the retries reported to the workflow); deferred with the
// activity's named error.
func (x Access) Observe(ctx context.Context, in lifecycle.ClusterInput, op string, start time.Time, err *error) {
	x.a.observe(ctx, in, op, start, err)
}

// Context returns the header and rendered apps of a context, from the worker's cache when
// it holds them (kept by the context's operation), else from the store, keeping nothing: a
// drift check or the autoscaler may come while the context is still being prepared.
func (x Access) Context(ctx context.Context, ctxID string) (*appctx.Context, map[string]*appctx.App, error) {
	return x.a.context(ctx, ctxID, false)
}

// API returns cluster key's Kubernetes API as the context (header) reaches it: with the
// cluster's kubeconfig or its logical cloud's credential there. It is nil, with no error,
// for a cluster temco does not read: reached through git (GitOps) or by its agent (Reach
// tells which). A cluster that can never be reached (unregistered, no kubeconfig...) is a
// non-retryable error.
func (x Access) API(ctx context.Context, key string, header *appctx.Context) (*API, error) {
	api, _, err := x.Reach(ctx, key, header)
	return api, err
}

// Reach is API, and how a cluster temco does not read is reached when api is nil:
// model.AccessGitOps or model.AccessAgent (a drift check reads an agent's report instead).
func (x Access) Reach(ctx context.Context, key string, header *appctx.Context) (api *API, via string, err error) {
	tg, err := x.a.Clients.target(ctx, key, header)
	if err != nil {
		return nil, "", err
	}
	switch t := tg.(type) {
	case *client:
		return &API{cl: t, header: header}, "", nil
	case *agentCluster:
		return nil, model.AccessAgent, nil
	}
	return nil, model.AccessGitOps, nil
}

// API is one cluster's Kubernetes API for one context (Access.API).
type API struct {
	cl     *client
	header *appctx.Context
}

// Namespace is where the context's objects that name none go: the kubeconfig context's
// namespace, else the context's.
func (p *API) Namespace() string { return cmp.Or(p.cl.namespace, p.header.Namespace) }

// Locate returns the API resource of ref and the namespace to use for it ("" for a
// cluster-scoped kind; defaultNS when ref names none). A kind the cluster no longer
// serves is an error Permanent reports.
func (p *API) Locate(ref appctx.Ref, defaultNS string) (schema.GroupVersionResource, string, error) {
	m, err := p.cl.mapping(ref, defaultNS)
	return m.gvr, m.namespace, err
}

// Declared returns obj's manifest as an apply sends it: without the fields the cluster's
// schema does not declare (as stored when no schema describes its kind).
func (p *API) Declared(ctx context.Context, obj *appctx.Object) ([]byte, error) {
	pruned, err := p.cl.prune(ctx, obj)
	if err != nil {
		return nil, err
	}
	if pruned.Body == nil {
		return []byte(obj.Manifest), nil
	}
	return pruned.Body, nil
}

// Resource is the dynamic client of an API resource, for reads.
func (p *API) Resource(gvr schema.GroupVersionResource) dynamic.NamespaceableResourceInterface {
	return p.cl.dyn.Resource(gvr)
}

// Apply applies obj again as ApplyCluster applies it: server-side apply as temco's field
// manager, forced, into Namespace when it names none.
func (p *API) Apply(ctx context.Context, obj *appctx.Object) error {
	r := &run{ctx: ctx, cl: p.cl, header: p.header}
	_, err := r.applyObject(obj, &appctx.ResourceStatus{Ref: obj.Ref})
	return err
}

// Permanent tells a failure retrying cannot fix (a rejected object, a kind the cluster
// does not serve) from one a later try may pass (the cluster out of reach...).
func Permanent(err error) bool { return permanent(err) }

// Probe asks cluster key's API server whether it is ready (GET /readyz) with the
// cluster's own credentials: nil when it answered so. Nothing is asked of a cluster temco
// does not talk to: via is then model.AccessGitOps or model.AccessAgent ("" for one
// probed). doc is the cluster's registration, as a listing of the store gave it.
func (x Access) Probe(ctx context.Context, key string, doc *store.Doc) (via string, err error) {
	tg, err := x.a.Clients.targetOf(ctx, key, doc)
	if err != nil {
		return "", err
	}
	switch t := tg.(type) {
	case *gitCluster:
		return model.AccessGitOps, nil
	case *agentCluster:
		return model.AccessAgent, nil
	case *client:
		return "", t.rest.Get().AbsPath("/readyz").Do(ctx).Error()
	}
	return "", nil
}
