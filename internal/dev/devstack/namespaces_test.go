package devstack

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
)

// A started local cluster looks like one with Istio and cert-manager installed where
// EMCO's its and ca-certs need it: a Gateway of its server side (EMCO's istio_traffic
// example) is accepted in istio-system, and cert-manager's namespace is there.
func TestStartedClusterHasItsInstalledNamespaces(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a local cluster")
	}
	bin, err := filepath.Abs("../../../.bin") // internal/dev/devstack
	if err != nil {
		t.Fatal(err)
	}
	c := &Cluster{Name: "istio", BinDir: bin, Dir: t.TempDir(), BasePort: freeBase(t)}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	t.Cleanup(c.Stop)
	if err := c.Start(ctx); err != nil {
		t.Fatalf("start: %v (logs under %s)", err, c.Dir)
	}
	dc, err := c.Dynamic()
	if err != nil {
		t.Fatal(err)
	}
	gateway := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "networking.istio.io/v1beta1", "kind": "Gateway",
		"metadata": map[string]any{"name": "http-service-gateway", "namespace": istioNamespace},
		"spec": map[string]any{"selector": map[string]any{"istio": "ingressgateway"}, "servers": []any{map[string]any{
			"port":  map[string]any{"name": "tls", "number": int64(15443), "protocol": "TLS"},
			"hosts": []any{"http-service.default.provider1.cluster2"}, "tls": map[string]any{"mode": "AUTO_PASSTHROUGH"}}}},
	}}
	gvr := schema.GroupVersionResource{Group: "networking.istio.io", Version: "v1beta1", Resource: "gateways"}
	if _, err := dc.Resource(gvr).Namespace(istioNamespace).Create(ctx, gateway, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create its Gateway in %s: %v", istioNamespace, err)
	}
	// And like one with cert-manager installed, where ca-certs distributes a CA Secret.
	cs, err := c.Clientset()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().Namespaces().Get(ctx, CertManagerNamespace, metav1.GetOptions{}); err != nil {
		t.Errorf("namespace %s: %v", CertManagerNamespace, err)
	}
}

// The namespace is created when missing and left as it is when it exists: a restart on
// the same data, or one a user made, labels and all.
func TestEnsureNamespaceCreatesOnlyAMissingOne(t *testing.T) {
	ctx := context.Background()
	cs := fake.NewClientset()
	if err := ensureNamespace(ctx, cs, istioNamespace); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().Namespaces().Get(ctx, istioNamespace, metav1.GetOptions{}); err != nil {
		t.Fatalf("after a first start: %v", err)
	}

	mine := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: istioNamespace, Labels: map[string]string{"istio-injection": "disabled"}}}
	cs = fake.NewClientset(mine)
	if err := ensureNamespace(ctx, cs, istioNamespace); err != nil {
		t.Fatalf("with the namespace there: %v", err)
	}
	ns, err := cs.CoreV1().Namespaces().Get(ctx, istioNamespace, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if ns.Labels["istio-injection"] != "disabled" {
		t.Errorf("the existing namespace changed: labels %v", ns.Labels)
	}
	for _, a := range cs.Actions() {
		if a.GetVerb() != "create" && a.GetVerb() != "get" {
			t.Errorf("unexpected %s of %s", a.GetVerb(), a.GetResource().Resource)
		}
	}
}
