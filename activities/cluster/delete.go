package cluster

import (
	"context"
	"fmt"
	"time"

	"go.temporal.io/sdk/activity"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/temco/temco/internal/appctx"
	"github.com/temco/temco/internal/lifecycle"
)

// DeleteCluster deletes every object of the context from one cluster — apps in reverse
// dependency order, objects in reverse apply order — and waits until each is gone before
// marking it Deleted. Objects never applied are marked Deleted at once. An unreachable
// cluster fails the activity for Temporal to retry, its objects shown as Retrying.
func (a *Activities) DeleteCluster(ctx context.Context, in lifecycle.ClusterInput) (lifecycle.ClusterResult, error) {
	r, err := a.begin(ctx, in)
	if err != nil {
		return lifecycle.ClusterResult{}, err
	}
	if r.cl == nil { // the cluster is gone or unusable: nothing can be deleted there
		return r.result, nil
	}
	r.result = lifecycle.ClusterResult{}
	for i := len(r.header.Apps) - 1; i >= 0; i-- {
		p := r.byApp[r.header.Apps[i]]
		if p == nil {
			continue
		}
		if err := r.deleteApp(p); err != nil {
			r.markRetryingDelete(err)
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

func (r *run) deleteApp(p *appctx.ClusterApp) error {
	for i := len(p.Resources) - 1; i >= 0; i-- {
		res := &p.Resources[i]
		if res.Status == lifecycle.ResDeleted {
			r.result.Done++
			continue
		}
		if res.Status != lifecycle.ResPending { // it may exist on the cluster
			err := r.deleteObject(res.Ref)
			activity.RecordHeartbeat(r.ctx, p.App+"/"+res.Name)
			if err != nil && !permanent(err) {
				return err
			}
			if err != nil {
				res.Status, res.Error, res.Updated = lifecycle.ResFailed, err.Error(), time.Now().UTC()
				r.result.Failed++
				continue
			}
		}
		res.Status, res.Error, res.Attempts, res.Updated = lifecycle.ResDeleted, "", 0, time.Now().UTC()
		r.result.Done++
	}
	return nil
}

// deleteObject deletes and waits until the object is gone (finalizers included).
func (r *run) deleteObject(ref appctx.Ref) error {
	ri, _, err := r.cl.resource(ref, ref.Namespace)
	if err != nil {
		if permanent(err) {
			return nil // the kind is not served: nothing of it exists
		}
		return err
	}
	policy := metav1.DeletePropagationBackground
	err = ri.Delete(r.ctx, ref.Name, metav1.DeleteOptions{PropagationPolicy: &policy})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("delete %s: %w", ref, err)
	}
	for {
		u, err := r.cl.get(r.ctx, ref)
		if err != nil {
			return fmt.Errorf("wait for deletion of %s: %w", ref, err)
		}
		if u == nil {
			return nil
		}
		activity.RecordHeartbeat(r.ctx, "waiting for "+ref.String()+" to be deleted")
		if err := sleep(r.ctx, pollInterval/4); err != nil {
			return err
		}
	}
}

func (r *run) markRetryingDelete(cause error) {
	for _, p := range r.byApp {
		for i := range p.Resources {
			res := &p.Resources[i]
			if res.Status != lifecycle.ResDeleted && res.Status != lifecycle.ResPending {
				res.Status, res.Attempts, res.Error, res.Updated = lifecycle.ResRetrying, r.attempt, cause.Error(), time.Now().UTC()
			}
		}
	}
}
