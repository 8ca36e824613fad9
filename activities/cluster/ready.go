package cluster

import (
	"context"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/temco/temco/internal/appctx"
)

// get reads an object as applied (ref carries the namespace used); nil when absent.
func (c *client) get(ctx context.Context, ref appctx.Ref) (*unstructured.Unstructured, error) {
	ri, err := c.resource(ref)
	if err != nil {
		if permanent(err) {
			return nil, nil // the kind is not served: nothing of it can exist
		}
		return nil, err
	}
	u, err := ri.Get(ctx, ref.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	return u, err
}

// ready reports whether an object exists and, for workloads, is ready.
func (c *client) ready(ctx context.Context, ref appctx.Ref) (bool, error) {
	u, err := c.get(ctx, ref)
	if err != nil || u == nil {
		return false, err
	}
	return Ready(u), nil
}

// Ready judges readiness from an object's status: Deployments Available with all replicas
// updated, StatefulSets and DaemonSets fully ready, Jobs complete, Pods Ready, CRDs
// Established; objects without such a status are ready once they exist.
func Ready(u *unstructured.Unstructured) bool {
	gen, _, _ := unstructured.NestedInt64(u.Object, "status", "observedGeneration")
	switch u.GetKind() {
	case "Deployment":
		want, found, _ := unstructured.NestedInt64(u.Object, "spec", "replicas")
		if !found {
			want = 1 // the apiserver's default
		}
		avail, _, _ := unstructured.NestedInt64(u.Object, "status", "availableReplicas")
		updated, _, _ := unstructured.NestedInt64(u.Object, "status", "updatedReplicas")
		return gen >= u.GetGeneration() && condition(u, "Available") && avail >= want && updated >= want
	case "StatefulSet":
		want, _, _ := unstructured.NestedInt64(u.Object, "spec", "replicas")
		ready, _, _ := unstructured.NestedInt64(u.Object, "status", "readyReplicas")
		return gen >= u.GetGeneration() && ready >= want
	case "DaemonSet":
		want, _, _ := unstructured.NestedInt64(u.Object, "status", "desiredNumberScheduled")
		ready, _, _ := unstructured.NestedInt64(u.Object, "status", "numberReady")
		return gen >= u.GetGeneration() && ready >= want
	case "Job":
		return condition(u, "Complete")
	case "Pod":
		return condition(u, "Ready")
	case "CustomResourceDefinition":
		return condition(u, "Established")
	}
	return true
}

func condition(u *unstructured.Unstructured, typ string) bool {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		m, ok := c.(map[string]any)
		if ok && m["type"] == typ && m["status"] == "True" {
			return true
		}
	}
	return false
}
