package cluster

// A CRD deleted moments after it was created can stay Terminating for good: the API
// server's CRD finalizer fails once ("could not list instances: storage is
// (re)initializing": the instances' storage is not ready yet), records
// InstanceDeletionFailed, and is not always run again (on the local clusters, about one
// terminate in ten of a chart whose CRDs were applied a second before; its log shows the
// one failure and nothing after). Any update of the CRD runs the finalizer again, so a CRD
// whose cleanup has failed for a while is touched with an annotation, which ends it once the
// storage is ready.

import (
	"context"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
)

// crdRetryAfter is how long a failed cleanup is left to the API server's own retry before
// temco touches the CRD, and how long between two touches.
const crdRetryAfter = 5 * time.Second

// crdRetriedAnnotation records when temco last asked the API server to clean a CRD up again.
const crdRetriedAnnotation = "temco.io/cleanup-retried"

// crdCleanupFailed says why the API server's cleanup of a deleted CRD failed, and since
// when ("" when it has not failed, or u is no CRD).
func crdCleanupFailed(u *unstructured.Unstructured) (why string, since time.Time) {
	if u.GetKind() != "CustomResourceDefinition" {
		return "", time.Time{}
	}
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] != "Terminating" || m["status"] != "True" || m["reason"] != "InstanceDeletionFailed" {
			continue
		}
		since, _ = time.Parse(time.RFC3339, fmt.Sprint(m["lastTransitionTime"]))
		return fmt.Sprintf("%v: %v", m["reason"], m["message"]), since
	}
	return "", time.Time{}
}

// retryCRDCleanup has the API server run its cleanup of the deleted CRD again.
func retryCRDCleanup(ctx context.Context, ri dynamic.ResourceInterface, name string) error {
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, crdRetriedAnnotation, time.Now().UTC().Format(time.RFC3339Nano))
	_, err := ri.Patch(ctx, name, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
	return err
}
