// ApplyCluster: server-side apply of the apps placed on one cluster, object by object.

package cluster

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/temco/temco/internal/core/appctx"
	"github.com/temco/temco/internal/core/lifecycle"
)

// FieldManager owns every field temco applies (server-side apply).
const FieldManager = "temco"

// ApplyCluster applies every app placed on one cluster, in dependency order, and records
// each object's status. An unreachable cluster fails the activity (Temporal retries it
// with backoff) after marking its pending objects Retrying; an object the apiserver
// rejects is Failed and not retried.
func (a *Activities) ApplyCluster(ctx context.Context, in lifecycle.ClusterInput) (out lifecycle.ClusterResult, err error) {
	ctx, traced := traceCluster(ctx, in, "apply")
	defer traced(&out, &err)
	defer a.observe(ctx, in, "apply", time.Now(), &err)
	r, err := a.begin(ctx, in)
	if err != nil {
		return lifecycle.ClusterResult{}, err
	}
	if r.target == nil { // permanently unusable cluster: already marked Failed
		return r.result, nil
	}
	return r.applyAll(ctx)
}

// applyAll applies a begun run and records its outcome.
func (r *run) applyAll(ctx context.Context) (lifecycle.ClusterResult, error) {
	if err := r.target.apply(r); err != nil {
		r.markRetrying(err)
		if serr := r.save(context.WithoutCancel(ctx)); serr != nil {
			return r.result, serr
		}
		return r.result, err
	}
	if r.result.Awaiting != nil { // given to the cluster's agent, which reports the outcome
		return r.result, nil
	}
	missing := r.failUnreached(lifecycle.ResApplied, nil)
	if err := r.flush(ctx); err != nil {
		return r.result, err
	}
	return r.result, missing
}

// apply server-side applies the apps, concurrently, each after the apps it depends on.
func (c *client) apply(r *run) error {
	return inOrder(r.placedApps(), func(app string) []string { return depNames(r.apps[app]) }, func(app string) error {
		return r.applyApp(r.byApp[app])
	})
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
			warning, err := r.applyObject(&app.Objects[i], res)
			r.heartbeat(p.App + "/" + res.Name)
			switch {
			case err == nil:
				r.settleWarned(res, lifecycle.ResApplied, "", warning)
			case failsNow(err, r.scheduled):
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
			r.cl.resetMapper()
			r.cl.schemas.forget()
		}
	}
	return nil
}

// applyObject server-side applies one object: its stored manifest is sent as is (the
// deployment-id label was added at rendering), into the default namespace when it names
// none, without the fields the cluster's schema does not declare (the warning names them).
// The response is not decoded: the status code says all we need.
//
// In an update, an object the previous revision applied with the same content is left
// alone: nothing on the cluster changes, not even its resourceVersion. So is, in a retried
// attempt, an object the cluster already has as applied (asApplied).
func (r *run) applyObject(obj *appctx.Object, res *appctx.ResourceStatus) (warning string, err error) {
	m, err := r.cl.mapping(obj.Ref, r.defaultNamespace())
	if err != nil {
		return "", err
	}
	r.mu.Lock() // a save may be reading the statuses
	res.Namespace = m.namespace
	r.mu.Unlock()
	p, err := r.cl.prune(r.ctx, obj)
	if err != nil {
		return "", err
	}
	if unchanged(r.applied, obj, m.namespace) || r.retried && r.asApplied(obj, m, p.bodyOf(obj)) {
		return dropWarning(p.Dropped), nil
	}
	err = r.patch(obj, m, p)
	if schemaRefused(err) {
		// The schema of a kind whose CRD was just established may not have been published
		// when the object was pruned: apply what its definition declares.
		if q, ok := r.cl.awaitSchema(r.ctx, obj, m, p); ok {
			p, err = q, r.patch(obj, m, q)
		}
	}
	switch {
	case schemaRefused(err):
		return "", permanentErr{fmt.Errorf("apply %s: %w", obj.Ref, err)}
	case err != nil:
		return "", fmt.Errorf("apply %s: %w", obj.Ref, err)
	}
	return dropWarning(p.Dropped), nil
}

// patch sends the server-side apply of obj, pruned as p says.
func (r *run) patch(obj *appctx.Object, m mapped, p prunedObject) error {
	return r.cl.rest.Patch(types.ApplyPatchType).AbsPath(m.path(obj.Name)...).
		Param("fieldManager", FieldManager).Param("force", "true").Body(p.bodyOf(obj)).Do(r.ctx).Error()
}

// bodyOf is what applying obj sends: its manifest as pruned, or as stored when nothing was.
func (p prunedObject) bodyOf(obj *appctx.Object) []byte {
	if p.Body == nil {
		return []byte(obj.Manifest)
	}
	return p.Body
}

func (r *run) defaultNamespace() string {
	if r.cl.namespace != "" {
		return r.cl.namespace
	}
	return r.header.Namespace
}
