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

// asApplied reports whether the live object already is what applying body would make it
// (appliedAs). Only a retried attempt asks (one GET instead of one apply): a worker that
// died mid-group took the last seconds of its heartbeats with it, and the statuses it saved
// may be older than what the cluster has — or newer, when another DIG deleted a shared
// object since, which is why the cluster, not the record, is asked. Any doubt (an error, an
// unreadable body) says no: the object is applied as usual, which is always safe.
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
	return appliedAs(live, body, r.scheduled)
}

// appliedAs reports whether temco's field manager applied live since the operation's
// first attempt was scheduled (since; the API server's clock, to the second) and live has
// every field body sets as set. Both are needed: desired fields alone cannot tell this
// operation's apply from an earlier revision's that set more fields (an update that drops
// a label), whose extra fields only an apply of body removes; an apply that changed
// nothing leaves the time as it was, and the object is applied again, harmlessly.
func appliedAs(live *unstructured.Unstructured, body []byte, since time.Time) bool {
	since = since.Truncate(time.Second)
	recent := false
	for _, f := range live.GetManagedFields() {
		if f.Manager == FieldManager && f.Operation == metav1.ManagedFieldsOperationApply && f.Subresource == "" && f.Time != nil {
			recent = !f.Time.Time.Before(since)
		}
	}
	var desired map[string]any
	if !recent || json.Unmarshal(body, &desired) != nil {
		return false
	}
	return len(drift.Compare(desired, live.Object)) == 0
}
