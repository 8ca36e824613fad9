// Which failures retrying cannot fix (a rejected object) and which it can (a cluster out
// of reach, a namespace being deleted, a CRD not served yet).

package cluster

import (
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// permanentErr marks failures that retrying cannot fix.
type permanentErr struct{ error }

func (e permanentErr) Unwrap() error { return e.error }

// unservedErr is a kind the cluster does not serve. Reads and deletes take it as
// permanent (the objects went with their CRD); the apply retries it for a while, as the
// CRD may be on its way (another app, another DIG): see crdPatience.
type unservedErr struct{ gvk schema.GroupVersionKind }

func (e unservedErr) Error() string { return fmt.Sprintf("the cluster does not serve %s", e.gvk) }

// crdPatience is how long, from an apply's first attempt, an object whose kind the
// cluster does not serve is retried before it fails.
const crdPatience = 2 * time.Minute

// permanent tells a rejected object — invalid, of a schema the server cannot take,
// forbidden, refused by an admission webhook, in a missing namespace, of an unserved kind —
// from a failure a later try may pass: the cluster unreachable, overloaded or timing out
// (5xx, 429, 408), a conflict, credentials refused (401: the cluster's registration may be
// mended), a namespace still being deleted.
func permanent(err error) bool {
	var pe permanentErr
	var ue unservedErr
	if errors.As(err, &pe) || errors.As(err, &ue) || meta.IsNoMatchError(err) {
		return true
	}
	var st apierrors.APIStatus
	if !errors.As(err, &st) {
		return false
	}
	s := st.Status()
	switch code := s.Code; {
	case code == 401 || code == 408 || code == 409 || code == 429:
		return false
	case code == 403 && hasCause(s, corev1.NamespaceTerminatingCause):
		return false
	default:
		return code >= 400 && code < 500
	}
}

func hasCause(s metav1.Status, cause metav1.CauseType) bool {
	if s.Details == nil {
		return false
	}
	for _, c := range s.Details.Causes {
		if c.Type == cause {
			return true
		}
	}
	return false
}

// failsNow tells whether an object's apply error fails the object now: a permanent error,
// except an unserved kind within crdPatience of the apply's first attempt (scheduled).
func failsNow(err error, scheduled time.Time) bool {
	var ue unservedErr
	if errors.As(err, &ue) && time.Since(scheduled) < crdPatience {
		return false
	}
	return permanent(err)
}
