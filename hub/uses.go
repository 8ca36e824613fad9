package hub

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "github.com/temco/temco/hubapi/v1alpha1"
	"github.com/temco/temco/internal/core/diagnostics"
)

// compositeAppHash is the applied hash of the hub's CompositeApp a DIG deploys (in a
// namespace bound to the same project, with the same temco name and version); "" when
// REST declares it. While the hub has not yet written the composite app's current
// generation, the DIG waits for it: deployed before, it would be deployed again (an
// update) once the composite app is.
//
// The informers of the two kinds are independent, so the DIG may be seen before its
// CompositeApp (both applied by one commit): "not in the cache" is REST's only when temco
// says so, and a composite app temco does not have yet is waited for too.
func (r *Reconciler) compositeAppHash(ctx context.Context, project string, o *v1.DeploymentIntentGroup) (string, error) {
	apps, err := r.compositeApps(ctx, project)
	if err != nil {
		return "", err
	}
	for _, a := range apps {
		if nameOf(a.Spec.Named, a.Name) == o.Spec.CompositeApp && a.Spec.Version == o.Spec.CompositeAppVersion {
			if a.Status.ObservedGeneration != a.Generation || !meta.IsStatusConditionTrue(a.Status.Conditions, v1.Accepted) {
				return "", &Refusal{Code: http.StatusConflict, Message: fmt.Sprintf("waits for CompositeApp %s/%s, not accepted yet", a.Namespace, a.Name)}
			}
			return a.Status.AppliedHash, nil
		}
	}
	p := fmt.Sprintf("/projects/%s/composite-apps/%s/%s", esc(project), esc(o.Spec.CompositeApp), esc(o.Spec.CompositeAppVersion))
	if err := checkPath(p); err != nil { // nothing is sent to a path apply would refuse
		return "", err
	}
	var s stored
	found, err := as(ctx, r.API).Get(ctx, p, &s)
	switch {
	case err != nil:
		return "", err
	case !found:
		return "", &Refusal{Code: http.StatusConflict, Message: fmt.Sprintf("waits for composite app %s version %s, not in temco yet", o.Spec.CompositeApp, o.Spec.CompositeAppVersion)}
	case strings.HasPrefix(s.Owner, diagnostics.OwnerPrefix):
		return "", &Refusal{Code: http.StatusConflict, Message: fmt.Sprintf("waits for %s, which declares composite app %s version %s, to be seen", strings.TrimPrefix(s.Owner, diagnostics.OwnerPrefix), o.Spec.CompositeApp, o.Spec.CompositeAppVersion)}
	}
	return "", nil
}

// compositeApps lists the CompositeApps of every namespace bound to project.
func (r *Reconciler) compositeApps(ctx context.Context, project string) ([]v1.CompositeApp, error) {
	namespaces, err := r.namespacesOf(ctx, project)
	if err != nil {
		return nil, err
	}
	var out []v1.CompositeApp
	for _, ns := range namespaces {
		var apps v1.CompositeAppList
		if err := r.Kube.List(ctx, &apps, client.InNamespace(ns)); err != nil {
			return nil, err
		}
		out = append(out, apps.Items...)
	}
	return out, nil
}

// digsUsing maps a CompositeApp to the DIGs of its project's namespaces that deploy it.
func (r *Reconciler) digsUsing(ctx context.Context, obj client.Object) []reconcile.Request {
	a, ok := obj.(*v1.CompositeApp)
	if !ok {
		return nil
	}
	project, err := r.projectOf(ctx, a.Namespace)
	if err != nil {
		return nil // an unbound composite app is nobody's
	}
	namespaces, err := r.namespacesOf(ctx, project)
	if err != nil {
		return nil // the periodic recheck comes anyway
	}
	var out []reconcile.Request
	for _, ns := range namespaces {
		var digs v1.DeploymentIntentGroupList
		if err := r.Kube.List(ctx, &digs, client.InNamespace(ns)); err != nil {
			return nil
		}
		for _, d := range digs.Items {
			if d.Spec.CompositeApp == nameOf(a.Spec.Named, a.Name) && d.Spec.CompositeAppVersion == a.Spec.Version {
				out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&d)})
			}
		}
	}
	return out
}
