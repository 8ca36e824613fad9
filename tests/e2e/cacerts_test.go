package e2e

import (
	"bytes"
	"context"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/api/proxy"
	"go.temporal.io/api/temporalproto"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/temco/temco/internal/adapters/codec"
	"github.com/temco/temco/internal/core/lifecycle"
	"github.com/temco/temco/internal/core/seal"
	"github.com/temco/temco/internal/dev/devstack"
	"github.com/temco/temco/internal/dev/testenv/poll"
)

// The kinds a distribution puts on a member cluster besides its Secret.
var (
	gvrClusterIssuer = schema.GroupVersionResource{Group: "cert-manager.io", Version: "v1", Resource: "clusterissuers"}
	gvrProxyConfig   = schema.GroupVersionResource{Group: "networking.istio.io", Version: "v1beta1", Resource: "proxyconfigs"}
	gvrConfigCtrl    = schema.GroupVersionResource{Group: "kncc.k8sappconfig.com.gitlab.com", Version: "v1alpha1", Resource: "configctrls"}
)

// certIntent is a CA certificate intent signed by cluster1's own signer.
func certIntent(name string) map[string]any {
	return res(name, map[string]any{
		"isCA":           true,
		"issuerRef":      map[string]any{"name": "kube-apiserver-client", "kind": "Signer", "group": "certificates.k8s.io"},
		"duration":       "24h",
		"issuingCluster": map[string]any{"cluster": "cluster1", "clusterProvider": provider},
		"csrInfo": map[string]any{"keySize": 2048, "version": 1,
			"algorithm": map[string]any{"publicKeyAlgorithm": "RSA", "signatureAlgorithm": "SHA256WithRSA"},
			"subject":   map[string]any{"names": map[string]any{"commonNamePrefix": "e2e"}, "organization": map[string]any{"names": []string{"temco"}}}},
	})
}

// certRun drives one certificate intent's enrolment and distribution and collects what
// the test later searches for leaked keys.
type certRun struct {
	t         *testing.T
	c         *client
	path      string // the intent's path
	name      string
	target    lifecycle.Target
	workflows []string // workflow ids of its lifecycles and operations
	answers   [][]byte // API answers
}

func (r *certRun) do(method, path string, body any) response {
	r.t.Helper()
	resp := r.c.do(method, path, body)
	r.answers = append(r.answers, resp.body)
	return resp
}

// operate runs op on stage and waits until its context reaches want.
func (r *certRun) operate(stage, op, want string) lifecycle.OpAccepted {
	r.t.Helper()
	var acc lifecycle.OpAccepted
	r.do("POST", r.path+"/"+stage+"/"+op, nil).must(r.t, 202).json(r.t, &acc)
	r.workflows = append(r.workflows, acc.WorkflowID, r.target.Stage(stage).WorkflowID())
	r.await(stage, want)
	return acc
}

// certStatus is the status of an enrolment or distribution, as ca-certs answers it.
type certStatus struct {
	Name            string         `json:"name"`
	ClusterProvider string         `json:"clusterProvider"`
	Project         string         `json:"project"`
	DeployedStatus  string         `json:"deployedStatus"`
	ReadyStatus     string         `json:"readyStatus"`
	DeployedCounts  map[string]int `json:"deployedCounts"`
	ReadyCounts     map[string]int `json:"readyCounts"`
	Error           string         `json:"error"`
	Clusters        []struct {
		Cluster   string `json:"cluster"`
		Resources []struct {
			GVK  struct{ Kind string } `json:"GVK"`
			Name string                `json:"name"`
		} `json:"resources"`
	} `json:"clusters"`
}

func (r *certRun) await(stage, want string) certStatus {
	r.t.Helper()
	return awaitValue(r.t, fmt.Sprintf("%s of %s %s", stage, r.name, want), 2*time.Minute, func() certStatus {
		var s certStatus
		r.do("GET", r.path+"/"+stage+"/status?status=deployed&output=all", nil).must(r.t, 200).json(r.t, &s)
		return s
	}, func(s certStatus) bool { return s.DeployedStatus == want })
}

// issuingCA is cluster1's CA, as its kubeconfig names it: what every certificate must chain to.
func issuingCA(t *testing.T) *x509.CertPool {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", stack.Clusters[0].Kubeconfig())
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(cfg.CAData) {
		t.Fatal("cluster1's kubeconfig holds no CA")
	}
	return pool
}

// distributedSecret reads a member's Secret back from the live cluster and checks it: the
// chain verifies against the issuing cluster's CA, the key is the certificate's. It
// returns the key's PEM.
func distributedSecret(t *testing.T, cl *devstack.Cluster, name, wantCN string) []byte {
	t.Helper()
	data, certs := certSecret(t, cl, name)
	if len(certs) != 2 {
		t.Fatalf("%s: tls.crt holds %d certificates, want the member's and the issuing CA's", cl.Name, len(certs))
	}
	leaf := certs[0]
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: issuingCA(t), KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageAny}}); err != nil {
		t.Errorf("%s: the certificate does not verify against cluster1's CA: %v", cl.Name, err)
	}
	if !certs[1].IsCA || !bytes.Equal(certs[1].Raw, caOf(t, certs[1])) {
		t.Errorf("%s: the chain's second certificate is not the issuing CA", cl.Name)
	}
	if leaf.Subject.CommonName != wantCN {
		t.Errorf("%s: common name %q, want %q", cl.Name, leaf.Subject.CommonName, wantCN)
	}
	b, _ := pem.Decode(data["tls.key"])
	if b == nil {
		t.Fatalf("%s: tls.key is not PEM", cl.Name)
	}
	key, err := x509.ParsePKCS1PrivateKey(b.Bytes)
	if err != nil {
		t.Fatalf("%s: tls.key: %v", cl.Name, err)
	}
	if !key.PublicKey.Equal(leaf.PublicKey.(*rsa.PublicKey)) || key.N.BitLen() != 2048 {
		t.Errorf("%s: tls.key (%d bits) is not the certificate's key", cl.Name, key.N.BitLen())
	}
	return data["tls.key"]
}

// certSecret reads a Secret of cert-manager's namespace: its data, and the certificates
// its tls.crt holds, in order.
func certSecret(t *testing.T, cl *devstack.Cluster, name string) (map[string][]byte, []*x509.Certificate) {
	t.Helper()
	cs, err := cl.Clientset()
	if err != nil {
		t.Fatal(err)
	}
	s, err := cs.CoreV1().Secrets("cert-manager").Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("%s: Secret cert-manager/%s: %v", cl.Name, name, err)
	}
	var certs []*x509.Certificate
	for rest := s.Data["tls.crt"]; ; {
		var b *pem.Block
		if b, rest = pem.Decode(rest); b == nil {
			break
		}
		c, err := x509.ParseCertificate(b.Bytes)
		if err != nil {
			t.Fatal(err)
		}
		certs = append(certs, c)
	}
	return s.Data, certs
}

// caOf returns the raw CA certificate of cluster1 when c is it.
func caOf(t *testing.T, c *x509.Certificate) []byte {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", stack.Clusters[0].Kubeconfig())
	if err != nil {
		t.Fatal(err)
	}
	b, _ := pem.Decode(cfg.CAData)
	return b.Bytes
}

// prerequisites makes the namespaces cert-manager and Istio would have on the members
// (EMCO's prerequisites; the CRDs come with the dev stack) and removes them at the end.
func prerequisites(t *testing.T, clusters ...*devstack.Cluster) {
	t.Helper()
	for _, cl := range clusters {
		cs, err := cl.Clientset()
		if err != nil {
			t.Fatal(err)
		}
		for _, ns := range []string{"cert-manager", "istio-system"} {
			_, err := cs.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
			if err != nil && !apierrors.IsAlreadyExists(err) {
				t.Fatal(err)
			}
		}
	}
}

// gone fails unless the object is absent from the cluster.
func gone(t *testing.T, cl *devstack.Cluster, gvr schema.GroupVersionResource, ns, name string) {
	t.Helper()
	ri := dynClient(t, cl).Resource(gvr)
	var err error
	if ns != "" {
		_, err = ri.Namespace(ns).Get(context.Background(), name, metav1.GetOptions{})
	} else {
		_, err = ri.Get(context.Background(), name, metav1.GetOptions{})
	}
	if !apierrors.IsNotFound(err) {
		t.Errorf("%s: %s %s/%s is still there (%v)", cl.Name, gvr.Resource, ns, name, err)
	}
}

func live(t *testing.T, cl *devstack.Cluster, gvr schema.GroupVersionResource, ns, name string) map[string]any {
	t.Helper()
	ri := dynClient(t, cl).Resource(gvr)
	var err error
	var obj map[string]any
	if ns != "" {
		u, e := ri.Namespace(ns).Get(context.Background(), name, metav1.GetOptions{})
		err = e
		if e == nil {
			obj = u.Object
		}
	} else {
		u, e := ri.Get(context.Background(), name, metav1.GetOptions{})
		err = e
		if e == nil {
			obj = u.Object
		}
	}
	if err != nil {
		t.Fatalf("%s: %s %s/%s: %v", cl.Name, gvr.Resource, ns, name, err)
	}
	return obj
}

var gvrSecret = schema.GroupVersionResource{Version: "v1", Resource: "secrets"}

// noKeyLeaks searches the API answers, the api's and worker's logs and the decoded
// histories of the workflows for the keys (their PEM bodies) and any private key PEM.
func (r *certRun) noKeyLeaks(keys [][]byte) {
	t := r.t
	t.Helper()
	// Also as base64 (a []byte in a JSON payload): the start of a PEM key, encoded.
	needles := [][]byte{[]byte("PRIVATE KEY"), []byte(base64.StdEncoding.EncodeToString([]byte("-----BEGIN RSA PRIVATE KEY-----"))[:40])}
	for _, k := range keys {
		b, _ := pem.Decode(k)
		body := pem.EncodeToMemory(&pem.Block{Type: "X", Bytes: b.Bytes})
		lines := bytes.Split(body, []byte("\n"))
		needles = append(needles, lines[1], lines[len(lines)-3]) // two lines of the key's base64
	}
	search := func(where string, data []byte) {
		for _, n := range needles {
			if bytes.Contains(data, n) {
				t.Errorf("a private key (%q...) shows in %s", n[:min(len(n), 20)], where)
			}
		}
	}
	for i, a := range r.answers {
		search("API answer "+string(rune('0'+i%10)), a)
	}
	for _, log := range []string{"api.log", "worker.log"} {
		data, err := os.ReadFile(filepath.Join(stack.DataDir(), "logs", log))
		if err != nil {
			t.Fatal(err)
		}
		search(log, data)
	}
	keyring, err := seal.LoadKeyFile(stack.KeyFile)
	if err != nil {
		t.Fatal(err)
	}
	tc := dialTemporal(t)
	defer tc.Close()
	seen := map[string]bool{}
	for _, id := range r.workflows {
		if seen[id] {
			continue
		}
		seen[id] = true
		hist := &historypb.History{}
		it := tc.GetWorkflowHistory(context.Background(), id, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
		for it.HasNext() {
			e, err := it.Next()
			if err != nil {
				t.Fatalf("history of %s: %v", id, err)
			}
			hist.Events = append(hist.Events, e)
		}
		if err := proxy.VisitPayloads(context.Background(), hist, proxy.VisitPayloadsOptions{
			Visitor: func(_ *proxy.VisitPayloadsContext, p []*commonpb.Payload) ([]*commonpb.Payload, error) {
				return codec.Codec{Keys: keyring}.Decode(p)
			},
		}); err != nil {
			t.Fatal(err)
		}
		data, err := temporalproto.CustomJSONMarshalOptions{}.Marshal(hist)
		if err != nil {
			t.Fatal(err)
		}
		if len(hist.Events) == 0 {
			t.Errorf("workflow %s has no history", id)
		}
		search("the history of "+id, data)
	}
}

// A cluster provider's CA certificate intent over the edge clusters (cluster1 and
// cluster2), signed by cluster1: enrolment approves and signs a request per cluster on
// cluster1, distribution puts a Secret (chain and key), ClusterIssuer and ConfigCtrl on
// both; an update of each makes new keys and replaces the objects; terminate removes it
// all. No key shows anywhere but in the clusters' Secrets.
func TestCACertsClusterProvider(t *testing.T) {
	c := &client{}
	cl1, cl2 := stack.Clusters[0], stack.Clusters[1]
	prerequisites(t, cl1, cl2)
	certs := "/cluster-providers/" + provider + "/ca-certs"
	r := &certRun{t: t, c: c, path: certs + "/edge-ca", name: "edge-ca",
		target: lifecycle.Target{ClusterProvider: provider, CACert: "edge-ca"}}
	body := certIntent("edge-ca")
	r.do("POST", certs, body).must(t, 201)
	var got map[string]any
	r.do("GET", r.path, nil).must(t, 200).json(t, &got)
	gs, ss := got["spec"].(map[string]any), body["spec"].(map[string]any)
	for _, f := range []string{"isCA", "issuerRef", "duration", "issuingCluster"} {
		if !jsonEqual(gs[f], ss[f]) {
			t.Errorf("stored spec.%s %s, sent %s", f, pretty(gs[f]), pretty(ss[f]))
		}
	}
	r.do("POST", r.path+"/clusters", res("edge", map[string]any{"scope": "label", "label": "edge", "clusterProvider": provider})).must(t, 201)

	// Distribution needs the enrolment.
	refused := r.do("POST", r.path+"/distribution/instantiate", nil).must(t, 409)
	if !strings.Contains(string(refused.body), "enrollment") {
		t.Errorf("distribution before enrolment: %s", refused.body)
	}
	enrol := r.operate(lifecycle.CertEnrollment, "instantiate", lifecycle.StatusInstantiated)
	recordHistory(t, enrol.WorkflowID, "Instantiate-cacert-enrollment")
	cs1, _ := cl1.Clientset()
	for _, cl := range []string{"cluster1", "cluster2"} {
		name := enrol.ContextID + "-edge-ca-local-" + cl + "-cr"
		csr, err := cs1.CertificatesV1().CertificateSigningRequests().Get(context.Background(), name, metav1.GetOptions{})
		if err != nil || len(csr.Status.Certificate) == 0 || csr.Spec.SignerName != "kubernetes.io/kube-apiserver-client" {
			t.Fatalf("request %s on cluster1: %v %+v", name, err, csr)
		}
	}
	// A certificate intent in use is not changed or deleted.
	r.do("PUT", r.path, body).must(t, 409)
	r.do("DELETE", r.path, nil).must(t, 409)

	dist := r.operate(lifecycle.CertDistribution, "instantiate", lifecycle.StatusInstantiated)
	recordHistory(t, dist.WorkflowID, "Instantiate-cacert-distribution")
	var keys [][]byte
	check := func(ctxID string) {
		t.Helper()
		for _, cl := range []*devstack.Cluster{cl1, cl2} {
			prefix := ctxID + "-edge-ca-local-" + cl.Name
			keys = append(keys, distributedSecret(t, cl, prefix+"-ca", "edge-ca-local-"+cl.Name+"-ca-e2e"))
			issuer := live(t, cl, gvrClusterIssuer, "", prefix+"-issuer")
			if sn, _, _ := nestedString(issuer, "spec", "ca", "secretName"); sn != prefix+"-ca" {
				t.Errorf("%s: ClusterIssuer %s uses Secret %q", cl.Name, prefix+"-issuer", sn)
			}
			kncc := live(t, cl, gvrConfigCtrl, "istio-system", prefix+"-kncc")
			patch := kncc["spec"].(map[string]any)["patch"].([]any)
			if len(patch) != 2 || !strings.Contains(patch[0].(map[string]any)["value"].(string), "clusterissuers.cert-manager.io/"+prefix+"-issuer") ||
				patch[1].(map[string]any)["value"] != prefix+"-issuer" {
				t.Errorf("%s: ConfigCtrl patch %s", cl.Name, pretty(patch))
			}
		}
	}
	check(dist.ContextID)
	s := r.await(lifecycle.CertDistribution, lifecycle.StatusInstantiated)
	if s.DeployedCounts["Applied"] != 6 {
		t.Errorf("distribution counts %v, want 6 objects Applied (3 on each cluster)", s.DeployedCounts)
	}
	r.do("GET", r.path+"/distribution/status?output=detail", nil).must(t, 200)
	r.do("GET", r.path+"/distribution/status?status=deployed&output=detail", nil).must(t, 200)
	r.do("GET", r.path+"/enrollment/status?output=detail", nil).must(t, 200)
	r.do("GET", certs, nil).must(t, 200)

	// Update: new keys, then the distribution of the new certificates replaces the old.
	r.operate(lifecycle.CertEnrollment, "update", lifecycle.StatusInstantiated)
	dist2 := r.operate(lifecycle.CertDistribution, "update", lifecycle.StatusInstantiated)
	before := len(keys)
	check(dist2.ContextID)
	for i := range 2 {
		if bytes.Equal(keys[i], keys[before+i]) {
			t.Errorf("the update kept the key of member %d", i)
		}
	}
	for _, cl := range []*devstack.Cluster{cl1, cl2} {
		gone(t, cl, gvrSecret, "cert-manager", dist.ContextID+"-edge-ca-local-"+cl.Name+"-ca")
	}

	r.operate(lifecycle.CertDistribution, "terminate", lifecycle.StatusTerminated)
	for _, cl := range []*devstack.Cluster{cl1, cl2} {
		prefix := dist2.ContextID + "-edge-ca-local-" + cl.Name
		gone(t, cl, gvrSecret, "cert-manager", prefix+"-ca")
		gone(t, cl, gvrClusterIssuer, "", prefix+"-issuer")
		gone(t, cl, gvrConfigCtrl, "istio-system", prefix+"-kncc")
	}
	withdraw := r.operate(lifecycle.CertEnrollment, "terminate", lifecycle.StatusTerminated)
	recordHistory(t, withdraw.WorkflowID, "Terminate-cacert-enrollment")
	list, err := cs1.CertificatesV1().CertificateSigningRequests().List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, csr := range list.Items {
		if strings.Contains(csr.Name, "-edge-ca-") {
			t.Errorf("request %s is still on cluster1", csr.Name)
		}
	}
	r.noKeyLeaks(keys)
	r.do("DELETE", r.path+"/clusters/edge", nil).must(t, 204)
	r.do("DELETE", r.path, nil).must(t, 204)
}

func nestedString(obj map[string]any, fields ...string) (string, bool, error) {
	var cur any = obj
	for _, f := range fields {
		m, ok := cur.(map[string]any)
		if !ok {
			return "", false, nil
		}
		cur = m[f]
	}
	s, ok := cur.(string)
	return s, ok, nil
}

// A project's CA certificate intent over a standard logical cloud of cluster1 and
// cluster2: each member gets its Secret and ClusterIssuer, a ProxyConfig in the cloud's
// namespace naming the issuer, and a ConfigCtrl that trusts the chain without making the
// issuer the mesh's default.
func TestCACertsLogicalCloud(t *testing.T) {
	d := newDeployment(t)
	c := d.c
	cl1, cl2 := stack.Clusters[0], stack.Clusters[1]
	prerequisites(t, cl1, cl2)
	c.do("POST", "/projects", res(d.project, nil)).must(t, 201)
	lc := standardCloud(d, "mesh", "cluster1", "cluster2")
	c.do("POST", lc+"/instantiate", nil).must(t, 202)
	d.awaitCloud("mesh", lifecycle.StatusInstantiated)

	certs := "/projects/" + d.project + "/ca-certs"
	r := &certRun{t: t, c: c, path: certs + "/mesh-ca", name: "mesh-ca",
		target: lifecycle.Target{Project: d.project, CACert: "mesh-ca"}}
	r.do("POST", certs, certIntent("mesh-ca")).must(t, 201)
	r.do("POST", r.path+"/logical-clouds", res("mesh", map[string]any{"logicalCloud": "mesh"})).must(t, 201)
	// Both edge clusters by label; cluster3 is not in the cloud, so a group naming it adds nothing.
	r.do("POST", r.path+"/logical-clouds/mesh/clusters", res("edge", map[string]any{"scope": "label", "label": "edge", "clusterProvider": provider})).must(t, 201)
	r.do("POST", r.path+"/logical-clouds/mesh/clusters", res("core", map[string]any{"scope": "name", "cluster": "cluster3", "clusterProvider": provider})).must(t, 201)

	r.operate(lifecycle.CertEnrollment, "instantiate", lifecycle.StatusInstantiated)
	dist := r.operate(lifecycle.CertDistribution, "instantiate", lifecycle.StatusInstantiated)
	recordHistory(t, dist.WorkflowID, "Instantiate-cacert-distribution")
	var keys [][]byte
	for _, cl := range []*devstack.Cluster{cl1, cl2} {
		prefix := dist.ContextID + "-mesh-ca-local-" + cl.Name
		keys = append(keys, distributedSecret(t, cl, prefix+"-ca", "mesh-ca-local-"+cl.Name+"-ca-e2e"))
		live(t, cl, gvrClusterIssuer, "", prefix+"-issuer")
		pc := live(t, cl, gvrProxyConfig, "mesh-ns", prefix+"-mesh-ns-pc")
		if env := pc["spec"].(map[string]any)["environmentVariables"].(map[string]any); env["ISTIO_META_CERT_SIGNER"] != prefix+"-issuer" {
			t.Errorf("%s: ProxyConfig %s", cl.Name, pretty(pc))
		}
		kncc := live(t, cl, gvrConfigCtrl, "istio-system", prefix+"-kncc")
		if patch := kncc["spec"].(map[string]any)["patch"].([]any); len(patch) != 1 {
			t.Errorf("%s: a logical cloud's ConfigCtrl sets the default signer: %s", cl.Name, pretty(patch))
		}
	}
	s := r.await(lifecycle.CertDistribution, lifecycle.StatusInstantiated)
	if s.Project != d.project || s.Name != "mesh-ca" || len(s.Clusters) != 2 {
		t.Errorf("distribution status %s", pretty(s))
	}
	// The cloud cannot go while the intent names it.
	c.do("DELETE", lc, nil).must(t, 409)

	r.operate(lifecycle.CertDistribution, "terminate", lifecycle.StatusTerminated)
	for _, cl := range []*devstack.Cluster{cl1, cl2} {
		prefix := dist.ContextID + "-mesh-ca-local-" + cl.Name
		gone(t, cl, gvrSecret, "cert-manager", prefix+"-ca")
		gone(t, cl, gvrProxyConfig, "mesh-ns", prefix+"-mesh-ns-pc")
	}
	r.operate(lifecycle.CertEnrollment, "terminate", lifecycle.StatusTerminated)
	r.noKeyLeaks(keys)
	for _, p := range []string{r.path + "/logical-clouds/mesh/clusters/edge", r.path + "/logical-clouds/mesh/clusters/core", r.path + "/logical-clouds/mesh", r.path} {
		r.do("DELETE", p, nil).must(t, 204)
	}
	c.do("POST", lc+"/terminate", nil).must(t, 202)
	d.awaitCloud("mesh", lifecycle.StatusTerminated)
}

// Bad input: 400 naming the problem where EMCO's schema or API refuses, and a failed
// operation saying why, before anything is applied, where EMCO finds out only then.
func TestCACertsBadInput(t *testing.T) {
	c := &client{}
	certs := "/cluster-providers/" + provider + "/ca-certs"
	for _, tc := range []struct {
		name   string
		change func(spec map[string]any)
		want   string
	}{
		{"no issuer", func(s map[string]any) { delete(s, "issuerRef") }, "spec.issuerRef.name is required"},
		{"an issuer group temco cannot use", func(s map[string]any) { s["issuerRef"].(map[string]any)["group"] = "example.com" }, `spec.issuerRef.group \"example.com\" is not supported`},
		{"a tiny key", func(s map[string]any) { s["csrInfo"].(map[string]any)["keySize"] = 512 }, "spec.csrInfo.keySize 512 is out of range"},
		{"a duration that is none", func(s map[string]any) { s["duration"] = "forever" }, `spec.duration \"forever\" is not a positive duration`},
		{"an ECDSA signature", func(s map[string]any) {
			s["csrInfo"].(map[string]any)["algorithm"] = map[string]any{"signatureAlgorithm": "ECDSAWithSHA256"}
		}, "cannot sign with an RSA key"},
	} {
		body := certIntent("bad")
		tc.change(body["spec"].(map[string]any))
		r := c.do("POST", certs, body).must(t, 400)
		if !strings.Contains(string(r.body), tc.want) || !strings.HasPrefix(string(r.body), `{"message":`) {
			t.Errorf("%s: %s, want a message saying %s", tc.name, r.body, tc.want)
		}
	}
	c.do("POST", certs, res("Bad Name", nil)).must(t, 400)
	c.do("POST", "/cluster-providers/nowhere/ca-certs", certIntent("x")).must(t, 404)

	path := certs + "/lonely"
	c.do("POST", certs, certIntent("lonely")).must(t, 201)
	c.do("POST", certs, certIntent("lonely")).must(t, 409)
	for _, g := range []struct {
		spec map[string]any
		want string
	}{
		{map[string]any{"cluster": "cluster1", "clusterProvider": provider}, "spec.scope is required"},
		{map[string]any{"scope": "name", "clusterProvider": provider}, `spec.cluster is required when spec.scope is \"name\"`},
		{map[string]any{"scope": "label", "label": "edge", "clusterProvider": "other"}, `spec.clusterProvider \"other\" is not this certificate intent's cluster provider`},
	} {
		r := c.do("POST", path+"/clusters", res("g", g.spec)).must(t, 400)
		if !strings.Contains(string(r.body), g.want) {
			t.Errorf("cluster group %v: %s, want %s", g.spec, r.body, g.want)
		}
	}
	// An intent without clusters: the enrolment fails, saying so, before anything is applied.
	var acc lifecycle.OpAccepted
	c.do("POST", path+"/enrollment/instantiate", nil).must(t, 202).json(t, &acc)
	s := awaitValue(t, "the enrolment of an intent without clusters failed", time.Minute,
		func() certStatus { return getAs[certStatus](t, c, path+"/enrollment/status?status=deployed") },
		func(s certStatus) bool { return s.DeployedStatus == lifecycle.StatusInstantiateFailed })
	if !strings.Contains(s.Error, "selects no cluster") || s.DeployedCounts["Applied"] != 0 {
		t.Errorf("failed enrolment: %s", pretty(s))
	}
	c.do("POST", path+"/enrollment/terminate", nil).must(t, 202)
	poll.Until(t, "delete after terminate", time.Minute, func(context.Context) error {
		if r := c.do("DELETE", path, nil); r.code != 204 {
			return fmt.Errorf("%d %s", r.code, r.body)
		}
		return nil
	})
	c.do("GET", path+"/enrollment/status", nil).must(t, 404)
}

// EMCO's examples/test-cert files, run by the emcoctl-compatible client with a values file
// naming the issuing cluster's signer: the intent and its cluster groups, the enrolment
// and the distribution (each awaited: the distribution needs the enrolment done); delete
// turns them into awaited terminates and removes the rest, in reverse.
func TestCACertsEmcoctlFiles(t *testing.T) {
	prerequisites(t, stack.Clusters[0], stack.Clusters[1])
	dir := t.TempDir()
	files := map[string]string{
		"values.yaml": `ClusterProvider: local
CertIntent0: files-ca
ClusterIssuer0: kube-apiserver-client
Kind: Signer
Group: certificates.k8s.io
IssuingCluster: cluster1
KeySize: 2048
CommonNamePrefix: foo
ClusterGroup0a: by-name
ClusterGroup0b: by-label
Cluster1: cluster1
GroupLabel23: edge
`,
		"ca-cert-cluster-provider.yaml": `# SPDX-License-Identifier: Apache-2.0
# add the cert intent1
version: emco/v2
resourceContext:
  anchor: cluster-providers/{{.ClusterProvider}}/ca-certs
metadata:
  name: {{.CertIntent0}}
spec:
  isCA: true
  issuerRef:
    name: {{.ClusterIssuer0}}
    kind: {{.Kind}}
    group: {{.Group}}
  duration: "8760h"
  issuingCluster:
    cluster: {{.IssuingCluster}}
    clusterProvider: {{.ClusterProvider}}
  csrInfo:
    keySize: {{.KeySize}}
    version: 1
    dnsNames: []
    emailAddresses: []
    keyUsages: []
    algorithm:
      publicKeyAlgorithm: RSA
      signatureAlgorithm: SHA512WithRSA
    subject:
      locale:
        country: []
        locality: []
        postalCode: []
        province: []
        streetAddress: []
      names:
        commonNamePrefix: {{.CommonNamePrefix}}
      organization:
        names: []
        units: []
---
version: emco/v2
resourceContext:
  anchor: cluster-providers/{{.ClusterProvider}}/ca-certs/{{.CertIntent0}}/clusters
metadata :
  name: {{.ClusterGroup0a}}
spec:
  scope: name
  cluster: {{.Cluster1}}
  clusterProvider: {{.ClusterProvider}}
---
version: emco/v2
resourceContext:
  anchor: cluster-providers/{{.ClusterProvider}}/ca-certs/{{.CertIntent0}}/clusters
metadata :
  name: {{.ClusterGroup0b}}
spec:
  scope: label
  label: {{.GroupLabel23}}
  clusterProvider: {{.ClusterProvider}}
`,
		"ca-cert-cluster-provider-enrollment.yaml": `version: emco/v2
resourceContext:
  anchor: cluster-providers/{{.ClusterProvider}}/ca-certs/{{.CertIntent0}}/enrollment/instantiate
`,
		"ca-cert-cluster-provider-distribution.yaml": `version: emco/v2
resourceContext:
  anchor: cluster-providers/{{.ClusterProvider}}/ca-certs/{{.CertIntent0}}/distribution/instantiate
`,
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	args := []string{"-f", "ca-cert-cluster-provider.yaml", "-f", "ca-cert-cluster-provider-enrollment.yaml",
		"-f", "ca-cert-cluster-provider-distribution.yaml", "-v", "values.yaml"}
	if out, err := temco(t, dir, append([]string{"apply"}, args...)...); err != nil {
		t.Fatalf("apply: %v\n%s", err, out)
	}
	c := &client{}
	path := "/cluster-providers/" + provider + "/ca-certs/files-ca"
	var s certStatus
	c.do("GET", path+"/distribution/status?status=deployed", nil).must(t, 200).json(t, &s)
	if s.DeployedStatus != lifecycle.StatusInstantiated || s.DeployedCounts["Applied"] != 6 {
		t.Errorf("distribution after apply: %s", pretty(s))
	}
	if out, err := temco(t, dir, append([]string{"delete"}, args...)...); err != nil {
		t.Fatalf("delete: %v\n%s", err, out)
	}
	c.do("GET", path, nil).must(t, 404)
}

// A stop ends an enrolment that cannot reach its issuing cluster: the request's apply is
// Retrying while cluster1's API server is down, the stop ends the operation
// (InstantiateStopped), and once the cluster is back a terminate removes what it left.
func TestCACertsStop(t *testing.T) {
	c := &client{}
	cl1 := stack.Clusters[0]
	certs := "/cluster-providers/" + provider + "/ca-certs"
	r := &certRun{t: t, c: c, path: certs + "/stop-ca", name: "stop-ca",
		target: lifecycle.Target{ClusterProvider: provider, CACert: "stop-ca"}}
	r.do("POST", certs, certIntent("stop-ca")).must(t, 201)
	r.do("POST", r.path+"/clusters", res("two", map[string]any{"scope": "name", "cluster": "cluster2", "clusterProvider": provider})).must(t, 201)
	apiUp := true
	t.Cleanup(func() {
		if !apiUp {
			_ = cl1.StartAPIServer(context.Background())
		}
		for _, p := range []string{r.path + "/clusters/two", r.path} {
			if resp := c.do("DELETE", p, nil); resp.code != 204 && resp.code != 404 {
				t.Errorf("clean-up: DELETE %s: %d %s", p, resp.code, resp.body)
			}
		}
	})

	cl1.StopAPIServer()
	apiUp = false
	r.do("POST", r.path+"/enrollment/instantiate", nil).must(t, 202)
	deadline := time.Now().Add(2 * time.Minute)
	for {
		var s struct {
			Clusters []struct {
				Resources []struct {
					DeployedStatus string `json:"deployedStatus"`
					Attempts       int    `json:"attempts"`
				} `json:"resources"`
			} `json:"clusters"`
		}
		r.do("GET", r.path+"/enrollment/status?status=deployed&output=all", nil).must(t, 200).json(t, &s)
		retrying := false
		for _, cl := range s.Clusters {
			for _, res := range cl.Resources {
				retrying = retrying || res.DeployedStatus == lifecycle.ResRetrying && res.Attempts >= 2
			}
		}
		if retrying {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the enrolment's request never showed Retrying: %s", pretty(s))
		}
		time.Sleep(200 * time.Millisecond)
	}
	r.do("POST", r.path+"/enrollment/stop", nil).must(t, 202)
	r.await(lifecycle.CertEnrollment, lifecycle.StatusInstantiateStopped)
	if err := cl1.StartAPIServer(context.Background()); err != nil {
		t.Fatal(err)
	}
	apiUp = true
	r.operate(lifecycle.CertEnrollment, "terminate", lifecycle.StatusTerminated)
}

// An admin's project certificate intent may name an issuing cluster of none of the
// project's logical clouds, as EMCO's example does (issuer1). The project's tenant may
// enrol it: the enrolment checks the issuing cluster again only for a tenant's intent, so
// it gets past it (and fails for want of members, this project having no cloud). The
// tenant may not name that cluster, in an intent of its own or by rewriting the admin's.
func TestCACertsAdminNamesAnyIssuingCluster(t *testing.T) {
	a := startAuthAPI(t)
	admin := a.as(a.iss.Token("root", []string{"admin"}, nil))
	project := projectName(t)
	admin.do("POST", "/projects", res(project, nil)).must(t, 201)
	alice := a.as(a.iss.Token("alice", []string{"project:" + project}, nil))
	certs := "/projects/" + project + "/ca-certs"
	path := certs + "/admins"
	t.Cleanup(func() {
		for _, p := range []string{path, "/projects/" + project} {
			if r := admin.do("DELETE", p, nil); r.code != 204 && r.code != 404 {
				t.Errorf("clean-up: DELETE %s: %d %s", p, r.code, r.body)
			}
		}
	})
	noOrganization := func(cert map[string]any) map[string]any {
		cert["spec"].(map[string]any)["csrInfo"].(map[string]any)["subject"] = map[string]any{"names": map[string]any{"commonNamePrefix": "e2e"}}
		return cert
	}

	admin.do("POST", certs, certIntent("admins")).must(t, 201) // issuing cluster1
	for _, r := range []response{alice.do("POST", certs, noOrganization(certIntent("mine"))), alice.do("PUT", path, noOrganization(certIntent("admins")))} {
		if r.must(t, 403); !strings.Contains(string(r.body), "spec.issuingCluster local+cluster1 is not a cluster of a logical cloud") {
			t.Errorf("the tenant naming cluster1: %s", r.body)
		}
	}
	alice.do("GET", certs+"/mine", nil).must(t, 404)

	alice.do("POST", path+"/enrollment/instantiate", nil).must(t, 202)
	s := awaitValue(t, "the tenant's enrolment of the admin's intent failed", time.Minute,
		func() certStatus { return getAs[certStatus](t, alice, path+"/enrollment/status?status=deployed") },
		func(s certStatus) bool { return s.DeployedStatus == lifecycle.StatusInstantiateFailed })
	if !strings.Contains(s.Error, "selects no cluster") {
		t.Errorf("the enrolment failed for another reason than its members: %s", s.Error)
	}
	alice.do("POST", path+"/enrollment/terminate", nil).must(t, 202)
	poll.Until(t, "delete after terminate", time.Minute, func(context.Context) error {
		if r := admin.do("DELETE", path, nil); r.code != 204 {
			return fmt.Errorf("%d %s", r.code, r.body)
		}
		return nil
	})
}
