package cluster

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// A retried attempt applies an object again unless the cluster has it as temco applied it
// during the operation.
func TestAppliedAsAsksForTheFieldsTheManagerAndTheTime(t *testing.T) {
	scheduled := time.Date(2026, 11, 27, 21, 0, 0, 700_000_000, time.UTC)
	during, before := metav1.NewTime(scheduled.Add(2*time.Second)), metav1.NewTime(scheduled.Add(-time.Minute))
	body := []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cfg","labels":{"a":"1"}},"data":{"k":"v"}}`)
	live := func(manager string, op metav1.ManagedFieldsOperationType, data string, at metav1.Time) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"name": "cfg", "labels": map[string]any{"a": "1"}, "resourceVersion": "7"},
			"data":     map[string]any{"k": data}}}
		u.SetManagedFields([]metav1.ManagedFieldsEntry{{Manager: "kube-controller-manager", Operation: metav1.ManagedFieldsOperationUpdate},
			{Manager: manager, Operation: op, Time: &at}})
		return u
	}
	cases := []struct {
		name string
		live *unstructured.Unstructured
		body []byte
		want bool
	}{
		{"applied by temco as is during the operation", live(FieldManager, metav1.ManagedFieldsOperationApply, "v", during), body, true},
		{"in the second the operation was scheduled", live(FieldManager, metav1.ManagedFieldsOperationApply, "v", metav1.NewTime(scheduled.Truncate(time.Second))), body, true},
		{"applied by temco before the operation (maybe with more fields)", live(FieldManager, metav1.ManagedFieldsOperationApply, "v", before), body, false},
		{"a field differs", live(FieldManager, metav1.ManagedFieldsOperationApply, "w", during), body, false},
		{"the same fields, written by kubectl", live("kubectl", metav1.ManagedFieldsOperationApply, "v", during), body, false},
		{"temco's manager, but an update, not an apply", live(FieldManager, metav1.ManagedFieldsOperationUpdate, "v", during), body, false},
		{"an unreadable body", live(FieldManager, metav1.ManagedFieldsOperationApply, "v", during), []byte("{"), false},
	}
	for _, c := range cases {
		if got := appliedAs(c.live, c.body, scheduled); got != c.want {
			t.Errorf("%s: appliedAs = %v, want %v", c.name, got, c.want)
		}
	}
}
