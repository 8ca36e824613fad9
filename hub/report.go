package hub

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"net/url"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/log"

	v1 "github.com/temco/temco/hubapi/v1alpha1"
)

// declaration is what the hub tells temco's diagnostics about one object
// (PUT /v2/diagnostics/declarations): a refused object has no temco resource to show.
type declaration struct {
	Object     string    `json:"object"` // Kind/namespace/name, or Kind/name
	Kind       string    `json:"kind"`
	Namespace  string    `json:"namespace,omitempty"`
	Name       string    `json:"name"`
	Generation int64     `json:"generation"`
	Project    string    `json:"project,omitempty"`
	Path       string    `json:"path,omitempty"`
	Accepted   bool      `json:"accepted"`
	Message    string    `json:"message,omitempty"`
	Time       time.Time `json:"time"`
}

// maxReportMessage is the longest message the API takes in a declaration.
const maxReportMessage = 4096

// reports remembers what was last reported per object, so that only changes are sent
// (a restarted hub sends each once more: the API keeps the last).
type reports struct{ sent sync.Map }

// report sends o's declaration when it changed. Diagnostics are not the object's
// configuration: a failure is logged and the next change sends again.
func (r *Reconciler) report(ctx context.Context, kind, project string, o object) {
	st := o.StatusCommon()
	c := meta.FindStatusCondition(st.Conditions, v1.Accepted)
	if c == nil {
		return
	}
	owner := ownerOf(kind, o)
	msg := c.Message
	if len(msg) > maxReportMessage {
		msg = msg[:maxReportMessage-3] + "..."
	}
	d := declaration{Object: owner[len("hub:"):], Kind: kind, Namespace: o.GetNamespace(), Name: o.GetName(), Generation: o.GetGeneration(),
		Project: project, Path: st.Path, Accepted: c.Status == metav1.ConditionTrue, Message: msg, Time: c.LastTransitionTime.UTC()}
	bare := d
	bare.Time = time.Time{} // the condition's time, as read back, is rounded to the second
	key, _ := json.Marshal(bare)
	sum := sha256.Sum256(key)
	if prev, ok := r.reports.sent.Load(d.Object); ok && prev == sum {
		return
	}
	// The report is the hub's own statement about its object, not the tenant's act: r.API
	// is not narrowed to the object's project.
	if err := r.API.OwnedBy(owner).Replace(ctx, "/diagnostics/declarations", d); err != nil {
		log.FromContext(ctx).Info("diagnostics not reported", "object", d.Object, "error", err.Error())
		return
	}
	r.reports.sent.Store(d.Object, sum)
}

// unreport removes a deleted object's declaration.
func (r *Reconciler) unreport(ctx context.Context, kind string, o object) {
	owner := ownerOf(kind, o)
	object := owner[len("hub:"):]
	if err := r.API.OwnedBy(owner).Delete(ctx, "/diagnostics/declarations?object="+url.QueryEscape(object)); err != nil {
		log.FromContext(ctx).Info("diagnostics not withdrawn", "object", object, "error", err.Error())
		return
	}
	r.reports.sent.Delete(object)
}
