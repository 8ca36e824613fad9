package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"go.temporal.io/sdk/activity"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/temco/temco/internal/core/appctx"
	"github.com/temco/temco/internal/core/lifecycle"
)

// DeleteCluster deletes every object of the context from one cluster — apps in reverse
// dependency order, objects in reverse apply order — and waits until each is gone before
// marking it Deleted. Objects never applied are marked Deleted at once. An unreachable
// cluster fails the activity for Temporal to retry, its objects shown as Retrying.
func (a *Activities) DeleteCluster(ctx context.Context, in lifecycle.ClusterInput) (out lifecycle.ClusterResult, err error) {
	ctx, traced := traceCluster(ctx, in, "delete")
	defer traced(&out, &err)
	defer a.observe(ctx, in, "delete", time.Now(), &err)
	r, err := a.begin(ctx, in)
	if err != nil {
		return lifecycle.ClusterResult{}, err
	}
	if r.target == nil { // the cluster is gone or unusable: nothing can be deleted there
		return r.result, nil
	}
	r.result = lifecycle.ClusterResult{}
	err = r.remove(ctx, nil, nil)
	return r.result, err
}

// PruneCluster deletes from one cluster what the previous revision (in.ContextID) applied
// there and the next one (in.Next) no longer has, waits until it is gone, and marks it
// Deleted in the previous revision's AppContext. Apps and clusters the next revision
// dropped are removed whole this way.
func (a *Activities) PruneCluster(ctx context.Context, in lifecycle.ClusterInput) (out lifecycle.ClusterResult, err error) {
	ctx, traced := traceCluster(ctx, in, "prune")
	defer traced(&out, &err)
	defer a.observe(ctx, in, "prune", time.Now(), &err)
	r, err := a.begin(ctx, lifecycle.ClusterInput{ContextID: in.ContextID, Cluster: in.Cluster})
	if err != nil {
		return lifecycle.ClusterResult{}, err
	}
	if r.target == nil {
		return r.result, nil
	}
	next, err := a.Contexts.ClusterApps(ctx, in.Next, in.Cluster)
	if err != nil {
		return lifecycle.ClusterResult{}, err
	}
	r.result = lifecycle.ClusterResult{}
	prune := toPrune(r.placements(), next)
	if len(prune) == 0 {
		return r.result, nil
	}
	nextHeader, nextApps, err := a.context(ctx, in.Next, true)
	if err != nil {
		return lifecycle.ClusterResult{}, err
	}
	err = r.remove(ctx, prune, &placed{header: nextHeader, placements: next, apps: appctx.ForCluster(nextApps, next)})
	return r.result, err
}

// remove deletes the placed objects (only those listed in only, when it is not nil) and
// saves their statuses; next is what the cluster keeps (nil: nothing).
func (r *run) remove(ctx context.Context, only map[string][]int, next *placed) error {
	if err := r.target.remove(r, only, next); err != nil {
		r.markRetryingDelete(err, only)
		if serr := r.save(context.WithoutCancel(ctx)); serr != nil {
			return serr
		}
		return err
	}
	if _, ok := r.target.(*agentCluster); ok { // the agent reports the outcome
		return nil
	}
	missing := r.failUnreached(lifecycle.ResDeleted, only)
	if err := r.flush(ctx); err != nil {
		return err
	}
	return missing
}

// remove deletes the objects, an app after every app that depends on it.
func (c *client) remove(r *run, only map[string][]int, _ *placed) error {
	dependents := map[string][]string{}
	for _, name := range r.placedApps() {
		for _, d := range depNames(r.apps[name]) {
			dependents[d] = append(dependents[d], name)
		}
	}
	return inOrder(r.placedApps(), func(app string) []string { return dependents[app] }, func(app string) error {
		var idx []int
		if only != nil {
			if idx = only[app]; len(idx) == 0 {
				return nil
			}
		}
		return r.deleteApp(r.byApp[app], idx)
	})
}

// deleteApp deletes an app's objects (those at the indices in only, when given):
// everything but Namespaces and CRDs concurrently, then the CRDs, then the Namespaces.
func (r *run) deleteApp(p *appctx.ClusterApp, only []int) error {
	groups := applyGroups(r.apps[p.App].Objects)
	for g := len(groups) - 1; g >= 0; g-- {
		group := groups[g]
		if only != nil {
			group = slices.DeleteFunc(slices.Clone(group), func(i int) bool { return !slices.Contains(only, i) })
		}
		err := forEach(group, func(i int) error {
			res := &p.Resources[i]
			if res.Status != lifecycle.ResDeleted && res.Status != lifecycle.ResPending { // it may exist
				err := r.deleteObject(res.Ref, func(note string) { r.noteWaiting(res, note) })
				r.heartbeat(p.App + "/" + res.Name)
				if err != nil && !permanent(err) {
					return err
				}
				if err != nil {
					r.setFailed(res, err.Error())
					return r.progress(r.ctx)
				}
			}
			r.settle(res, lifecycle.ResDeleted, "")
			return r.progress(r.ctx)
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// deletionNoticeAfter is how long an object's deletion may take before its status says
// what it waits for: a finalizer whose controller is gone holds a terminate for good, and
// the operator must see which object and which finalizer, not only "Terminating".
const deletionNoticeAfter = 10 * time.Second

// deleteObject deletes and waits until the object is gone (finalizers included). One
// found without a deletion timestamp is not the one deleted, whose delete either removed it
// or marked it: another controller made it again (Kubernetes' ClusterRole aggregation, an
// operator), and it is not waited for. waiting is told, once the wait is long, what the
// object waits for.
func (r *run) deleteObject(ref appctx.Ref, waiting func(note string)) error {
	m, err := r.cl.mapping(ref, ref.Namespace)
	if err != nil {
		if permanent(err) {
			return nil // the kind is not served: nothing of it exists
		}
		return err
	}
	res := r.cl.rest.Delete().AbsPath(m.path(ref.Name)...).SetHeader("Content-Type", "application/json").
		Body(deleteBackground).Do(r.ctx)
	raw, _ := res.Raw()
	err = res.Error() // the API server's Status made an error (Raw's is not)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("delete %s: %w", ref, err)
	}
	if deletedAtOnce(raw) {
		return nil
	}
	ri, err := r.cl.resource(ref)
	if err != nil {
		return err
	}
	noted, retried := "", time.Time{}
	for {
		u, err := r.cl.get(r.ctx, ref)
		if err != nil {
			return fmt.Errorf("wait for deletion of %s: %w", ref, err)
		}
		if u == nil || u.GetDeletionTimestamp() == nil {
			return nil
		}
		note := "waiting for its deletion: finalizers " + strings.Join(u.GetFinalizers(), ", ")
		if len(u.GetFinalizers()) == 0 {
			note = "waiting for its deletion"
		}
		if why, since := crdCleanupFailed(u); why != "" {
			note += " (the API server's cleanup: " + why + ")"
			if time.Since(since) >= crdRetryAfter && time.Since(retried) >= crdRetryAfter {
				retried = time.Now()
				if err := retryCRDCleanup(r.ctx, ri, ref.Name); err == nil && activity.IsActivity(r.ctx) {
					activity.GetLogger(r.ctx).Info("asked the API server to clean a deleted CRD up again", "crd", ref.Name, "context", r.header.ID, "failed", why)
				}
			}
		}
		if since := u.GetDeletionTimestamp().Time; time.Since(since) >= deletionNoticeAfter && note != noted {
			waiting(fmt.Sprintf("%s (deleted at %s)", note, since.UTC().Format(time.RFC3339)))
			noted = note
		}
		r.heartbeat("waiting for " + ref.String() + " to be deleted")
		if err := sleep(r.ctx, pollInterval/4); err != nil {
			return err
		}
	}
}

// deleteBackground is the body of temco's deletes: dependents are deleted by the cluster's
// garbage collector, after the object.
var deleteBackground = func() []byte {
	policy := metav1.DeletePropagationBackground
	b, _ := json.Marshal(&metav1.DeleteOptions{TypeMeta: metav1.TypeMeta{Kind: "DeleteOptions", APIVersion: "v1"}, PropagationPolicy: &policy})
	return b
}()

// deletedAtOnce tells from the answer to a delete that the object is gone: the API server
// answers with the object as it was when it removed it at once, and with it marked
// (deletionTimestamp) when its deletion waits (finalizers, a grace period). Then it is
// read until gone; otherwise no read follows (a raw delete's one request per object).
func deletedAtOnce(raw []byte) bool {
	var answer struct {
		Kind     string `json:"kind"`
		Metadata struct {
			DeletionTimestamp *string `json:"deletionTimestamp"`
		} `json:"metadata"`
	}
	if json.Unmarshal(raw, &answer) != nil {
		return false // read until gone, as before
	}
	return answer.Kind == "Status" || answer.Metadata.DeletionTimestamp == nil
}

// markRetryingDelete records a transient failure on every object still to delete.
func (r *run) markRetryingDelete(cause error, only map[string][]int) {
	for _, p := range r.byApp {
		for i := range p.Resources {
			res := &p.Resources[i]
			if only != nil && !slices.Contains(only[p.App], i) {
				continue
			}
			if res.Status != lifecycle.ResDeleted && res.Status != lifecycle.ResPending {
				res.Status, res.Attempts, res.Error, res.Updated = lifecycle.ResRetrying, r.attempt, cause.Error(), time.Now().UTC()
			}
		}
	}
}
