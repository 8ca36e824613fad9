package cluster

import (
	"context"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
)

func crd(kind, reason, at string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1", "kind": kind, "metadata": map[string]any{"name": "ippools.example.com"},
		"status": map[string]any{"conditions": []any{
			map[string]any{"type": "Established", "status": "True", "reason": "InitialNamesAccepted"},
			map[string]any{"type": "Terminating", "status": "True", "reason": reason, "lastTransitionTime": at,
				"message": "could not list instances: storage is (re)initializing"},
		}}}}
}

// A CRD whose cleanup the API server tried and failed says so, with since when; one in
// progress, or another kind, does not.
func TestCRDCleanupFailed(t *testing.T) {
	why, since := crdCleanupFailed(crd("CustomResourceDefinition", "InstanceDeletionFailed", "2026-11-27T13:47:01Z"))
	if !strings.Contains(why, "InstanceDeletionFailed: could not list instances: storage is (re)initializing") ||
		!since.Equal(time.Date(2026, 11, 27, 13, 47, 1, 0, time.UTC)) {
		t.Errorf("failed cleanup: %q since %v", why, since)
	}
	for _, u := range []*unstructured.Unstructured{crd("CustomResourceDefinition", "InstanceDeletionInProgress", "2026-11-27T13:47:01Z"),
		crd("Widget", "InstanceDeletionFailed", "2026-11-27T13:47:01Z")} {
		if why, _ := crdCleanupFailed(u); why != "" {
			t.Errorf("%s %v: %q, want no failure", u.GetKind(), u.Object["status"], why)
		}
	}
}

// Asking again is an update of the CRD (any update runs the API server's finalizer again).
func TestRetryCRDCleanupTouchesTheCRD(t *testing.T) {
	gvr := schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	u := crd("CustomResourceDefinition", "InstanceDeletionFailed", "2026-11-27T13:47:01Z")
	dc := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{gvr: "CustomResourceDefinitionList"}, u)
	ctx := context.Background()
	if err := retryCRDCleanup(ctx, dc.Resource(gvr), u.GetName()); err != nil {
		t.Fatal(err)
	}
	got, err := dc.Resource(gvr).Get(ctx, u.GetName(), metav1.GetOptions{})
	if err != nil || got.GetAnnotations()[crdRetriedAnnotation] == "" {
		t.Fatalf("after the retry: %v %v", got.GetAnnotations(), err)
	}
}
