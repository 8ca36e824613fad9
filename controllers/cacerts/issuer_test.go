package cacerts

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"math/big"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/temporal"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	kubefake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"

	csrpkg "github.com/temco/temco/internal/adapters/csr"
	"github.com/temco/temco/internal/core/lifecycle"
)

// testCA is a CA of the tests, which signs certificates for keys.
type testCA struct {
	cert *x509.Certificate
	key  *rsa.PrivateKey
	pem  []byte
}

func newTestCA(t *testing.T, cn string, parent *testCA) *testCA {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	signer, signerKey := tmpl, key
	if parent != nil {
		signer, signerKey = parent.cert, parent.key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, signer, &key.PublicKey, signerKey)
	if err != nil {
		t.Fatal(err)
	}
	c, _ := x509.ParseCertificate(der)
	return &testCA{cert: c, key: key, pem: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
}

// sign issues a certificate for the key of keyPEM.
func (ca *testCA) sign(t *testing.T, keyPEM []byte, cn string) []byte {
	t.Helper()
	key, err := parseKey(keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

func permanent(err error) bool {
	var app *temporal.ApplicationError
	return errors.As(err, &app) && app.NonRetryable() && app.Type() == lifecycle.ErrInvalidInput
}

func TestIssuerFor(t *testing.T) {
	if _, ok := issuerFor(IssuerRef{Name: "ca", Kind: "ClusterIssuer", Group: GroupCertManager}).(certManager); !ok {
		t.Error("a cert-manager issuer is not cert-manager's")
	}
	if _, ok := issuerFor(IssuerRef{Name: SignerAPIServerClient, Kind: KindSigner, Group: GroupKubernetes}).(kubeSigner); !ok {
		t.Error("the cluster's signer is not the signer's")
	}
	if _, ok := issuerFor(IssuerRef{}).(kubeSigner); !ok {
		t.Error("a record of before the issuer was recorded is not the signer's")
	}
}

// EMCO's CertificateRequest: the request, isCA, the duration and the issuer, in namespace
// default of the issuing cluster; usages only where csrInfo names them.
func TestCertManagerRequest(t *testing.T) {
	sp := validCert()
	sp.Duration = "24h"
	sp.IssuerRef = IssuerRef{Name: "ca-issuer", Kind: "ClusterIssuer", Group: GroupCertManager}
	csr := []byte("-----BEGIN CERTIFICATE REQUEST-----\nREQ\n-----END CERTIFICATE REQUEST-----\n")
	labels := map[string]string{lifecycle.DeploymentIDLabel: "7-cert-enrollment"}
	for _, usages := range [][]string{nil, {"cert sign", "digital signature"}} {
		sp.CSRInfo.KeyUsages = usages
		obj, err := issuerFor(sp.IssuerRef).request("7-ca-p-c-cr", &sp, csr, labels)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(obj.Manifest), &m); err != nil {
			t.Fatal(err)
		}
		spec := m["spec"].(map[string]any)
		if obj.Kind != "CertificateRequest" || obj.Group != GroupCertManager || obj.Namespace != "default" || obj.Name != "7-ca-p-c-cr" ||
			m["apiVersion"] != "cert-manager.io/v1" || spec["request"] != base64.StdEncoding.EncodeToString(csr) ||
			spec["isCA"] != true || spec["duration"] != "24h0m0s" ||
			!jsonEq(spec["issuerRef"], map[string]any{"name": "ca-issuer", "kind": "ClusterIssuer", "group": "cert-manager.io"}) ||
			m["metadata"].(map[string]any)["labels"].(map[string]any)[lifecycle.DeploymentIDLabel] != "7-cert-enrollment" {
			t.Errorf("request %s", obj.Manifest)
		}
		if got, ok := spec["usages"]; (usages == nil) == ok || (ok && !jsonEq(got, []any{"cert sign", "digital signature"})) {
			t.Errorf("usages %v, want %v", got, usages)
		}
	}
}

func jsonEq(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}

// crObject is a CertificateRequest in namespace default with status.
func crObject(name string, status map[string]any) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "cert-manager.io/v1", "kind": "CertificateRequest",
		"metadata": map[string]any{"name": name, "namespace": "default"}, "spec": map[string]any{}, "status": status}}
}

func cond(typ, status, reason, message string) map[string]any {
	return map[string]any{"type": typ, "status": status, "reason": reason, "message": message}
}

func b64(b []byte) string { return base64.StdEncoding.EncodeToString(b) }

// What cert-manager's status says decides: issued (certificate and CA), refused for good
// (denied, invalid, failed: at once, with cert-manager's reason), or still pending (a
// retryable error saying what it waits for, once the attempt's wait is over).
func TestCertManagerIssued(t *testing.T) {
	root := newTestCA(t, "root", nil)
	key, err := newKey(2048)
	if err != nil {
		t.Fatal(err)
	}
	leaf := root.sign(t, key, "member")
	approved := cond("Approved", "True", "cert-manager.io", "Certificate request has been approved by cert-manager.io")
	objs := []runtime.Object{
		crObject("issued", map[string]any{"certificate": b64(leaf), "ca": b64(root.pem),
			"conditions": []any{approved, cond("Ready", "True", "Issued", "Certificate fetched from issuer successfully")}}),
		crObject("denied", map[string]any{"conditions": []any{cond("Denied", "True", "policy.cert-manager.io", "no policy approves it"),
			cond("Ready", "False", "Denied", "The CertificateRequest was denied by an approval controller")}}),
		crObject("failed", map[string]any{"conditions": []any{approved,
			cond("Ready", "False", "Failed", `Annotation "cert-manager.io/private-key-secret-name" missing or reference empty: secret name missing`)}}),
		crObject("invalid", map[string]any{"conditions": []any{cond("InvalidRequest", "True", "BadConfig", "the request is not PEM")}}),
		crObject("unapproved", map[string]any{}),
		crObject("pending", map[string]any{"conditions": []any{approved,
			cond("Ready", "False", "Pending", `Referenced "ClusterIssuer" not found: clusterissuer.cert-manager.io "ca-issuer" not found`)}}),
		crObject("no-ca", map[string]any{"certificate": b64(leaf), "conditions": []any{approved, cond("Ready", "True", "Issued", "")}}),
		crObject("later", map[string]any{"conditions": []any{approved, cond("Ready", "False", "Pending", "Waiting")}}),
	}
	dyn := dynamicfake.NewSimpleDynamicClient(runtime.NewScheme(), objs...)
	beats := 0
	on := &issuingCluster{dyn: dyn, wait: 50 * time.Millisecond, poll: 5 * time.Millisecond, heartbeat: func(string) { beats++ }}
	iss := issuerFor(IssuerRef{Name: "ca-issuer", Kind: "ClusterIssuer", Group: GroupCertManager})
	ctx := context.Background()

	cert, ca, err := iss.issued(ctx, on, "issued")
	if err != nil || string(cert) != string(leaf) || string(ca) != string(root.pem) {
		t.Fatalf("issued: %v", err)
	}
	if err := checkIssued(cert, ca, key); err != nil {
		t.Errorf("the issued certificate does not check: %v", err)
	}
	for _, c := range []struct{ name, want string }{
		{"denied", `CertificateRequest default/denied (ClusterIssuer "ca-issuer") denied: policy.cert-manager.io: no policy approves it`},
		{"failed", `failed: Failed: Annotation "cert-manager.io/private-key-secret-name" missing`},
		{"invalid", "invalidrequest: BadConfig: the request is not PEM"},
		{"no-ca", "without the issuer's CA (status.ca)"},
	} {
		_, _, err := iss.issued(ctx, on, c.name)
		if !permanent(err) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want a permanent error saying %q", c.name, err, c.want)
		}
	}
	for _, c := range []struct{ name, want string }{
		{"unapproved", "is not issued after 50ms: not approved yet"},
		{"pending", `approved, Ready False: Pending: Referenced "ClusterIssuer" not found`},
		{"absent", "not found"},
	} {
		_, _, err := iss.issued(ctx, on, c.name)
		if err == nil || permanent(err) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want a retryable error saying %q", c.name, err, c.want)
		}
	}
	if beats == 0 {
		t.Error("no heartbeat while waiting")
	}

	// Issued while waited for.
	on.wait = 10 * time.Second
	go func() {
		time.Sleep(30 * time.Millisecond)
		u := crObject("later", map[string]any{"certificate": b64(leaf), "ca": b64(root.pem)})
		_, _ = dyn.Resource(certificateRequests).Namespace("default").Update(ctx, u, metav1.UpdateOptions{})
	}()
	if cert, _, err := iss.issued(ctx, on, "later"); err != nil || string(cert) != string(leaf) {
		t.Errorf("issued while waited for: %v", err)
	}
}

// The cluster's signer: temco approves the CertificateSigningRequest, and the CA is the one
// of the cluster's client CAs that signed the certificate.
func TestKubeSignerIssued(t *testing.T) {
	clusterCA, other := newTestCA(t, "cluster-ca", nil), newTestCA(t, "front-proxy-ca", nil)
	key, _ := newKey(2048)
	leaf := clusterCA.sign(t, key, "member")
	kube := kubefake.NewClientset(
		&certificatesv1.CertificateSigningRequest{ObjectMeta: metav1.ObjectMeta{Name: "signed"}, Status: certificatesv1.CertificateSigningRequestStatus{Certificate: leaf}},
		&certificatesv1.CertificateSigningRequest{ObjectMeta: metav1.ObjectMeta{Name: "denied"}, Status: certificatesv1.CertificateSigningRequestStatus{
			Conditions: []certificatesv1.CertificateSigningRequestCondition{{Type: certificatesv1.CertificateDenied, Status: corev1.ConditionTrue, Reason: "NoWay", Message: "denied by policy"}}}},
		&certificatesv1.CertificateSigningRequest{ObjectMeta: metav1.ObjectMeta{Name: "unsigned"}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "extension-apiserver-authentication", Namespace: "kube-system"},
			Data: map[string]string{"client-ca-file": string(other.pem) + string(clusterCA.pem)}})
	on := &issuingCluster{kube: kube, cfg: &rest.Config{}, wait: 20 * time.Millisecond, poll: 5 * time.Millisecond}
	ctx := context.Background()
	cert, ca, err := kubeSigner{}.issued(ctx, on, "signed")
	if err != nil || string(cert) != string(leaf) || string(ca) != string(clusterCA.pem) {
		t.Fatalf("signed: %v, CA %s", err, ca)
	}
	csr, _ := kube.CertificatesV1().CertificateSigningRequests().Get(ctx, "signed", metav1.GetOptions{})
	if csrpkg.Condition(csr, certificatesv1.CertificateApproved) == nil {
		t.Error("temco did not approve the request")
	}
	if err := checkIssued(cert, ca, key); err != nil {
		t.Error(err)
	}
	if _, _, err := (kubeSigner{}).issued(ctx, on, "denied"); !permanent(err) || !strings.Contains(err.Error(), "Denied by the issuing cluster: NoWay denied by policy") {
		t.Errorf("denied: %v", err)
	}
	if _, _, err := (kubeSigner{}).issued(ctx, on, "unsigned"); err == nil || permanent(err) || !strings.Contains(err.Error(), "approved but not signed") {
		t.Errorf("unsigned: %v", err)
	}
}

// What an issuer returns must be for the enrolled key and chain to the CA it reports,
// through the intermediates it gives after the certificate.
func TestCheckIssued(t *testing.T) {
	root, other := newTestCA(t, "root", nil), newTestCA(t, "other", nil)
	inter := newTestCA(t, "intermediate", root)
	key, _ := newKey(2048)
	otherKey, _ := newKey(2048)
	direct, viaInter := root.sign(t, key, "m"), inter.sign(t, key, "m")
	for _, c := range []struct {
		name      string
		cert, ca  []byte
		key       []byte
		want      string // "" checks
		permanent bool
	}{
		{"signed by the CA", direct, root.pem, key, "", false},
		{"through an intermediate", append(append([]byte{}, viaInter...), inter.pem...), root.pem, key, "", false},
		{"the intermediate missing", viaInter, root.pem, key, "does not chain to the CA", true},
		{"another key's", direct, root.pem, otherKey, "is not for the enrolled key", true},
		{"another CA", direct, other.pem, key, "does not chain to the CA", true},
		{"no certificate", []byte("junk"), root.pem, key, "no PEM certificate", true},
	} {
		err := checkIssued(c.cert, c.ca, c.key)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v", c.name, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want) || permanent(err) != c.permanent):
			t.Errorf("%s: %v, want a permanent error saying %q", c.name, err, c.want)
		}
	}
}
