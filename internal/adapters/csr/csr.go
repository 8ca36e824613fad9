// Package csr has temco approve a Kubernetes CertificateSigningRequest and wait for its
// signer's certificate: what a logical cloud does for its user on each cluster and a CA
// certificate intent for each member's key on the issuing cluster.
package csr

import (
	"context"
	"errors"
	"fmt"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	certclient "k8s.io/client-go/kubernetes/typed/certificates/v1"
)

// Refused is a request the cluster Denied or Failed: it will never be signed.
type Refused struct {
	Name      string
	Condition certificatesv1.RequestConditionType
	Reason    string
	Message   string
}

func (e *Refused) Error() string {
	return fmt.Sprintf("CertificateSigningRequest %s was %s: %s %s", e.Name, e.Condition, e.Reason, e.Message)
}

// ErrNotSigned is a request approved yet not signed within the wait: its signer is
// missing or slow, which a later try may find otherwise.
var ErrNotSigned = errors.New("approved but not signed")

// Approve approves the request as temco (reason and message say why), unless it is.
func Approve(ctx context.Context, csrs certclient.CertificateSigningRequestInterface, name, reason, message string) error {
	csr, err := csrs.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("read CertificateSigningRequest %s: %w", name, err)
	}
	if Condition(csr, certificatesv1.CertificateApproved) != nil {
		return nil
	}
	csr.Status.Conditions = append(csr.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{
		Type: certificatesv1.CertificateApproved, Status: corev1.ConditionTrue, Reason: reason, Message: message})
	if _, err := csrs.UpdateApproval(ctx, name, csr, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("approve CertificateSigningRequest %s: %w", name, err)
	}
	return nil
}

// Wait is how a signature is waited for.
type Wait struct {
	Timeout   time.Duration     // the longest wait: then ErrNotSigned
	Poll      time.Duration     // between two looks
	Heartbeat func(what string) // the activity's heartbeat (nil: none)
}

// Certificate waits for the certificate of request name. A request Denied or Failed
// fails with *Refused at once; none signed within w.Timeout fails wrapping ErrNotSigned.
func (w Wait) Certificate(ctx context.Context, csrs certclient.CertificateSigningRequestInterface, name string) ([]byte, error) {
	deadline := time.Now().Add(w.Timeout)
	for {
		got, err := csrs.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return nil, fmt.Errorf("read CertificateSigningRequest %s: %w", name, err)
		}
		if len(got.Status.Certificate) > 0 {
			return got.Status.Certificate, nil
		}
		for _, t := range []certificatesv1.RequestConditionType{certificatesv1.CertificateDenied, certificatesv1.CertificateFailed} {
			if c := Condition(got, t); c != nil {
				return nil, &Refused{Name: name, Condition: t, Reason: c.Reason, Message: c.Message}
			}
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("CertificateSigningRequest %s is %w after %s", name, ErrNotSigned, w.Timeout)
		}
		if w.Heartbeat != nil {
			w.Heartbeat("waiting for the cluster to sign " + name)
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(w.Poll):
		}
	}
}

// Condition is the request's condition of type t when it holds (nil otherwise).
func Condition(csr *certificatesv1.CertificateSigningRequest, t certificatesv1.RequestConditionType) *certificatesv1.CertificateSigningRequestCondition {
	for i, c := range csr.Status.Conditions {
		if c.Type == t && c.Status == corev1.ConditionTrue {
			return &csr.Status.Conditions[i]
		}
	}
	return nil
}
