// A retried attempt asks each object's cluster before applying it, so that what an earlier
// attempt applied is not applied again.

package cluster

import (
	"context"
	"encoding/json"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/temco/temco/internal/core/appctx"
	"github.com/temco/temco/internal/core/drift"
)

// asApplied reports whether the live object already is what applying body would make it:
// present, applied by temco's field manager, and with every field body sets as set. Only a
// retried attempt asks (one GET instead of one apply): a worker that died mid-group took
// the last seconds of its heartbeats with it, and the statuses it saved may be older than
// what the cluster has — or newer, when another DIG deleted a shared object since, which is
// why the cluster, not the record, is asked. Any doubt (an error, an unreadable body) says
// no: the object is applied as usual.
func (r *run) asApplied(obj *appctx.Object, m mapped, body []byte) bool {
	ri := r.cl.dyn.Resource(m.gvr)
	ctx, cancel := context.WithTimeout(r.ctx, 10*time.Second)
	defer cancel()
	var (
		live *unstructured.Unstructured
		err  error
	)
	if m.namespace != "" {
		live, err = ri.Namespace(m.namespace).Get(ctx, obj.Name, metav1.GetOptions{})
	} else {
		live, err = ri.Get(ctx, obj.Name, metav1.GetOptions{})
	}
	if err != nil {
		return false
	}
	return appliedAs(live, body)
}

// appliedAs reports whether live has every field body sets and temco's field manager
// applied it. Without the manager a forced apply would still take ownership of the fields,
// which a later revision needs in order to remove them.
func appliedAs(live *unstructured.Unstructured, body []byte) bool {
	owned := false
	for _, f := range live.GetManagedFields() {
		if f.Manager == FieldManager && f.Operation == metav1.ManagedFieldsOperationApply {
			owned = true
		}
	}
	var desired map[string]any
	if !owned || json.Unmarshal(body, &desired) != nil {
		return false
	}
	return len(drift.Compare(desired, live.Object)) == 0
}
