package cluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// status is an error as client-go decodes an API server's Status answer.
func status(code int32, reason metav1.StatusReason, msg string, causes ...metav1.StatusCause) error {
	s := metav1.Status{Status: metav1.StatusFailure, Code: code, Reason: reason, Message: msg}
	if len(causes) > 0 {
		s.Details = &metav1.StatusDetails{Causes: causes}
	}
	return &apierrors.StatusError{ErrStatus: s}
}

// Every status reason an API server answers an apply with, and the failures of reaching
// it: those no retry mends fail the object at once, the others are retried.
func TestPermanentTellsRejectedObjectsFromFailuresALaterTryMayPass(t *testing.T) {
	gr := schema.GroupResource{Resource: "configmaps"}
	widget := schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Widget"}
	cases := []struct {
		name string
		err  error
		want bool
	}{
		// Refused for what the object is: never retried.
		{"422 Invalid", apierrors.NewInvalid(schema.GroupKind{Kind: "ConfigMap"}, "x", field.ErrorList{field.Required(field.NewPath("data"), "")}), true},
		{"400 BadRequest", apierrors.NewBadRequest("the object has been modified badly"), true},
		{"403 Forbidden (RBAC)", apierrors.NewForbidden(gr, "x", errors.New("user cannot create configmaps in namespace kube-system")), true},
		{"403 admission webhook denied", status(403, metav1.StatusReasonForbidden, `admission webhook "policy.example.com" denied the request: no latest tags`), true},
		{"400 admission webhook denied", status(400, metav1.StatusReasonBadRequest, `admission webhook "v.example.com" denied the request`), true},
		{"404 namespace not found", apierrors.NewNotFound(schema.GroupResource{Resource: "namespaces"}, "missing"), true},
		{"405 MethodNotAllowed", apierrors.NewMethodNotSupported(gr, "patch"), true},
		{"406 NotAcceptable", status(406, metav1.StatusReasonNotAcceptable, "not acceptable"), true},
		{"410 Gone", apierrors.NewGone("gone"), true},
		{"413 RequestEntityTooLarge", apierrors.NewRequestEntityTooLargeError("limit is 3145728"), true},
		{"415 UnsupportedMediaType", status(415, metav1.StatusReasonUnsupportedMediaType, "application/apply-patch+yaml"), true},
		{"wrapped 422", fmt.Errorf("apply: %w", apierrors.NewInvalid(schema.GroupKind{Kind: "ConfigMap"}, "x", nil)), true},
		{"a schema the server cannot take", permanentErr{fmt.Errorf("apply: %w", status(500, metav1.StatusReasonInternalError,
			"failed to create typed patch object (apps/v1, Kind=DaemonSet): .spec.replicas: field not declared in schema"))}, true},
		{"unserved kind", unservedErr{widget}, true},
		{"no match", &meta.NoKindMatchError{GroupKind: widget.GroupKind()}, true},
		// Failures a later try may pass: retried.
		{"401 Unauthorized", apierrors.NewUnauthorized("certificate expired"), false},
		{"403 namespace terminating", status(403, metav1.StatusReasonForbidden, `unable to create new content in namespace web because it is being terminated`,
			metav1.StatusCause{Type: corev1.NamespaceTerminatingCause, Field: "metadata.namespace", Message: "web"}), false},
		{"408 Timeout", status(408, metav1.StatusReasonTimeout, "request timeout"), false},
		{"409 Conflict", apierrors.NewConflict(gr, "x", errors.New("the object has been modified")), false},
		{"409 AlreadyExists", apierrors.NewAlreadyExists(gr, "x"), false},
		{"429 TooManyRequests", apierrors.NewTooManyRequests("slow down", 1), false},
		{"500 InternalError", apierrors.NewInternalError(errors.New("etcdserver: request timed out")), false},
		{"500 webhook unreachable", status(500, metav1.StatusReasonInternalError,
			`Internal error occurred: failed calling webhook "v.example.com": dial tcp 10.0.0.1:443: connect: connection refused`), false},
		{"503 ServiceUnavailable", apierrors.NewServiceUnavailable("down"), false},
		{"504 Timeout", apierrors.NewTimeoutError("the server was unable to return a response in time", 1), false},
		{"connection refused", &url.Error{Op: "Patch", URL: "https://127.0.0.1:1", Err: &net.OpError{Op: "dial", Err: errors.New("connection refused")}}, false},
		{"deadline", fmt.Errorf("apply: %w", context.DeadlineExceeded), false},
	}
	for _, c := range cases {
		if got := permanent(c.err); got != c.want {
			t.Errorf("%s: permanent(%v) = %v, want %v", c.name, c.err, got, c.want)
		}
	}
}

func TestAnUnservedKindFailsTheApplyOnlyAfterItsCRDHadTimeToCome(t *testing.T) {
	err := fmt.Errorf("apply: %w", unservedErr{schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Widget"}})
	if failsNow(err, time.Now().Add(-time.Second)) {
		t.Error("an unserved kind failed a second into the apply: its CRD may be on its way")
	}
	if !failsNow(err, time.Now().Add(-crdPatience-time.Second)) {
		t.Errorf("an unserved kind was still retried after %s", crdPatience)
	}
	if !failsNow(apierrors.NewBadRequest("bad"), time.Now()) || failsNow(apierrors.NewServiceUnavailable("down"), time.Now().Add(-time.Hour)) {
		t.Error("failsNow does not follow permanent for other errors")
	}
}

func TestSchemaRefusedTellsTheTypedConversionsRefusals(t *testing.T) {
	for msg, want := range map[string]bool{
		"failed to create typed patch object (/v1, Kind=ConfigMap): .spec: field not declared in schema": true,
		"failed to create typed live object (/v1, Kind=ConfigMap): errors":                               true,
		"etcdserver: request timed out": false,
	} {
		if got := schemaRefused(status(500, metav1.StatusReasonInternalError, msg)); got != want {
			t.Errorf("schemaRefused(%q) = %v, want %v", msg, got, want)
		}
	}
	if schemaRefused(errors.New("failed to create typed patch object")) {
		t.Error("an error that is not the API server's Status counted as its refusal")
	}
}
