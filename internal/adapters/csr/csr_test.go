package csr

import (
	"context"
	"errors"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

func request(name string, cert string, conds ...certificatesv1.RequestConditionType) *certificatesv1.CertificateSigningRequest {
	r := &certificatesv1.CertificateSigningRequest{ObjectMeta: metav1.ObjectMeta{Name: name}}
	r.Status.Certificate = []byte(cert)
	for _, c := range conds {
		r.Status.Conditions = append(r.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{
			Type: c, Status: corev1.ConditionTrue, Reason: "Policy", Message: "no"})
	}
	return r
}

// A request is approved once, signed ones return their certificate, Denied and Failed
// ones fail for good, and one never signed fails at the wait's end, to be retried.
func TestApproveAndWait(t *testing.T) {
	ctx := context.Background()
	csrs := fake.NewClientset(request("signed", "CERT"), request("denied", "", certificatesv1.CertificateDenied),
		request("failed", "", certificatesv1.CertificateApproved, certificatesv1.CertificateFailed), request("unsigned", "")).
		CertificatesV1().CertificateSigningRequests()
	for range 2 {
		if err := Approve(ctx, csrs, "signed", "Temco", "why"); err != nil {
			t.Fatal(err)
		}
	}
	got, _ := csrs.Get(ctx, "signed", metav1.GetOptions{})
	if n := len(got.Status.Conditions); n != 1 || Condition(got, certificatesv1.CertificateApproved) == nil {
		t.Errorf("conditions after two approvals: %+v", got.Status.Conditions)
	}
	w := Wait{Timeout: 30 * time.Millisecond, Poll: 5 * time.Millisecond}
	if cert, err := w.Certificate(ctx, csrs, "signed"); err != nil || string(cert) != "CERT" {
		t.Errorf("signed: %q, %v", cert, err)
	}
	for name, want := range map[string]certificatesv1.RequestConditionType{"denied": certificatesv1.CertificateDenied, "failed": certificatesv1.CertificateFailed} {
		var refused *Refused
		if _, err := w.Certificate(ctx, csrs, name); !errors.As(err, &refused) || refused.Condition != want || refused.Reason != "Policy" {
			t.Errorf("%s: %v, want it %s", name, err, want)
		}
	}
	beats := 0
	w.Heartbeat = func(string) { beats++ }
	if _, err := w.Certificate(ctx, csrs, "unsigned"); !errors.Is(err, ErrNotSigned) || beats == 0 {
		t.Errorf("unsigned: %v after %d heartbeats, want ErrNotSigned", err, beats)
	}
}
