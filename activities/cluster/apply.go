package cluster

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/temco/temco/internal/appctx"
	"github.com/temco/temco/internal/lifecycle"
	"github.com/temco/temco/internal/model"
)

// FieldManager owns every field temco applies (server-side apply).
const FieldManager = "temco"

// DeploymentIDLabel marks every object temco applies with "<instance context>-<app>".
const DeploymentIDLabel = "emco/deployment-id"

// pollInterval paces waiting for dependencies to become ready and objects to disappear.
const pollInterval = time.Second

// Activities apply, delete and read objects on clusters.
type Activities struct {
	Clients  *Clients
	Contexts *appctx.Store

	cacheMu sync.Mutex
	cache   []*appsCacheEntry // rendered apps of recent contexts (immutable once rendered)
}

type appsCacheEntry struct {
	ctxID string
	apps  map[string]*appctx.App
}

// apps returns the rendered apps of a context, cached: every cluster of a context needs them.
func (a *Activities) apps(ctx context.Context, ctxID string) (map[string]*appctx.App, error) {
	a.cacheMu.Lock()
	for _, e := range a.cache {
		if e.ctxID == ctxID {
			a.cacheMu.Unlock()
			return e.apps, nil
		}
	}
	a.cacheMu.Unlock()
	apps, err := a.Contexts.Apps(ctx, ctxID)
	if err != nil {
		return nil, err
	}
	a.cacheMu.Lock()
	a.cache = append([]*appsCacheEntry{{ctxID: ctxID, apps: apps}}, a.cache...)
	if len(a.cache) > 8 {
		a.cache = a.cache[:8]
	}
	a.cacheMu.Unlock()
	return apps, nil
}

// run is the state of one cluster activity.
type run struct {
	ctx     context.Context
	cl      *client
	header  *appctx.Context
	apps    map[string]*appctx.App
	byApp   map[string]*appctx.ClusterApp
	attempt int32
	result  lifecycle.ClusterResult
}

// ApplyCluster applies every app placed on one cluster, in dependency order, and records
// each object's status. An unreachable cluster fails the activity (Temporal retries it
// with backoff) after marking its pending objects Retrying; an object the apiserver
// rejects is Failed and not retried.
func (a *Activities) ApplyCluster(ctx context.Context, in lifecycle.ClusterInput) (lifecycle.ClusterResult, error) {
	r, err := a.begin(ctx, in)
	if err != nil {
		return lifecycle.ClusterResult{}, err
	}
	if r.cl == nil { // permanently unusable cluster: already marked Failed
		return r.result, nil
	}
	for _, name := range r.header.Apps {
		p := r.byApp[name]
		if p == nil {
			continue
		}
		if err := r.applyApp(p); err != nil {
			r.markRetrying(name, err)
			if serr := a.Contexts.SaveAll(context.WithoutCancel(ctx), r.placements()); serr != nil {
				return r.result, serr
			}
			return r.result, err
		}
		if err := a.Contexts.SaveResources(ctx, p); err != nil {
			return r.result, err
		}
	}
	return r.result, nil
}

// begin loads what a cluster activity needs; a cluster that can never work (unregistered,
// no kubeconfig) gets all its resources Failed and a nil client.
func (a *Activities) begin(ctx context.Context, in lifecycle.ClusterInput) (*run, error) {
	header, err := a.Contexts.Get(ctx, in.ContextID)
	if err != nil {
		return nil, err
	}
	placements, err := a.Contexts.ClusterApps(ctx, in.ContextID, in.Cluster)
	if err != nil {
		return nil, err
	}
	apps, err := a.apps(ctx, in.ContextID)
	if err != nil {
		return nil, err
	}
	r := &run{ctx: ctx, header: header, apps: apps, byApp: map[string]*appctx.ClusterApp{}, attempt: activity.GetInfo(ctx).Attempt}
	for _, p := range placements {
		r.byApp[p.App] = p
	}
	r.cl, err = a.Clients.For(ctx, in.Cluster)
	var appErr *temporal.ApplicationError
	if errors.As(err, &appErr) && appErr.NonRetryable() {
		for _, p := range placements {
			for i := range p.Resources {
				r.setFailed(&p.Resources[i], appErr.Message())
			}
		}
		r.cl = nil
		return r, a.Contexts.SaveAll(ctx, placements)
	}
	return r, err
}

func (r *run) placements() []*appctx.ClusterApp {
	out := make([]*appctx.ClusterApp, 0, len(r.byApp))
	for _, p := range r.byApp {
		out = append(out, p)
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
	for i := range p.Resources {
		res := &p.Resources[i]
		err := r.applyObject(app, &app.Objects[i], res)
		activity.RecordHeartbeat(r.ctx, p.App+"/"+res.Name)
		switch {
		case err == nil:
			res.Status, res.Error, res.Attempts, res.Updated = lifecycle.ResApplied, "", 0, time.Now().UTC()
			r.result.Done++
		case permanent(err):
			r.setFailed(res, err.Error())
		default:
			return err
		}
	}
	return nil
}

func (r *run) setFailed(res *appctx.ResourceStatus, msg string) {
	res.Status, res.Error, res.Updated = lifecycle.ResFailed, msg, time.Now().UTC()
	r.result.Failed++
}

// markRetrying records the transient failure on every object of app and of the apps
// after it that is not yet applied.
func (r *run) markRetrying(from string, cause error) {
	started := false
	for _, name := range r.header.Apps {
		started = started || name == from
		p := r.byApp[name]
		if !started || p == nil {
			continue
		}
		for i := range p.Resources {
			res := &p.Resources[i]
			if res.Status == lifecycle.ResPending || res.Status == lifecycle.ResRetrying {
				res.Status, res.Attempts, res.Error, res.Updated = lifecycle.ResRetrying, r.attempt, cause.Error(), time.Now().UTC()
			}
		}
	}
}

// applyObject server-side applies one object, labelled with the deployment id.
func (r *run) applyObject(app *appctx.App, obj *appctx.Object, res *appctx.ResourceStatus) error {
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON([]byte(obj.Manifest)); err != nil {
		return permanentErr{fmt.Errorf("stored manifest of %s is corrupt: %v", obj.Ref, err)}
	}
	res.Namespace = ""
	ri, ns, err := r.cl.resource(obj.Ref, r.defaultNamespace())
	if err != nil {
		return err
	}
	labels := u.GetLabels()
	if labels == nil {
		labels = map[string]string{}
	}
	labels[DeploymentIDLabel] = r.header.Instance + "-" + app.Name
	u.SetLabels(labels)
	if ns != "" {
		u.SetNamespace(ns)
		res.Namespace = ns
	}
	_, err = ri.Apply(r.ctx, u.GetName(), u, metav1.ApplyOptions{FieldManager: FieldManager, Force: true})
	if err != nil {
		return fmt.Errorf("apply %s: %w", obj.Ref, err)
	}
	if u.GetKind() == "CustomResourceDefinition" {
		r.cl.mapper.Reset() // the new kind must resolve for the objects that follow
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
		if d.OpStatus == model.OpStatusReady {
			if err := r.waitReady(dp); err != nil {
				return "", err
			}
		}
		if err := sleep(r.ctx, time.Duration(d.Wait)*time.Second); err != nil {
			return "", err
		}
	}
	return "", nil
}

// waitReady polls the objects of a placed app until all are ready.
func (r *run) waitReady(p *appctx.ClusterApp) error {
	for {
		ready := true
		for _, res := range p.Resources {
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
		activity.RecordHeartbeat(r.ctx, "waiting for "+p.App+" to be ready")
		if err := sleep(r.ctx, pollInterval); err != nil {
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

// resource resolves the API resource of ref and the namespace to use for it.
func (c *client) resource(ref appctx.Ref, defaultNS string) (dynamic.ResourceInterface, string, error) {
	gvk := schema.GroupVersionKind{Group: ref.Group, Version: ref.Version, Kind: ref.Kind}
	m, err := c.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if meta.IsNoMatchError(err) {
		c.mapper.Reset() // discovery may predate a CRD: look once more
		m, err = c.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	}
	if err != nil {
		if meta.IsNoMatchError(err) {
			return nil, "", permanentErr{fmt.Errorf("the cluster does not serve %s", gvk)}
		}
		return nil, "", fmt.Errorf("discover %s: %w", gvk, err)
	}
	if m.Scope.Name() != meta.RESTScopeNameNamespace {
		return c.dyn.Resource(m.Resource), "", nil
	}
	ns := ref.Namespace
	if ns == "" {
		ns = defaultNS
	}
	return c.dyn.Resource(m.Resource).Namespace(ns), ns, nil
}
