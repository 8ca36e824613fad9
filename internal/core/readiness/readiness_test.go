package readiness

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func obj(kind string, gen int64, fields map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"kind": kind, "metadata": map[string]any{"generation": gen}}}
	for k, v := range fields {
		u.Object[k] = v
	}
	return u
}

func TestReady(t *testing.T) {
	available := []any{map[string]any{"type": "Available", "status": "True"}}
	cases := []struct {
		name string
		u    *unstructured.Unstructured
		want bool
	}{
		{"deployment available", obj("Deployment", 2, map[string]any{"spec": map[string]any{"replicas": int64(2)},
			"status": map[string]any{"observedGeneration": int64(2), "availableReplicas": int64(2), "updatedReplicas": int64(2), "conditions": available}}), true},
		{"deployment rolling out", obj("Deployment", 3, map[string]any{"spec": map[string]any{"replicas": int64(2)},
			"status": map[string]any{"observedGeneration": int64(2), "availableReplicas": int64(2), "updatedReplicas": int64(2), "conditions": available}}), false},
		{"deployment with a new pod pending and the old one serving", obj("Deployment", 2, map[string]any{"spec": map[string]any{"replicas": int64(1)},
			"status": map[string]any{"observedGeneration": int64(2), "replicas": int64(2), "availableReplicas": int64(1), "updatedReplicas": int64(1), "conditions": available}}), false},
		{"deployment short of replicas", obj("Deployment", 1, map[string]any{"spec": map[string]any{"replicas": int64(3)},
			"status": map[string]any{"observedGeneration": int64(1), "availableReplicas": int64(2), "updatedReplicas": int64(3), "conditions": available}}), false},
		{"statefulset ready", obj("StatefulSet", 1, map[string]any{"spec": map[string]any{"replicas": int64(1)},
			"status": map[string]any{"observedGeneration": int64(1), "readyReplicas": int64(1)}}), true},
		{"job running", obj("Job", 1, map[string]any{"status": map[string]any{}}), false},
		{"configmap exists", obj("ConfigMap", 0, nil), true},
		{"crd established", obj("CustomResourceDefinition", 1, map[string]any{"status": map[string]any{
			"conditions": []any{map[string]any{"type": "Established", "status": "True"}}}}), true},
		{"crd not yet established", obj("CustomResourceDefinition", 1, map[string]any{"status": map[string]any{}}), false},
	}
	for _, c := range cases {
		if got := Ready(c.u); got != c.want {
			t.Errorf("%s: Ready = %v, want %v", c.name, got, c.want)
		}
	}
}
