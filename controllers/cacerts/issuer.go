package cacerts

// The issuers. Enrolment asks the issuing cluster to sign each member's certificate
// request; what that takes depends on spec.issuerRef, and is behind one seam, issuer:
//
//   - a cert-manager issuer (group cert-manager.io, kind ClusterIssuer or Issuer), as in
//     EMCO: a cert-manager.io/v1 CertificateRequest per member, which cert-manager's
//     approver approves and the issuer signs; the certificate and the issuer's CA are read
//     from its status (certmanager.go). With isCA the members are intermediate CAs of
//     the issuer's;
//   - temco's addition, the issuing cluster's own signer (issuerRef {group:
//     certificates.k8s.io, kind: Signer, name: kube-apiserver-client}), for clusters
//     without cert-manager: a certificates.k8s.io/v1 CertificateSigningRequest that temco
//     approves with the cluster's registered credentials (signer.go). That signer never
//     sets the CA bit (and allows only client-auth usages): isCA is not honoured.

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

	"go.temporal.io/sdk/temporal"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/temco/temco/internal/core/appctx"
	"github.com/temco/temco/internal/core/lifecycle"
)

// issuer is what enrolment does differently for each kind of issuer.
type issuer interface {
	// request renders the object, named name, that asks the issuing cluster to sign a
	// member's certificate request (csrPEM) as sp says.
	request(name string, sp *CertSpec, csrPEM []byte, labels map[string]string) (appctx.Object, error)
	// issued waits, for one attempt (on.wait), until the issuing cluster has signed the
	// applied request name, and returns the certificate (PEM: the member's, then any
	// intermediates) and the CA that issued it (PEM). A request refused for good fails
	// with a non-retryable error saying why; one still pending with a retryable one.
	issued(ctx context.Context, on *issuingCluster, name string) (cert, ca []byte, err error)
}

// issuerFor is the issuer ref names (checked when stored). Records of enrolments made
// before the ref was recorded have none: the issuing cluster's signer was the only one.
func issuerFor(ref IssuerRef) issuer {
	if ref.Group == GroupCertManager {
		return certManager{ref: ref}
	}
	return kubeSigner{}
}

// issuingCluster is how issuers reach the issuing cluster.
type issuingCluster struct {
	cfg       *rest.Config
	kube      kubernetes.Interface
	dyn       dynamic.Interface
	wait      time.Duration     // one attempt's wait for a signature (signWait)
	poll      time.Duration     // between two looks
	heartbeat func(what string) // the activity's heartbeat
}

// newIssuingCluster reaches the cluster cfg points at.
func newIssuingCluster(cfg *rest.Config, heartbeat func(string)) (*issuingCluster, error) {
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return &issuingCluster{cfg: cfg, kube: kube, dyn: dyn, wait: signWait, poll: 250 * time.Millisecond, heartbeat: heartbeat}, nil
}

// waitFor calls look until it is done or fails, at most on.wait; then it fails with
// pending(), retryable: the step fails and Temporal retries it (the status shows why),
// rather than waiting unseen.
func (on *issuingCluster) waitFor(ctx context.Context, what string, look func() (done bool, err error), pending func() error) error {
	deadline := time.Now().Add(on.wait)
	for {
		done, err := look()
		if done || err != nil {
			return err
		}
		if time.Now().After(deadline) {
			return pending()
		}
		if on.heartbeat != nil {
			on.heartbeat(what)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(on.poll):
		}
	}
}

// signWait bounds one attempt's wait for a signature.
const signWait = 2 * time.Minute

func refused(format string, args ...any) error {
	return temporal.NewNonRetryableApplicationError(fmt.Sprintf(format, args...), lifecycle.ErrInvalidInput, nil)
}

// checkIssued checks what an issuer returned for keyPEM: the certificate is for that key
// and chains (through any intermediates after it) to the CA.
func checkIssued(certPEM, caPEM, keyPEM []byte) error {
	certs, err := parseCerts(certPEM)
	if err != nil {
		return refused("the issued certificate: %v", err)
	}
	cas, err := parseCerts(caPEM)
	if err != nil {
		return refused("the issuing CA: %v", err)
	}
	key, err := parseKey(keyPEM)
	if err != nil {
		return err
	}
	leaf := certs[0]
	if pub, ok := leaf.PublicKey.(*rsa.PublicKey); !ok || !pub.Equal(&key.PublicKey) {
		return refused("the certificate issued to %q is not for the enrolled key", leaf.Subject.CommonName)
	}
	roots, inter := x509.NewCertPool(), x509.NewCertPool()
	for _, c := range cas {
		roots.AddCert(c)
	}
	for _, c := range certs[1:] {
		inter.AddCert(c)
	}
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: roots, Intermediates: inter, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageAny}}); err != nil {
		return refused("the certificate issued to %q does not chain to the CA the issuer reports: %v", leaf.Subject.CommonName, err)
	}
	return nil
}

// parseCerts parses the certificates of a PEM bundle (at least one).
func parseCerts(data []byte) ([]*x509.Certificate, error) {
	var out []*x509.Certificate
	for rest := data; ; {
		var b *pem.Block
		b, rest = pem.Decode(rest)
		if b == nil {
			break
		}
		if b.Type != "CERTIFICATE" {
			return nil, fmt.Errorf("a %s in a certificate bundle", b.Type)
		}
		c, err := x509.ParseCertificate(b.Bytes)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no PEM certificate")
	}
	return out, nil
}

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

// chain is what a member's Secret carries as tls.crt: its certificate, then the CA's.
func chain(certPEM, caPEM []byte) []byte {
	return append(bytes.Join([][]byte{bytes.TrimRight(certPEM, "\n"), bytes.TrimRight(caPEM, "\n")}, []byte("\n")), '\n')
}
