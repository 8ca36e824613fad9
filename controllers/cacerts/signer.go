package cacerts

// The issuing cluster's own signer (issuer.go): kubernetes.io/kube-apiserver-client, run by
// every kube-controller-manager, through a certificates.k8s.io/v1 CertificateSigningRequest
// that temco approves itself.

import (
	"context"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/temco/temco/internal/adapters/csr"
	"github.com/temco/temco/internal/core/appctx"
)

// The signer and the usages it allows.
const signerName = certificatesv1.KubeAPIServerClientSignerName

var signerUsages = []any{string(certificatesv1.UsageDigitalSignature), string(certificatesv1.UsageKeyEncipherment),
	string(certificatesv1.UsageClientAuth)}

// minSignerDuration is the shortest certificate a Kubernetes signer issues.
const minSignerDuration = 10 * time.Minute

const apiCSR = "certificates.k8s.io/v1"

type kubeSigner struct{}

// request is the CertificateSigningRequest of one member's key, for the signer, valid for
// spec.duration.
func (kubeSigner) request(name string, sp *CertSpec, csrPEM []byte, labels map[string]string) (appctx.Object, error) {
	duration, err := time.ParseDuration(sp.Duration)
	if err != nil {
		return appctx.Object{}, invalid("spec.duration %q: %v", sp.Duration, err)
	}
	objs, err := toObjects([]map[string]any{{"apiVersion": apiCSR, "kind": "CertificateSigningRequest",
		"metadata": meta(name, "", labels, nil),
		"spec": map[string]any{"request": base64.StdEncoding.EncodeToString(csrPEM), "signerName": signerName,
			"usages": signerUsages, "expirationSeconds": int64(duration / time.Second)}}})
	if err != nil {
		return appctx.Object{}, err
	}
	return objs[0], nil
}

// issued approves the request (temco acts as the approver EMCO leaves to cert-manager's
// policy), waits for the signer's certificate and finds the CA that signed it.
func (kubeSigner) issued(ctx context.Context, on *issuingCluster, name string) ([]byte, []byte, error) {
	csrs := on.kube.CertificatesV1().CertificateSigningRequests()
	if err := csr.Approve(ctx, csrs, name, "TemcoCACertEnrollment", "approved by temco for a CA certificate intent's enrolment"); err != nil {
		return nil, nil, err
	}
	cert, err := csr.Wait{Timeout: on.wait, Poll: on.poll, Heartbeat: on.heartbeat}.Certificate(ctx, csrs, name)
	var refusal *csr.Refused
	switch {
	case errors.As(err, &refusal):
		return nil, nil, refused("CertificateSigningRequest %s was %s by the issuing cluster: %s %s", name, refusal.Condition, refusal.Reason, refusal.Message)
	case errors.Is(err, csr.ErrNotSigned):
		return nil, nil, fmt.Errorf("%w: does the issuing cluster's kube-controller-manager sign for %s?", err, signerName)
	case err != nil:
		return nil, nil, err
	}
	ca, err := signingCA(ctx, on, cert)
	return cert, ca, err
}

// signingCA finds, among the CAs the issuing cluster publishes for client certificates
// (what kube-apiserver-client signs with must be one of them) and the CA of its
// registered kubeconfig, the one that issued certPEM.
func signingCA(ctx context.Context, on *issuingCluster, certPEM []byte) ([]byte, error) {
	var bundle []byte
	if cm, err := on.kube.CoreV1().ConfigMaps("kube-system").Get(ctx, "extension-apiserver-authentication", metav1.GetOptions{}); err == nil {
		bundle = append(bundle, []byte(cm.Data["client-ca-file"])...)
		bundle = append(bundle, '\n')
	}
	bundle = append(bundle, on.cfg.CAData...)
	certs, err := parseCerts(certPEM)
	if err != nil {
		return nil, refused("the issued certificate: %v", err)
	}
	for rest := bundle; ; {
		var b *pem.Block
		if b, rest = pem.Decode(rest); b == nil {
			break
		}
		caPEM := pem.EncodeToMemory(b)
		if ca, err := parseCerts(caPEM); err == nil && ca[0].IsCA && certs[0].CheckSignatureFrom(ca[0]) == nil {
			return caPEM, nil
		}
	}
	return nil, refused("the certificate issued to %q chains to no CA the issuing cluster publishes", certs[0].Subject.CommonName)
}
