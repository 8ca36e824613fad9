package cacerts

// The issuer. EMCO asks cert-manager on the issuing cluster to sign (a cert-manager.io/v1
// CertificateRequest per member, read back through its monitor), which makes each member
// an intermediate CA of the issuer's. temco signs with what every Kubernetes cluster has:
// its kube-controller-manager's signer, through a certificates.k8s.io/v1
// CertificateSigningRequest that temco approves with the cluster's registered credentials
// (issuerRef {group: certificates.k8s.io, kind: Signer, name: kube-apiserver-client}).
// The certificate then chains to the issuing cluster's CA, but that signer never sets the
// CA bit (and allows only client-auth usages), so it is not itself a CA: isCA is stored
// and not honoured. cert-manager's own controller cannot be built here (the module proxy
// does not serve it), so that path would have nothing to prove it live.

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/temco/temco/internal/lifecycle"
)

// The signer and the usages it allows.
const signerName = certificatesv1.KubeAPIServerClientSignerName

var signerUsages = []any{string(certificatesv1.UsageDigitalSignature), string(certificatesv1.UsageKeyEncipherment),
	string(certificatesv1.UsageClientAuth)}

// minSignerDuration is the shortest certificate a Kubernetes signer issues.
const minSignerDuration = 10 * time.Minute

// signWait bounds one attempt's wait for a signature: then the step fails and Temporal
// retries it (the status shows why), rather than waiting unseen.
const signWait = 2 * time.Minute

// newKey generates a member's RSA key (PKCS #1 PEM, as EMCO stores it).
func newKey(bits int) ([]byte, error) {
	k, err := rsa.GenerateKey(rand.Reader, bits)
	if err != nil {
		return nil, fmt.Errorf("generate an RSA key of %d bits: %w", bits, err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(k)}), nil
}

func parseKey(keyPEM []byte) (*rsa.PrivateKey, error) {
	b, _ := pem.Decode(keyPEM)
	if b == nil {
		return nil, fmt.Errorf("stored key is not PEM")
	}
	return x509.ParsePKCS1PrivateKey(b.Bytes)
}

// certificateRequest is the PEM request of a member's key, as EMCO fills it: the subject
// and names of csrInfo, the member's common name.
func certificateRequest(sp *CertSpec, commonName string, keyPEM []byte) ([]byte, error) {
	key, err := parseKey(keyPEM)
	if err != nil {
		return nil, err
	}
	ci := sp.CSRInfo
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{
		SignatureAlgorithm: signatureAlgorithms[ci.Algorithm.SignatureAlgorithm], // 0: Go's choice for RSA
		Subject: pkix.Name{Country: ci.Subject.Locale.Country, Locality: ci.Subject.Locale.Locality,
			PostalCode: ci.Subject.Locale.PostalCode, Province: ci.Subject.Locale.Province,
			StreetAddress: ci.Subject.Locale.StreetAddress, CommonName: commonName,
			Organization: ci.Subject.Organization.Names, OrganizationalUnit: ci.Subject.Organization.Units},
		DNSNames: ci.DNSNames, EmailAddresses: ci.EmailAddresses,
	}, key)
	if err != nil {
		return nil, fmt.Errorf("certificate request: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der}), nil
}

// commonName is a member's, EMCO's: "<cert>-<provider>-<cluster>-ca[-<prefix>]".
func commonName(cert, cluster, prefix string) string {
	p, c := lifecycle.SplitClusterKey(cluster)
	cn := cert + "-" + p + "-" + c + "-ca"
	if prefix != "" {
		cn += "-" + prefix
	}
	return cn
}

// approveAndWait approves a request on the issuing cluster (temco acts as the approver
// EMCO leaves to cert-manager's policy) and waits for the signer's certificate.
func approveAndWait(ctx context.Context, cs kubernetes.Interface, name string) ([]byte, error) {
	csrs := cs.CertificatesV1().CertificateSigningRequests()
	csr, err := csrs.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("read CertificateSigningRequest %s: %w", name, err)
	}
	if !hasCondition(csr, certificatesv1.CertificateApproved) {
		csr.Status.Conditions = append(csr.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{
			Type: certificatesv1.CertificateApproved, Status: corev1.ConditionTrue, Reason: "TemcoCACertEnrollment",
			Message: "approved by temco for a CA certificate intent's enrolment"})
		if _, err := csrs.UpdateApproval(ctx, name, csr, metav1.UpdateOptions{}); err != nil {
			return nil, fmt.Errorf("approve CertificateSigningRequest %s: %w", name, err)
		}
	}
	deadline := time.Now().Add(signWait)
	for {
		got, err := csrs.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return nil, err
		}
		if len(got.Status.Certificate) > 0 {
			return got.Status.Certificate, nil
		}
		for _, t := range []certificatesv1.RequestConditionType{certificatesv1.CertificateDenied, certificatesv1.CertificateFailed} {
			if c := condition(got, t); c != nil {
				return nil, temporal.NewNonRetryableApplicationError(fmt.Sprintf("CertificateSigningRequest %s was %s by the issuing cluster: %s %s",
					name, t, c.Reason, c.Message), lifecycle.ErrInvalidInput, nil)
			}
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("CertificateSigningRequest %s is approved but not signed after %s: does the issuing cluster's kube-controller-manager sign for %s?",
				name, signWait, signerName)
		}
		activity.RecordHeartbeat(ctx, "waiting for the issuing cluster to sign "+name)
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
}

func hasCondition(csr *certificatesv1.CertificateSigningRequest, t certificatesv1.RequestConditionType) bool {
	return condition(csr, t) != nil
}

func condition(csr *certificatesv1.CertificateSigningRequest, t certificatesv1.RequestConditionType) *certificatesv1.CertificateSigningRequestCondition {
	for i, c := range csr.Status.Conditions {
		if c.Type == t && c.Status == corev1.ConditionTrue {
			return &csr.Status.Conditions[i]
		}
	}
	return nil
}

// issuingCA finds, among the CAs the issuing cluster publishes for client certificates
// (what kube-apiserver-client signs with must be one of them) and the CA of its
// registered kubeconfig, the one that issued cert (PEM), and checks cert is for keyPEM.
func issuingCA(ctx context.Context, cs kubernetes.Interface, cfg *rest.Config, certPEM, keyPEM []byte) ([]byte, error) {
	cert, err := parseCert(certPEM)
	if err != nil {
		return nil, err
	}
	key, err := parseKey(keyPEM)
	if err != nil {
		return nil, err
	}
	if pub, ok := cert.PublicKey.(*rsa.PublicKey); !ok || !pub.Equal(&key.PublicKey) {
		return nil, temporal.NewNonRetryableApplicationError("the issued certificate is not for the enrolled key", lifecycle.ErrInvalidInput, nil)
	}
	var bundle []byte
	if cm, err := cs.CoreV1().ConfigMaps("kube-system").Get(ctx, "extension-apiserver-authentication", metav1.GetOptions{}); err == nil {
		bundle = append(bundle, []byte(cm.Data["client-ca-file"])...)
		bundle = append(bundle, '\n')
	}
	bundle = append(bundle, cfg.CAData...)
	for rest := bundle; ; {
		var b *pem.Block
		b, rest = pem.Decode(rest)
		if b == nil {
			break
		}
		ca, err := x509.ParseCertificate(b.Bytes)
		if err != nil || !ca.IsCA {
			continue
		}
		roots := x509.NewCertPool()
		roots.AddCert(ca)
		if _, err := cert.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageAny}}); err == nil {
			return pem.EncodeToMemory(b), nil
		}
	}
	return nil, temporal.NewNonRetryableApplicationError(fmt.Sprintf("the certificate issued to %q chains to no CA the issuing cluster publishes",
		cert.Subject.CommonName), lifecycle.ErrInvalidInput, nil)
}

func parseCert(certPEM []byte) (*x509.Certificate, error) {
	b, _ := pem.Decode(certPEM)
	if b == nil || b.Type != "CERTIFICATE" {
		return nil, fmt.Errorf("issued certificate is not PEM")
	}
	return x509.ParseCertificate(b.Bytes)
}

// chain is what a member's Secret carries as tls.crt: its certificate, then the CA's.
func chain(certPEM, caPEM []byte) []byte {
	return append(bytes.Join([][]byte{bytes.TrimRight(certPEM, "\n"), bytes.TrimRight(caPEM, "\n")}, []byte("\n")), '\n')
}
