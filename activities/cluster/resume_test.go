package cluster

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// A retried attempt applies an object again unless the cluster has it as temco applied it.
func TestAppliedAsAsksForTheFieldsAndTheManager(t *testing.T) {
	body := []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cfg","labels":{"a":"1"}},"data":{"k":"v"}}`)
	live := func(manager string, op metav1.ManagedFieldsOperationType, data string) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"name": "cfg", "labels": map[string]any{"a": "1"}, "resourceVersion": "7"},
			"data":     map[string]any{"k": data}}}
		u.SetManagedFields([]metav1.ManagedFieldsEntry{{Manager: "kube-controller-manager", Operation: metav1.ManagedFieldsOperationUpdate},
			{Manager: manager, Operation: op}})
		return u
	}
	cases := []struct {
		name string
		live *unstructured.Unstructured
		body []byte
		want bool
	}{
		{"applied by temco as is", live(FieldManager, metav1.ManagedFieldsOperationApply, "v"), body, true},
		{"a field differs", live(FieldManager, metav1.ManagedFieldsOperationApply, "w"), body, false},
		{"the same fields, written by kubectl", live("kubectl", metav1.ManagedFieldsOperationApply, "v"), body, false},
		{"temco's manager, but an update, not an apply", live(FieldManager, metav1.ManagedFieldsOperationUpdate, "v"), body, false},
		{"an unreadable body", live(FieldManager, metav1.ManagedFieldsOperationApply, "v"), []byte("{"), false},
	}
	for _, c := range cases {
		if got := appliedAs(c.live, c.body); got != c.want {
			t.Errorf("%s: appliedAs = %v, want %v", c.name, got, c.want)
		}
	}
}
