// Package readiness judges whether a Kubernetes object is ready from its status, one rule
// for clusters temco reaches directly and for the status a GitOps cluster's monitor reports.
package readiness

import "k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

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
		// Pods of the old template still running mean the rollout has not finished, even
		// with enough updated and available ones: the updated ones may be the pending ones
		// and the available ones the old (as kubectl rollout status judges it).
		total, _, _ := unstructured.NestedInt64(u.Object, "status", "replicas")
		return gen >= u.GetGeneration() && condition(u, "Available") && avail >= want && updated >= want && total <= updated
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
