package cluster

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	"golang.org/x/sync/errgroup"
	"golang.org/x/sync/singleflight"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	"github.com/temco/temco/internal/appctx"
	"github.com/temco/temco/internal/lifecycle"
	"github.com/temco/temco/internal/metrics"
	"github.com/temco/temco/internal/model"
)

// FieldManager owns every field temco applies (server-side apply).
const FieldManager = "temco"

// pollInterval paces waiting for dependencies to become ready and objects to disappear.
const pollInterval = time.Second

// Activities apply, delete and read objects on clusters.
type Activities struct {
	Clients  *Clients
	Contexts *appctx.Store
	Metrics  *metrics.Clusters // nil: not recorded
	// Report tells the workflow that scheduled an activity that its cluster is being
	// retried (nil: nobody is told). See workflows/deploy/retrying.go.
	Report func(ctx context.Context, workflowID, runID string, r lifecycle.ClusterRetry) error

	cacheMu sync.Mutex
	cache   []*contextCacheEntry // recent contexts, whose apps and placement are fixed once prepared
	loading singleflight.Group   // a context's first activities (hundreds at once) share one load
}

type contextCacheEntry struct {
	header *appctx.Context
	apps   map[string]*appctx.App // nil until loaded
}

// header returns the header of a context, cached: every cluster of a context needs it,
// and what they read of it does not change once the context is prepared (its status
// does, which the cluster activities do not read).
func (a *Activities) header(ctx context.Context, ctxID string) (*appctx.Context, error) {
	if h, _ := a.cached(ctxID); h != nil {
		return h, nil
	}
	v, err, _ := a.loading.Do("header/"+ctxID, func() (any, error) {
		if h, _ := a.cached(ctxID); h != nil { // loaded since this caller looked
			return h, nil
		}
		lctx, cancel := detached(ctx)
		defer cancel()
		h, err := a.Contexts.Get(lctx, ctxID)
		if err != nil {
			return nil, err
		}
		a.cacheMu.Lock()
		a.cache = append([]*contextCacheEntry{{header: h}}, a.cache...)
		if len(a.cache) > 8 {
			a.cache = a.cache[:8]
		}
		a.cacheMu.Unlock()
		return h, nil
	})
	if err != nil {
		return nil, err
	}
	return v.(*appctx.Context), nil
}

// context returns the header and rendered apps of a context, cached like the header:
// the apps do not change either once the context is prepared.
func (a *Activities) context(ctx context.Context, ctxID string) (*appctx.Context, map[string]*appctx.App, error) {
	h, err := a.header(ctx, ctxID)
	if err != nil {
		return nil, nil, err
	}
	if _, apps := a.cached(ctxID); apps != nil {
		return h, apps, nil
	}
	v, err, _ := a.loading.Do("apps/"+ctxID, func() (any, error) {
		if _, apps := a.cached(ctxID); apps != nil {
			return apps, nil
		}
		lctx, cancel := detached(ctx)
		defer cancel()
		apps, err := a.Contexts.Apps(lctx, h)
		if err != nil {
			return nil, err
		}
		a.cacheMu.Lock()
		for _, e := range a.cache {
			if e.header.ID == ctxID {
				e.apps = apps
			}
		}
		a.cacheMu.Unlock()
		return apps, nil
	})
	if err != nil {
		return nil, nil, err
	}
	return h, v.(map[string]*appctx.App), nil
}

// detached is the context of a load that many activities wait for: not tied to the first
// caller's, whose cancellation must not fail the others.
func detached(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
}

// cached returns what the cache holds of a context (nil when nothing).
func (a *Activities) cached(ctxID string) (*appctx.Context, map[string]*appctx.App) {
	a.cacheMu.Lock()
	defer a.cacheMu.Unlock()
	for _, e := range a.cache {
		if e.header.ID == ctxID {
			return e.header, e.apps
		}
	}
	return nil, nil
}

// run is the state of one cluster activity. Apps and objects are worked on concurrently;
// each goroutine writes only its own resources' statuses, under mu because a save may be
// copying them.
type run struct {
	mu       sync.Mutex // guards the statuses, counters and save times
	writeMu  sync.Mutex // one write of the statuses at a time
	contexts *appctx.Store
	ctx      context.Context
	cl       *client
	header   *appctx.Context
	applied  map[string]string // update: what the previous revision has applied here (objectKey -> hash)
	apps     map[string]*appctx.App
	byApp    map[string]*appctx.ClusterApp
	attempt  int32
	result   lifecycle.ClusterResult
	started  time.Time
	saved    time.Time // last write of the statuses
	unsaved  bool      // statuses changed since
	barrier  configBarrier
}

// heartbeatAfter is how long a cluster activity runs before it heartbeats: the first
// heartbeat is a write in Temporal, which most clusters, done in well under a second, do
// not need; the HeartbeatTimeout (10 s) still catches a worker that died.
const heartbeatAfter = 3 * time.Second

// heartbeat records progress once the activity has run heartbeatAfter.
func (r *run) heartbeat(details string) {
	if time.Since(r.started) >= heartbeatAfter {
		activity.RecordHeartbeat(r.ctx, details)
	}
}

// progressEvery spaces the writes of a cluster's statuses while its objects progress: most
// clusters are done within a second, with one write at the end instead of one per app (a
// third of the database writes at scale); a slow one shows progress every second, and
// waits flush what is done.
const progressEvery = time.Second

// ApplyCluster applies every app placed on one cluster, in dependency order, and records
// each object's status. An unreachable cluster fails the activity (Temporal retries it
// with backoff) after marking its pending objects Retrying; an object the apiserver
// rejects is Failed and not retried.
func (a *Activities) ApplyCluster(ctx context.Context, in lifecycle.ClusterInput) (_ lifecycle.ClusterResult, err error) {
	defer a.observe(ctx, in.Cluster, "apply", time.Now(), &err)
	r, err := a.begin(ctx, in)
	if err != nil {
		return lifecycle.ClusterResult{}, err
	}
	if r.cl == nil { // permanently unusable cluster: already marked Failed
		return r.result, nil
	}
	// Apps run concurrently, each after the apps it depends on.
	err = inOrder(r.placedApps(), func(app string) []string { return depNames(r.apps[app]) }, func(app string) error {
		return r.applyApp(r.byApp[app])
	})
	if err != nil {
		r.markRetrying(err)
		if serr := r.save(context.WithoutCancel(ctx)); serr != nil {
			return r.result, serr
		}
		return r.result, err
	}
	return r.result, r.flush(ctx)
}

// save writes the statuses of all apps on the cluster (one document). The statuses are
// copied under mu and written outside it: the cluster's other goroutines keep applying
// during the write. writeMu keeps the writes in the order of their copies.
func (r *run) save(ctx context.Context) error {
	r.writeMu.Lock()
	defer r.writeMu.Unlock()
	r.mu.Lock()
	r.saved, r.unsaved = time.Now(), false
	snapshot := r.placements()
	for i, p := range snapshot {
		cp := *p
		cp.Resources = slices.Clone(p.Resources)
		snapshot[i] = &cp
	}
	r.mu.Unlock()
	return r.contexts.SaveClusters(ctx, r.header.ID, snapshot)
}

// progress notes that statuses changed and writes them if the last write is older than
// progressEvery; the goroutine that finds it due writes, the others go on.
func (r *run) progress(ctx context.Context) error {
	r.mu.Lock()
	r.unsaved = true
	due := time.Since(r.saved) >= progressEvery
	if due {
		r.saved = time.Now()
	}
	r.mu.Unlock()
	if !due {
		return nil
	}
	return r.save(ctx)
}

// flush writes statuses not written yet: before waiting, so that the wait shows what is done.
func (r *run) flush(ctx context.Context) error {
	r.mu.Lock()
	unsaved := r.unsaved
	r.mu.Unlock()
	if !unsaved {
		return nil
	}
	return r.save(ctx)
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

func depNames(app *appctx.App) []string {
	out := make([]string, len(app.Deps))
	for i, d := range app.Deps {
		out[i] = d.App
	}
	return out
}

// observe records one attempt of a cluster activity; a failure Temporal will retry
// (anything but a non-retryable application error) counts as a retry, and is reported
// to the workflow on attempts 1, 2, 4, 8... (a cluster down for a day costs a dozen).
func (a *Activities) observe(ctx context.Context, cluster, op string, start time.Time, err *error) {
	var appErr *temporal.ApplicationError
	retry := *err != nil && ctx.Err() == nil && !(errors.As(*err, &appErr) && appErr.NonRetryable())
	a.Metrics.Observe(cluster, op, *err, retry, time.Since(start))
	info := activity.GetInfo(ctx)
	if retry && a.Report != nil && info.Attempt&(info.Attempt-1) == 0 {
		r := lifecycle.ClusterRetry{Cluster: cluster, Attempt: info.Attempt, Error: (*err).Error()}
		if rerr := a.Report(ctx, info.WorkflowExecution.ID, info.WorkflowExecution.RunID, r); rerr != nil {
			activity.GetLogger(ctx).Warn("report a retrying cluster", "cluster", cluster, "error", rerr)
		}
	}
}

// previouslyApplied indexes what context prev has applied on cluster.
func (a *Activities) previouslyApplied(ctx context.Context, prev, cluster string) (map[string]string, error) {
	// As stored: an unlisted placement has applied nothing.
	placed, err := a.Contexts.PlacedApps(ctx, prev, cluster)
	if err != nil || len(placed) == 0 {
		return nil, err
	}
	_, apps, err := a.context(ctx, prev)
	if err != nil {
		return nil, err
	}
	return appliedHashes(placed, appctx.ForCluster(apps, placed)), nil
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
		cl         *client
		clErr      error // kept apart: a permanently unusable cluster is recorded, not returned
	)
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() (err error) {
		if header, err = a.header(gctx, in.ContextID); err != nil {
			return err
		}
		// The apps and the cluster's credentials both need only the header.
		var apl errgroup.Group
		apl.Go(func() (err error) {
			_, apps, err = a.context(gctx, in.ContextID)
			return err
		})
		cl, clErr = a.Clients.For(gctx, in.Cluster, header.Credentials)
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
	apps = appctx.ForCluster(apps, placements) // controllers may have edited this cluster's objects
	appctx.List(placements, apps)
	r := &run{ctx: ctx, contexts: a.Contexts, header: header, apps: apps, byApp: map[string]*appctx.ClusterApp{},
		applied: applied, cl: cl, attempt: activity.GetInfo(ctx).Attempt, started: time.Now(), saved: time.Now()}
	for _, p := range placements {
		r.byApp[p.App] = p
	}
	var appErr *temporal.ApplicationError
	if errors.As(clErr, &appErr) && appErr.NonRetryable() {
		for _, p := range placements {
			for i := range p.Resources {
				r.setFailed(&p.Resources[i], appErr.Message())
			}
		}
		r.cl = nil
		return r, r.save(ctx)
	}
	return r, clErr
}

func (r *run) placements() []*appctx.ClusterApp {
	out := make([]*appctx.ClusterApp, 0, len(r.byApp))
	for _, name := range r.placedApps() {
		out = append(out, r.byApp[name])
	}
	return out
}

// applyApp applies one app after its dependencies; it returns an error only when the
// cluster could not be reached (transient).
func (r *run) applyApp(p *appctx.ClusterApp) error {
	app := r.apps[p.App]
	if failed, err := r.waitDependencies(app); err != nil || failed != "" {
		if err == nil {
			for i := range p.Resources {
				r.setFailed(&p.Resources[i], fmt.Sprintf("not applied: dependency %q failed on this cluster", failed))
			}
		}
		return err
	}
	r.barrier.enter()
	left := false
	leave := func() {
		if !left {
			left = true
			r.barrier.leave()
		}
	}
	defer leave()
	for _, group := range applyGroups(app.Objects) {
		if workloads[app.Objects[group[0]].Kind] {
			leave()
			r.barrier.wait()
		}
		err := forEach(group, func(i int) error {
			res := &p.Resources[i]
			err := r.applyObject(&app.Objects[i], res)
			r.heartbeat(p.App + "/" + res.Name)
			switch {
			case err == nil:
				r.settle(res, lifecycle.ResApplied, "")
			case permanent(err):
				r.setFailed(res, err.Error())
			default:
				return err
			}
			return r.progress(r.ctx)
		})
		if err != nil {
			return err
		}
		if app.Objects[group[0]].Kind == "CustomResourceDefinition" {
			// Objects of a new kind can only be applied once its CRD is established.
			if err := r.waitReady(p, group); err != nil {
				return err
			}
			r.cl.mapper.Reset()
		}
	}
	return nil
}

// settle records an object's final status for this attempt (Applied, Deleted or Failed).
// Goroutines of the same cluster share the statuses, hence the lock.
func (r *run) settle(res *appctx.ResourceStatus, status, msg string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	res.Status, res.Error, res.Attempts, res.Updated = status, msg, 0, time.Now().UTC()
	if status == lifecycle.ResFailed {
		r.result.Failed++
	} else {
		r.result.Done++
	}
}

func (r *run) setFailed(res *appctx.ResourceStatus, msg string) {
	r.settle(res, lifecycle.ResFailed, msg)
}

// markRetrying records a transient failure on every object not yet applied.
func (r *run) markRetrying(cause error) {
	for _, p := range r.byApp {
		for i := range p.Resources {
			res := &p.Resources[i]
			if res.Status == lifecycle.ResPending || res.Status == lifecycle.ResRetrying {
				res.Status, res.Attempts, res.Error, res.Updated = lifecycle.ResRetrying, r.attempt, cause.Error(), time.Now().UTC()
			}
		}
	}
}

// applyObject server-side applies one object: its stored manifest is sent as is (the
// deployment-id label was added at rendering), into the default namespace when it names
// none. The response is not decoded: the status code says all we need.
//
// In an update, an object the previous revision applied with the same content is left
// alone: nothing on the cluster changes, not even its resourceVersion.
func (r *run) applyObject(obj *appctx.Object, res *appctx.ResourceStatus) error {
	m, err := r.cl.mapping(obj.Ref, r.defaultNamespace())
	if err != nil {
		return err
	}
	r.mu.Lock() // a save may be reading the statuses
	res.Namespace = m.namespace
	r.mu.Unlock()
	if unchanged(r.applied, obj, m.namespace) {
		return nil
	}
	err = r.cl.rest.Patch(types.ApplyPatchType).AbsPath(m.path(obj.Name)...).
		Param("fieldManager", FieldManager).Param("force", "true").Body([]byte(obj.Manifest)).Do(r.ctx).Error()
	if err != nil {
		return fmt.Errorf("apply %s: %w", obj.Ref, err)
	}
	return nil
}

func (r *run) defaultNamespace() string {
	if r.cl.namespace != "" {
		return r.cl.namespace
	}
	return r.header.Namespace
}

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
			activity.RecordHeartbeat(ctx)
		}
	}
}

// permanentErr marks failures that retrying cannot fix.
type permanentErr struct{ error }

func (e permanentErr) Unwrap() error { return e.error }

// permanent tells a rejected object (the apiserver's 4xx, an unknown kind) from a cluster
// that cannot be reached or is overloaded (retried).
func permanent(err error) bool {
	var pe permanentErr
	if errors.As(err, &pe) || meta.IsNoMatchError(err) {
		return true
	}
	var st apierrors.APIStatus
	if !errors.As(err, &st) {
		return false
	}
	switch code := st.Status().Code; {
	case code == 408 || code == 409 || code == 429:
		return false
	default:
		return code >= 400 && code < 500
	}
}

// mapped is where an object lives on a cluster.
type mapped struct {
	gvr       schema.GroupVersionResource
	namespace string // "" for cluster-scoped objects
}

// path is the REST path of the named object.
func (m mapped) path(name string) []string {
	p := []string{"/apis", m.gvr.Group, m.gvr.Version}
	if m.gvr.Group == "" {
		p = []string{"/api", m.gvr.Version}
	}
	if m.namespace != "" {
		p = append(p, "namespaces", m.namespace)
	}
	return append(p, m.gvr.Resource, name)
}

// mapping resolves the API resource of ref and the namespace to use for it.
func (c *client) mapping(ref appctx.Ref, defaultNS string) (mapped, error) {
	gvk := schema.GroupVersionKind{Group: ref.Group, Version: ref.Version, Kind: ref.Kind}
	m, err := c.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if meta.IsNoMatchError(err) {
		c.mapper.Reset() // discovery may predate a CRD: look once more
		m, err = c.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	}
	if err != nil {
		if meta.IsNoMatchError(err) {
			return mapped{}, permanentErr{fmt.Errorf("the cluster does not serve %s", gvk)}
		}
		return mapped{}, fmt.Errorf("discover %s: %w", gvk, err)
	}
	if m.Scope.Name() != meta.RESTScopeNameNamespace {
		return mapped{gvr: m.Resource}, nil
	}
	return mapped{gvr: m.Resource, namespace: cmp.Or(ref.Namespace, defaultNS)}, nil
}

// resource is the dynamic client of ref's resource (reads and deletes decode objects).
func (c *client) resource(ref appctx.Ref) (dynamic.ResourceInterface, error) {
	m, err := c.mapping(ref, ref.Namespace)
	if err != nil {
		return nil, err
	}
	if m.namespace == "" {
		return c.dyn.Resource(m.gvr), nil
	}
	return c.dyn.Resource(m.gvr).Namespace(m.namespace), nil
}
