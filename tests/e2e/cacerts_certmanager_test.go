package e2e

import (
	"context"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/temco/temco/internal/core/lifecycle"
	"github.com/temco/temco/internal/dev/devstack"
)

var (
	gvrCertificate        = schema.GroupVersionResource{Group: "cert-manager.io", Version: "v1", Resource: "certificates"}
	gvrCertificateRequest = schema.GroupVersionResource{Group: "cert-manager.io", Version: "v1", Resource: "certificaterequests"}
)

// cmIssuers are the cert-manager issuers the test makes on cluster1, the issuing cluster,
// as an operator would: a SelfSigned ClusterIssuer, a CA Certificate it issues (its Secret
// in cert-manager's namespace) and a CA ClusterIssuer signing with that CA.
type cmIssuers struct {
	selfSigned, ca string
	root           *x509.Certificate // the CA issuer's certificate
}

func makeCMIssuers(t *testing.T, cl *devstack.Cluster, prefix string) cmIssuers {
	t.Helper()
	return makeCMIssuersNamed(t, cl, prefix, prefix+"-ca")
}

// makeCMIssuersNamed makes the issuers with the CA ClusterIssuer named ca (an example's).
func makeCMIssuersNamed(t *testing.T, cl *devstack.Cluster, prefix, ca string) cmIssuers {
	t.Helper()
	ctx := context.Background()
	dc := dynClient(t, cl)
	is := cmIssuers{selfSigned: prefix + "-selfsigned", ca: ca}
	secret := prefix + "-root-ca"
	objs := []struct {
		gvr schema.GroupVersionResource
		obj map[string]any
	}{
		{gvrClusterIssuer, map[string]any{"kind": "ClusterIssuer", "metadata": map[string]any{"name": is.selfSigned},
			"spec": map[string]any{"selfSigned": map[string]any{}}}},
		{gvrCertificate, map[string]any{"kind": "Certificate", "metadata": map[string]any{"name": prefix + "-root", "namespace": "cert-manager"},
			"spec": map[string]any{"isCA": true, "commonName": prefix + " root CA", "secretName": secret, "duration": "48h",
				"privateKey": map[string]any{"algorithm": "RSA", "size": 2048},
				"issuerRef":  map[string]any{"name": is.selfSigned, "kind": "ClusterIssuer", "group": "cert-manager.io"}}}},
		{gvrClusterIssuer, map[string]any{"kind": "ClusterIssuer", "metadata": map[string]any{"name": is.ca},
			"spec": map[string]any{"ca": map[string]any{"secretName": secret}}}},
	}
	for _, o := range objs {
		u := &unstructured.Unstructured{Object: o.obj}
		u.SetAPIVersion("cert-manager.io/v1")
		ri := dc.Resource(o.gvr).Namespace(u.GetNamespace())
		if _, err := ri.Create(ctx, u, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create %s %s: %v", u.GetKind(), u.GetName(), err)
		}
		t.Cleanup(func() { _ = ri.Delete(context.Background(), u.GetName(), metav1.DeleteOptions{}) })
	}
	t.Cleanup(func() {
		_ = dc.Resource(gvrSecret).Namespace("cert-manager").Delete(context.Background(), secret, metav1.DeleteOptions{})
	})
	cmReady(t, cl, gvrClusterIssuer, "", is.ca)
	is.root = secretChain(t, cl, secret)[0]
	return is
}

// cmReady waits until a cert-manager object is Ready.
func cmReady(t *testing.T, cl *devstack.Cluster, gvr schema.GroupVersionResource, ns, name string) map[string]any {
	t.Helper()
	return awaitValue(t, fmt.Sprintf("%s: %s %s/%s Ready", cl.Name, gvr.Resource, ns, name), 90*time.Second,
		func() map[string]any { return live(t, cl, gvr, ns, name) },
		func(obj map[string]any) bool { return conditionOf(obj, "Ready")["status"] == "True" })
}

func conditionOf(obj map[string]any, typ string) map[string]any {
	status, _ := obj["status"].(map[string]any)
	conds, _ := status["conditions"].([]any)
	for _, c := range conds {
		if m, ok := c.(map[string]any); ok && m["type"] == typ {
			return m
		}
	}
	return map[string]any{}
}

// secretChain reads the certificates of a Secret's tls.crt in cert-manager's namespace.
func secretChain(t *testing.T, cl *devstack.Cluster, name string) []*x509.Certificate {
	t.Helper()
	_, certs := certSecret(t, cl, name)
	if len(certs) == 0 {
		t.Fatalf("%s: Secret cert-manager/%s holds no certificate", cl.Name, name)
	}
	return certs
}

// cmDistributed checks a member's Secret as a cert-manager issuer made it: tls.crt is the
// member's certificate, a CA, signed by the CA issuer, then the issuer's CA; tls.key is
// the certificate's key. It returns the key's PEM.
func cmDistributed(t *testing.T, cl *devstack.Cluster, name, wantCN string, root *x509.Certificate) []byte {
	t.Helper()
	data, certs := certSecret(t, cl, name)
	if len(certs) != 2 || !certs[1].Equal(root) {
		t.Fatalf("%s: tls.crt of %s holds %d certificates, want the member's and the CA issuer's", cl.Name, name, len(certs))
	}
	leaf := certs[0]
	roots := x509.NewCertPool()
	roots.AddCert(root)
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageAny}}); err != nil {
		t.Errorf("%s: the member's certificate does not chain to the CA issuer's: %v", cl.Name, err)
	}
	if !leaf.IsCA || leaf.KeyUsage&x509.KeyUsageCertSign == 0 || leaf.Subject.CommonName != wantCN {
		t.Errorf("%s: member certificate %q, CA %v, usages %b", cl.Name, leaf.Subject.CommonName, leaf.IsCA, leaf.KeyUsage)
	}
	if d := leaf.NotAfter.Sub(leaf.NotBefore); d < 23*time.Hour || d > 25*time.Hour {
		t.Errorf("%s: the member's certificate is valid for %s, want the intent's 24h", cl.Name, d)
	}
	b, _ := pem.Decode(data["tls.key"])
	if b == nil {
		t.Fatalf("%s: tls.key is not PEM", cl.Name)
	}
	key, err := x509.ParsePKCS1PrivateKey(b.Bytes)
	if err != nil || !key.PublicKey.Equal(leaf.PublicKey.(*rsa.PublicKey)) {
		t.Errorf("%s: tls.key is not the certificate's key (%v)", cl.Name, err)
	}
	return data["tls.key"]
}

// A cluster provider's CA certificate intent signed by a cert-manager CA ClusterIssuer on
// cluster1, as EMCO's ca-certs drives cert-manager: enrolment places a CertificateRequest
// per member on cluster1, which the real cert-manager running against it approves and
// signs; distribution puts each member's certificate (an intermediate CA of the issuer's)
// with its key on the members, where cert-manager (on cluster1) takes the distributed
// ClusterIssuer and issues with it; terminate removes it all, and no key shows anywhere
// but in the members' Secrets. An intent naming an issuer that cannot sign such a request
// fails its enrolment at once with cert-manager's reason.
func TestCACertsCertManager(t *testing.T) {
	c := &client{}
	cl1, cl2 := stack.Clusters[0], stack.Clusters[1]
	if stack.CertManager == nil || stack.CertManager.Cluster != cl1 {
		t.Fatal("the stack runs no cert-manager on cluster1")
	}
	prerequisites(t, cl1, cl2)
	is := makeCMIssuers(t, cl1, "e2e-cm")
	ctx := context.Background()

	certs := "/cluster-providers/" + provider + "/ca-certs"
	r := &certRun{t: t, c: c, path: certs + "/cm-ca", name: "cm-ca",
		target: lifecycle.Target{ClusterProvider: provider, CACert: "cm-ca"}}
	body := certIntent("cm-ca")
	spec := body["spec"].(map[string]any)
	spec["issuerRef"] = map[string]any{"name": is.ca, "kind": "ClusterIssuer", "group": "cert-manager.io"}
	spec["csrInfo"].(map[string]any)["keyUsages"] = []string{"cert sign", "crl sign", "digital signature", "key encipherment"}
	r.do("POST", certs, body).must(t, 201)
	r.do("POST", r.path+"/clusters", res("edge", map[string]any{"scope": "label", "label": "edge", "clusterProvider": provider})).must(t, 201)

	t0 := time.Now()
	enrol := r.operate(lifecycle.CertEnrollment, "instantiate", lifecycle.StatusInstantiated)
	t.Logf("enrolment of 2 members Instantiated in %s", time.Since(t0).Round(time.Millisecond))
	crs := dynClient(t, cl1).Resource(gvrCertificateRequest).Namespace("default")
	for _, cl := range []string{"cluster1", "cluster2"} {
		name := enrol.ContextID + "-cm-ca-local-" + cl + "-cr"
		cr := live(t, cl1, gvrCertificateRequest, "default", name)
		sp := cr["spec"].(map[string]any)
		if a, rd := conditionOf(cr, "Approved"), conditionOf(cr, "Ready"); a["status"] != "True" || a["reason"] != "cert-manager.io" || rd["status"] != "True" {
			t.Errorf("CertificateRequest %s on cluster1 not approved by cert-manager and Ready: %s", name, pretty(cr["status"]))
		}
		if sp["isCA"] != true || !jsonEqual(sp["issuerRef"], spec["issuerRef"]) || sp["duration"] != "24h0m0s" || len(sp["usages"].([]any)) != 4 {
			t.Errorf("CertificateRequest %s: %s", name, pretty(sp))
		}
	}

	dist := r.operate(lifecycle.CertDistribution, "instantiate", lifecycle.StatusInstantiated)
	var keys [][]byte
	for _, cl := range []*devstack.Cluster{cl1, cl2} {
		prefix := dist.ContextID + "-cm-ca-local-" + cl.Name
		keys = append(keys, cmDistributed(t, cl, prefix+"-ca", "cm-ca-local-"+cl.Name+"-ca-e2e", is.root))
		live(t, cl, gvrClusterIssuer, "", prefix+"-issuer")
	}
	// cert-manager on cluster1 takes the member's issuer and signs with it: a workload's
	// certificate chains through the member's to the CA issuer's.
	memberIssuer := dist.ContextID + "-cm-ca-local-cluster1-issuer"
	cmReady(t, cl1, gvrClusterIssuer, "", memberIssuer)
	wl := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "cert-manager.io/v1", "kind": "Certificate",
		"metadata": map[string]any{"name": "e2e-cm-workload", "namespace": "cert-manager"},
		"spec": map[string]any{"commonName": "workload.mesh", "dnsNames": []any{"workload.mesh"}, "secretName": "e2e-cm-workload",
			"issuerRef": map[string]any{"name": memberIssuer, "kind": "ClusterIssuer", "group": "cert-manager.io"}}}}
	certsRI := dynClient(t, cl1).Resource(gvrCertificate).Namespace("cert-manager")
	if _, err := certsRI.Create(ctx, wl, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = certsRI.Delete(context.Background(), "e2e-cm-workload", metav1.DeleteOptions{})
		_ = dynClient(t, cl1).Resource(gvrSecret).Namespace("cert-manager").Delete(context.Background(), "e2e-cm-workload", metav1.DeleteOptions{})
	})
	cmReady(t, cl1, gvrCertificate, "cert-manager", "e2e-cm-workload")
	wchain := secretChain(t, cl1, "e2e-cm-workload")
	roots, inter := x509.NewCertPool(), x509.NewCertPool()
	roots.AddCert(is.root)
	for _, c := range wchain[1:] {
		inter.AddCert(c)
	}
	if _, err := wchain[0].Verify(x509.VerifyOptions{Roots: roots, Intermediates: inter, DNSName: "workload.mesh"}); err != nil ||
		wchain[0].Issuer.CommonName != "cm-ca-local-cluster1-ca-e2e" {
		t.Errorf("the workload's certificate (issued by %q) does not chain through the member's to the CA issuer's: %v", wchain[0].Issuer.CommonName, err)
	}

	r.operate(lifecycle.CertDistribution, "terminate", lifecycle.StatusTerminated)
	for _, cl := range []*devstack.Cluster{cl1, cl2} {
		prefix := dist.ContextID + "-cm-ca-local-" + cl.Name
		gone(t, cl, gvrSecret, "cert-manager", prefix+"-ca")
		gone(t, cl, gvrClusterIssuer, "", prefix+"-issuer")
		gone(t, cl, gvrConfigCtrl, "istio-system", prefix+"-kncc")
	}
	r.operate(lifecycle.CertEnrollment, "terminate", lifecycle.StatusTerminated)
	for _, cl := range []string{"cluster1", "cluster2"} {
		gone(t, cl1, gvrCertificateRequest, "default", enrol.ContextID+"-cm-ca-local-"+cl+"-cr")
	}
	r.noKeyLeaks(keys)
	r.do("DELETE", r.path+"/clusters/edge", nil).must(t, 204)
	r.do("DELETE", r.path, nil).must(t, 204)

	// The SelfSigned issuer signs only requests naming their key's Secret, which ca-certs'
	// never do (temco keeps the keys): cert-manager fails the request, and the enrolment
	// with it at once, with cert-manager's message.
	bad := &certRun{t: t, c: c, path: certs + "/cm-selfsigned", name: "cm-selfsigned",
		target: lifecycle.Target{ClusterProvider: provider, CACert: "cm-selfsigned"}}
	body = certIntent("cm-selfsigned")
	body["spec"].(map[string]any)["issuerRef"] = map[string]any{"name": is.selfSigned, "kind": "ClusterIssuer", "group": "cert-manager.io"}
	bad.do("POST", certs, body).must(t, 201)
	bad.do("POST", bad.path+"/clusters", res("one", map[string]any{"scope": "name", "cluster": "cluster2", "clusterProvider": provider})).must(t, 201)
	t0 = time.Now()
	failed := bad.operate(lifecycle.CertEnrollment, "instantiate", lifecycle.StatusInstantiateFailed)
	took := time.Since(t0)
	s := bad.await(lifecycle.CertEnrollment, lifecycle.StatusInstantiateFailed)
	if !strings.Contains(s.Error, `Annotation "cert-manager.io/private-key-secret-name" missing`) || !strings.Contains(s.Error, "cm-selfsigned-local-cluster2-cr") {
		t.Errorf("failed enrolment's error: %s", s.Error)
	}
	if took > time.Minute { // a pending request would be waited for 2 minutes first
		t.Errorf("the failed request failed the enrolment after %s, not at once", took)
	}
	t.Logf("enrolment failed in %s: %s", took.Round(time.Millisecond), s.Error)
	name := failed.ContextID + "-cm-selfsigned-local-cluster2-cr"
	if rd := conditionOf(live(t, cl1, gvrCertificateRequest, "default", name), "Ready"); rd["reason"] != "Failed" {
		t.Errorf("CertificateRequest %s: Ready %v", name, rd)
	}
	bad.operate(lifecycle.CertEnrollment, "terminate", lifecycle.StatusTerminated)
	if _, err := crs.Get(ctx, name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("CertificateRequest %s is still on cluster1 (%v)", name, err)
	}
	bad.do("DELETE", bad.path+"/clusters/one", nil).must(t, 204)
	bad.do("DELETE", bad.path, nil).must(t, 204)
}
