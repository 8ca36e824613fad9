// Which failures retrying cannot fix (a rejected object) and which it can (a cluster out of reach).

package cluster

import (
	"errors"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
)

// permanentErr marks failures that retrying cannot fix.
type permanentErr struct{ error }

func (e permanentErr) Unwrap() error { return e.error }

// permanent tells a rejected object (the apiserver's 4xx, an unknown kind) from a cluster
// that cannot be reached or is overloaded (retried).
func permanent(err error) bool {
	var pe permanentErr
	if errors.As(err, &pe) || meta.IsNoMatchError(err) {
		return true
	}
	var st apierrors.APIStatus
	if !errors.As(err, &st) {
		return false
	}
	switch code := st.Status().Code; {
	case code == 408 || code == 409 || code == 429:
		return false
	default:
		return code >= 400 && code < 500
	}
}
