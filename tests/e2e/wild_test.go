package e2e

import (
	"context"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"reflect"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/temco/temco/internal/core/lifecycle"
	"github.com/temco/temco/internal/dev/devstack"
	"github.com/temco/temco/internal/dev/testenv"
)

// strayChart carries what charts in the wild carry and server-side apply refuses: a
// DaemonSet with replicas, a Deployment with a mistyped pod field and a container field
// that does not exist, and a custom object with a field its CRD does not declare (the CRD
// comes with the chart, so the object's schema is published during the apply).
func strayChart() []byte {
	return testenv.Chart("stray", "", map[string]string{"gadgets.yaml": sizedCRD("wild.example.com", "Gadget"), "all.yaml": `apiVersion: apps/v1
kind: DaemonSet
metadata:
  name: stray-agent
spec:
  replicas: 2
  selector: {matchLabels: {app: stray-agent}}
  template:
    metadata: {labels: {app: stray-agent}}
    spec:
      containers: [{name: agent, image: registry.local/agent:1}]
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: stray-web
spec:
  replicas: 1
  selector: {matchLabels: {app: stray-web}}
  template:
    metadata: {labels: {app: stray-web}}
    spec:
      restartpolicy: Always
      containers: [{name: web, image: registry.local/web:1, pullPolicy: Always}]
---
apiVersion: wild.example.com/v1
kind: Gadget
metadata:
  name: stray-gadget
spec: {size: 3, colour: red}
`})
}

// sizedCRD defines kind in group, whose spec declares one field: size.
func sizedCRD(group, kind string) string {
	singular := strings.ToLower(kind)
	return `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: ` + singular + `s.` + group + `
spec:
  group: ` + group + `
  scope: Namespaced
  names: {plural: ` + singular + `s, singular: ` + singular + `, kind: ` + kind + `, listKind: ` + kind + `List}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              size: {type: integer}
`
}

// Objects with fields the cluster's schema does not declare are applied as a create
// would apply them: without those fields, Applied, each with a warning naming them.
func TestUndeclaredFieldsAreDroppedAsACreateWould(t *testing.T) {
	d := newDeployment(t, app{name: "stray", chart: strayChart(), placement: clusterNamed("cluster1")})
	d.create()
	d.operate(lifecycle.OpInstantiate)
	s := d.await("Instantiated", 2*time.Minute, "", func(s status) bool {
		return s.Status == lifecycle.StatusInstantiated || s.Status == lifecycle.StatusInstantiateFailed
	})
	want := map[string]string{
		"DaemonSet/stray-agent":                             "spec.replicas",
		"Deployment/stray-web":                              "spec.template.spec.containers[0].pullPolicy, spec.template.spec.restartpolicy",
		"Gadget/stray-gadget":                               "spec.colour",
		"CustomResourceDefinition/gadgets.wild.example.com": "",
	}
	seen := 0
	for _, a := range s.Apps {
		for _, c := range a.Clusters {
			for _, r := range c.Resources {
				key := r.GVK.Kind + "/" + r.Name
				fields, ok := want[key]
				if !ok {
					continue
				}
				seen++
				if r.RsyncStatus != lifecycle.ResApplied {
					t.Errorf("%s: %s (%s), want Applied", key, r.RsyncStatus, r.Error)
				}
				switch {
				case fields == "" && r.Warning != "":
					t.Errorf("%s: warning %q, want none", key, r.Warning)
				case fields != "" && !strings.HasSuffix(r.Warning, ": "+fields):
					t.Errorf("%s: warning %q, want one naming %s", key, r.Warning, fields)
				}
			}
		}
	}
	if seen != len(want) || s.Status != lifecycle.StatusInstantiated {
		t.Fatalf("status %s with %d of the %d objects: %s", s.Status, seen, len(want), pretty(s))
	}
	cl := stack.Clusters[0]
	gadget, err := dynClient(t, cl).Resource(schema.GroupVersionResource{Group: "wild.example.com", Version: "v1", Resource: "gadgets"}).
		Namespace("default").Get(context.Background(), "stray-gadget", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if spec := gadget.Object["spec"]; !reflect.DeepEqual(spec, map[string]any{"size": int64(3)}) {
		t.Errorf("the Gadget's spec on the cluster: %v, want size 3 alone", spec)
	}
	cs, err := cl.Clientset()
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := cs.AppsV1().DaemonSets("default").Get(ctx, "stray-agent", metav1.GetOptions{}); err != nil {
		t.Errorf("the DaemonSet: %v", err)
	}
	if dep, err := cs.AppsV1().Deployments("default").Get(ctx, "stray-web", metav1.GetOptions{}); err != nil || dep.Spec.Template.Spec.Containers[0].Image != "registry.local/web:1" {
		t.Errorf("the Deployment: %v", err)
	}
	d.operate(lifecycle.OpTerminate)
	d.await("Terminated", time.Minute, "", func(s status) bool { return s.Status == lifecycle.StatusTerminated })
	cleanupCRD(t, cl, "gadgets.wild.example.com")
}

// A custom object with a field its definition does not declare is applied without it on a
// cluster that publishes no OpenAPI v3 (Kubernetes before 1.27), as on one that has not
// published the definition's schema yet (seconds, on a busy server): temco prunes it by
// the definition itself. The cluster is cluster1 behind a proxy that hides /openapi/v3.
func TestUndeclaredFieldsAreDroppedByTheDefinitionWithoutOpenAPI(t *testing.T) {
	cl := stack.Clusters[0]
	kubeconfig := withoutOpenAPI(t, cl)
	c := &client{t: t}
	c.do("POST", "/cluster-providers", res("noopenapi", nil)).must(t, 201)
	c.multipart("POST", "/cluster-providers/noopenapi/clusters", res("k126", nil), kubeconfig).must(t, 201)
	chart := testenv.Chart("old", "", map[string]string{"widgets.yaml": sizedCRD("old.example.com", "Widget"), "widget.yaml": `apiVersion: old.example.com/v1
kind: Widget
metadata:
  name: old-widget
spec: {size: 3, colour: red}
`})
	t.Cleanup(func() { cleanupCRD(t, cl, "widgets.old.example.com") })
	d := newDeployment(t, app{name: "old", chart: chart,
		placement: map[string]any{"allOf": []any{map[string]any{"clusterProvider": "noopenapi", "cluster": "k126"}}}})
	d.logicalCloud = "old"
	d.setUpCloud = func(d *deployment) {
		lc := "/projects/" + d.project + "/logical-clouds/old"
		d.c.do("POST", "/projects/"+d.project+"/logical-clouds", res("old", map[string]any{"level": "0"})).must(t, 201)
		d.c.do("POST", lc+"/cluster-references", res("k126", map[string]any{"clusterProvider": "noopenapi", "cluster": "k126"})).must(t, 201)
		d.c.do("POST", lc+"/instantiate", nil).must(t, 202)
		d.awaitCloud("old", lifecycle.StatusInstantiated)
	}
	d.create()
	d.operate(lifecycle.OpInstantiate)
	s := d.await("Instantiated", 2*time.Minute, "", func(s status) bool {
		return s.Status == lifecycle.StatusInstantiated || s.Status == lifecycle.StatusInstantiateFailed
	})
	widget := 0
	for _, a := range s.Apps {
		for _, c := range a.Clusters {
			for _, r := range c.Resources {
				if r.GVK.Kind != "Widget" {
					continue
				}
				widget++
				if r.RsyncStatus != lifecycle.ResApplied || !strings.HasSuffix(r.Warning, ": spec.colour") {
					t.Errorf("the Widget: %s (%s), warning %q; want Applied, naming spec.colour", r.RsyncStatus, r.Error, r.Warning)
				}
			}
		}
	}
	if widget != 1 || s.Status != lifecycle.StatusInstantiated {
		t.Fatalf("status %s with %d Widget: %s", s.Status, widget, pretty(s))
	}
	w, err := dynClient(t, cl).Resource(schema.GroupVersionResource{Group: "old.example.com", Version: "v1", Resource: "widgets"}).
		Namespace("default").Get(context.Background(), "old-widget", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if spec := w.Object["spec"]; !reflect.DeepEqual(spec, map[string]any{"size": int64(3)}) {
		t.Errorf("the Widget's spec on the cluster: %v, want size 3 alone", spec)
	}
	d.operate(lifecycle.OpTerminate)
	d.await("Terminated", time.Minute, "", func(s status) bool { return s.Status == lifecycle.StatusTerminated })
	lc := "/projects/" + d.project + "/logical-clouds/old"
	c.do("POST", lc+"/terminate", nil).must(t, 202)
	d.awaitCloud("old", lifecycle.StatusTerminated)
	c.do("DELETE", lc+"/cluster-references/k126", nil).must(t, 204)
	c.do("DELETE", "/cluster-providers/noopenapi/clusters/k126", nil).must(t, 204)
	c.do("DELETE", "/cluster-providers/noopenapi", nil).must(t, 204)
}

// withoutOpenAPI serves cl's API server, with cl's credentials, on a TLS address of the
// test's own where /openapi/v3 is not found, and returns a kubeconfig reaching it.
func withoutOpenAPI(t *testing.T, cl *devstack.Cluster) []byte {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", cl.Kubeconfig())
	if err != nil {
		t.Fatal(err)
	}
	upstream, err := url.Parse(cfg.Host)
	if err != nil {
		t.Fatal(err)
	}
	transport, err := rest.TransportFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	proxy := &httputil.ReverseProxy{Transport: transport, Rewrite: func(pr *httputil.ProxyRequest) {
		pr.SetURL(upstream)
		pr.Out.Header.Del("Authorization") // the proxy's own token: cl's credentials go upstream
	}}
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/openapi/v3") {
			http.NotFound(w, r)
			return
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	kc := clientcmdapi.NewConfig()
	kc.Clusters["k126"] = &clientcmdapi.Cluster{Server: srv.URL,
		CertificateAuthorityData: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})}
	kc.AuthInfos["k126"] = &clientcmdapi.AuthInfo{Token: "through-the-proxy"}
	kc.Contexts["k126"] = &clientcmdapi.Context{Cluster: "k126", AuthInfo: "k126"}
	kc.CurrentContext = "k126"
	b, err := clientcmd.Write(*kc)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// cleanupCRD deletes a CRD a test's chart installed (terminate leaves CRDs, as Helm does).
func cleanupCRD(t *testing.T, cl *devstack.Cluster, name string) {
	t.Helper()
	_ = dynClient(t, cl).Resource(apiextensionsCRDs).Delete(context.Background(), name, metav1.DeleteOptions{})
}

// What can never succeed fails the object at once, with the API server's reason — an
// invalid object, a value of the wrong type for the schema — while a cluster that cannot
// be reached is retried, shown Retrying, until the operation is stopped.
func TestRefusedObjectsFailAtOnceWhileAnUnreachableClusterRetries(t *testing.T) {
	down := stack.Clusters[2]
	refused := testenv.Chart("refused", "", map[string]string{"all.yaml": `apiVersion: v1
kind: Service
metadata:
  name: refused-port
spec:
  selector: {app: x}
  ports: [{port: 99999}]
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: refused-replicas
spec:
  replicas: two
  selector: {matchLabels: {app: x}}
  template:
    metadata: {labels: {app: x}}
    spec:
      containers: [{name: x, image: registry.local/x:1}]
`})
	d := newDeployment(t,
		app{name: "refused", chart: refused, placement: clusterNamed("cluster1")},
		app{name: "far", chart: webChart("far"), placement: clusterNamed(down.Name)})
	d.create()
	down.StopAPIServer()
	t.Cleanup(func() {
		if err := down.StartAPIServer(context.Background()); err != nil {
			t.Errorf("restart apiserver of %s: %v", down.Name, err)
		}
	})
	start := time.Now()
	d.operate(lifecycle.OpInstantiate)
	failed := map[string]string{}
	d.await("the refused objects Failed, the unreachable cluster Retrying", time.Minute, "", func(s status) bool {
		retrying := false
		for _, a := range s.Apps {
			for _, c := range a.Clusters {
				for _, r := range c.Resources {
					if r.RsyncStatus == lifecycle.ResFailed {
						failed[r.Name] = r.Error
						if r.Attempts != 0 {
							t.Errorf("%s failed after %d attempts, want none", r.Name, r.Attempts)
						}
					}
					retrying = retrying || (c.Cluster == down.Name && r.RsyncStatus == lifecycle.ResRetrying && r.Attempts >= 2)
				}
			}
		}
		return len(failed) == 2 && retrying
	})
	t.Logf("refused objects failed and the far cluster retried within %s", time.Since(start).Round(time.Millisecond))
	if !strings.Contains(failed["refused-port"], "Invalid value: 99999") {
		t.Errorf("the Service's error %q, want the API server's", failed["refused-port"])
	}
	if !strings.Contains(failed["refused-replicas"], "spec.replicas") || !strings.Contains(failed["refused-replicas"], "expected numeric") {
		t.Errorf("the Deployment's error %q, want the API server's schema refusal", failed["refused-replicas"])
	}
	d.operate(lifecycle.OpStop)
	d.await("InstantiateStopped", time.Minute, "", func(s status) bool { return s.Status == lifecycle.StatusInstantiateStopped })
}

// On a cluster reached through git, the committed manifests are the pruned ones, with the
// same warnings, from the schema the cluster's monitor reports: Flux's server-side apply
// would refuse the objects (and the whole Kustomization with them).
func TestUndeclaredFieldsAreDroppedOnAGitOpsCluster(t *testing.T) {
	gc := registerGitOps(t)
	chart := testenv.Chart("gstray", "", map[string]string{"all.yaml": `apiVersion: apps/v1
kind: DaemonSet
metadata:
  name: gstray-agent
spec:
  replicas: 2
  selector: {matchLabels: {app: gstray-agent}}
  template:
    metadata: {labels: {app: gstray-agent}}
    spec:
      containers: [{name: agent, image: registry.local/agent:1}]
---
apiVersion: k8s.cni.cncf.io/v1
kind: NetworkAttachmentDefinition
metadata:
  name: gstray-net
spec:
  config: '{"cniVersion": "0.3.1", "type": "bridge"}'
  bridge: br0
`})
	d := newDeployment(t, app{name: "gstray", chart: chart, placement: clusterNamed(gc)})
	d.logicalCloud, d.setUpCloud = "gitops", onClusters(gc)
	d.create()
	inst := d.operate(lifecycle.OpInstantiate).ContextID
	s := d.await("Instantiated", 3*time.Minute, "", func(s status) bool {
		return s.Status == lifecycle.StatusInstantiated || s.Status == lifecycle.StatusInstantiateFailed
	})
	want := map[string]string{"DaemonSet/gstray-agent": "spec.replicas", "NetworkAttachmentDefinition/gstray-net": "spec.bridge"}
	for _, a := range s.Apps {
		for _, c := range a.Clusters {
			for _, r := range c.Resources {
				key := r.GVK.Kind + "/" + r.Name
				if r.RsyncStatus != lifecycle.ResApplied || !strings.HasSuffix(r.Warning, ": "+want[key]) {
					t.Errorf("%s: %s, warning %q, want Applied with a warning naming %s", key, r.RsyncStatus, r.Warning, want[key])
				}
				delete(want, key)
			}
		}
	}
	if len(want) > 0 || s.Status != lifecycle.StatusInstantiated {
		t.Fatalf("status %s, objects not seen %v: %s", s.Status, want, pretty(s))
	}
	file := stack.GitOps.Path() + "/context/" + inst + "/app/gstray/gstray-agent+DaemonSet.yaml"
	out, err := stack.Git.Git(context.Background(), stack.GitOps.Repo, "show", stack.GitOps.Branch+":"+file)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out, "replicas") {
		t.Errorf("the committed DaemonSet still has replicas:\n%s", out)
	}
	nad := schema.GroupVersionResource{Group: "k8s.cni.cncf.io", Version: "v1", Resource: "network-attachment-definitions"}
	eventually(t, "the network attachment applied by Flux, without bridge", time.Minute, func() error {
		u, err := dynClient(t, stack.GitOps.Cluster).Resource(nad).Namespace("default").Get(context.Background(), "gstray-net", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if spec := u.Object["spec"]; !reflect.DeepEqual(spec, map[string]any{"config": `{"cniVersion": "0.3.1", "type": "bridge"}`}) {
			return fmt.Errorf("spec %v", spec)
		}
		return nil
	})
	d.operate(lifecycle.OpTerminate)
	d.await("Terminated", 2*time.Minute, "", func(s status) bool { return s.Status == lifecycle.StatusTerminated })
}

// An instantiate refused before anything is applied (here, a chart that does not render)
// leaves the DIG Approved, as EMCO leaves it, with the reason in the status: once the
// chart is mended the DIG is instantiated again, without a terminate first.
func TestARefusedInstantiateLeavesTheDIGApproved(t *testing.T) {
	broken := testenv.Chart("mend", "", map[string]string{"cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: mend\ndata:\n  a: {{ .Values.missing.key }}\n"})
	d := newDeployment(t, app{name: "mend", chart: broken, placement: clusterNamed("cluster1")})
	d.create()
	refused := d.operate(lifecycle.OpInstantiate)
	// The status reads the DIG's history, then its context: a read between the worker's
	// two writes (Approved again, then the context's failure) sees the failure with the
	// state before it, so both are awaited.
	s := d.await("InstantiateFailed", time.Minute, "", func(s status) bool {
		return s.Status == lifecycle.StatusInstantiateFailed && s.state() == lifecycle.StateApproved
	})
	recordHistory(t, refused.WorkflowID, "Instantiate-refused-render")
	if s.state() != lifecycle.StateApproved || s.Instance != refused.ContextID || !strings.Contains(s.Error, "nil pointer evaluating interface {}.key") {
		t.Fatalf("after the refused instantiate: state %s, instance %s, error %q; want Approved, the refused context and the chart's error",
			s.state(), s.Instance, s.Error)
	}
	d.c.multipart("PUT", d.ca()+"/apps/mend", res("mend", nil), testenv.Chart("mend", "", map[string]string{
		"cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: mend\ndata:\n  a: b\n"})).must(t, 200)
	again := d.operate(lifecycle.OpInstantiate)
	s = d.await("Instantiated", time.Minute, "", func(s status) bool { return s.Status == lifecycle.StatusInstantiated })
	if s.Instance != again.ContextID || s.state() != lifecycle.StateInstantiated {
		t.Errorf("the second instantiate: %s", pretty(s))
	}
	d.operate(lifecycle.OpTerminate)
	d.await("Terminated", time.Minute, "", func(s status) bool { return s.Status == lifecycle.StatusTerminated })
}

// After an update that moves an app to another cluster, its objects there carry the
// emco/deployment-id label naming the status context (states.statusctxid: the instance's
// first context, stable through updates, as in EMCO), as they did where they were.
func TestTheDeploymentIDOfAMovedAppNamesTheStatusContext(t *testing.T) {
	d := newDeployment(t, app{name: "mv", chart: webChart("mv"), placement: clusterNamed("cluster1")})
	d.create()
	first := d.operate(lifecycle.OpInstantiate)
	d.await("Instantiated", 2*time.Minute, "", func(s status) bool { return s.Status == lifecycle.StatusInstantiated })
	d.c.do("PUT", d.dig()+"/generic-placement-intents/gpi/app-intents/mv-placement", res("mv-placement",
		map[string]any{"app": "mv", "intent": clusterNamed("cluster2")})).must(t, 200)
	moved := d.update("update", nil)
	var st struct {
		States struct {
			StatusCtxID string `json:"statusctxid"`
		} `json:"states"`
		Instance string `json:"instance"`
	}
	d.c.do("GET", d.dig()+"/status", nil).must(t, 200).json(t, &st)
	if st.States.StatusCtxID != first.ContextID || st.Instance != moved.ContextID {
		t.Errorf("status: statusctxid %s, instance %s; want the first context %s and the update's %s",
			st.States.StatusCtxID, st.Instance, first.ContextID, moved.ContextID)
	}
	cs, err := stack.Clusters[1].Clientset()
	if err != nil {
		t.Fatal(err)
	}
	dep, err := cs.AppsV1().Deployments("default").Get(context.Background(), "mv", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := dep.Labels[lifecycle.DeploymentIDLabel], st.States.StatusCtxID+"-mv"; got != want {
		t.Errorf("the moved Deployment's %s is %q, want %q", lifecycle.DeploymentIDLabel, got, want)
	}
	d.operate(lifecycle.OpTerminate)
	d.await("Terminated", time.Minute, "", func(s status) bool { return s.Status == lifecycle.StatusTerminated })
}

// On a cluster reached through git, an object the API server refuses is Applied once
// committed, as EMCO says, and its readiness says at once, once Flux reports the refusal
// of what git holds, that no reconcile will apply it, with Flux's message.
func TestAGitOpsClusterRefusingAnObjectSaysSoInItsReadiness(t *testing.T) {
	gc := registerGitOps(t)
	chart := testenv.Chart("grefused", "", map[string]string{"svc.yaml": "apiVersion: v1\nkind: Service\nmetadata:\n  name: grefused\n" +
		"spec:\n  selector: {app: x}\n  ports: [{port: 99999}]\n"})
	d := newDeployment(t, app{name: "grefused", chart: chart, placement: clusterNamed(gc)})
	d.logicalCloud, d.setUpCloud = "gitops", onClusters(gc)
	d.create()
	d.operate(lifecycle.OpInstantiate)
	s := d.await("Instantiated", 2*time.Minute, "", func(s status) bool {
		return s.Status == lifecycle.StatusInstantiateFailed || s.Status == lifecycle.StatusInstantiated
	})
	if s.Status != lifecycle.StatusInstantiated || !anyResource(s, lifecycle.ResApplied, "") {
		t.Fatalf("status %s", pretty(s))
	}
	d.await("Flux's refusal in the readiness", 2*time.Minute, "?status=ready", func(s status) bool {
		return anyResource(s, "", "Flux refused what git holds for this deployment") && anyResource(s, "", "Invalid value: 99999")
	})
	d.operate(lifecycle.OpTerminate)
	d.await("Terminated", 2*time.Minute, "", func(s status) bool { return s.Status == lifecycle.StatusTerminated })
}

// A chart that branches on .Capabilities is rendered for each cluster it goes to, with that
// cluster's Kubernetes version and APIs (as helm install renders it for its cluster): here
// cluster2 serves an API cluster1 does not, and each gets its own ConfigMap; clusters with
// the same capabilities share one render. An update after the API went away from cluster2
// renders it as cluster1's.
func TestChartsRenderForEachClustersCapabilities(t *testing.T) {
	crd := map[string]any{"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
		"metadata": map[string]any{"name": "probes.caps.example.com"},
		"spec": map[string]any{"group": "caps.example.com", "scope": "Namespaced",
			"names": map[string]any{"plural": "probes", "singular": "probe", "kind": "Probe", "listKind": "ProbeList"},
			"versions": []any{map[string]any{"name": "v1", "served": true, "storage": true,
				"schema": map[string]any{"openAPIV3Schema": map[string]any{"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}}}}
	crds := dynClient(t, stack.Clusters[1]).Resource(apiextensionsCRDs)
	if _, err := crds.Create(context.Background(), &unstructured.Unstructured{Object: crd}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cleanupCRD(t, stack.Clusters[1], "probes.caps.example.com") })
	chart := testenv.Chart("caps", "", map[string]string{"cm.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: caps
data:
  probes: {{ if .Capabilities.APIVersions.Has "caps.example.com/v1" }}served{{ else }}absent{{ end }}
  kube: {{ .Capabilities.KubeVersion.Version | quote }}
`})
	d := newDeployment(t, app{name: "caps", chart: chart, placement: map[string]any{"allOf": []any{
		map[string]any{"clusterProvider": provider, "cluster": "cluster1"}, map[string]any{"clusterProvider": provider, "cluster": "cluster2"},
		map[string]any{"clusterProvider": provider, "cluster": "cluster3"}}}})
	d.create()
	acc := d.operate(lifecycle.OpInstantiate)
	d.await("Instantiated", 2*time.Minute, "", func(s status) bool { return s.Status == lifecycle.StatusInstantiated })
	recordHistory(t, acc.WorkflowID, "Instantiate-render-variants")
	data := func(i int) map[string]string {
		cs, err := stack.Clusters[i].Clientset()
		if err != nil {
			t.Fatal(err)
		}
		cm, err := cs.CoreV1().ConfigMaps("default").Get(context.Background(), "caps", metav1.GetOptions{})
		if err != nil {
			t.Fatalf("cluster%d: %v", i+1, err)
		}
		return cm.Data
	}
	for i, want := range []string{"absent", "served", "absent"} {
		if got := data(i); got["probes"] != want || got["kube"] != testenv.KubeVersion {
			t.Errorf("cluster%d: %v, want probes %s and kube %s (the cluster's own)", i+1, got, want, testenv.KubeVersion)
		}
	}
	cleanupCRD(t, stack.Clusters[1], "probes.caps.example.com")
	eventually(t, "the Probe API gone from cluster2", time.Minute, func() error {
		if _, err := crds.Get(context.Background(), "probes.caps.example.com", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			return fmt.Errorf("still there (%v)", err)
		}
		return nil
	})
	// The API's absence shows once cluster2's capabilities are read again (they are
	// kept 30 s): updates follow until it does.
	eventually(t, "cluster2 rendered without the Probe API", 2*time.Minute, func() error {
		d.update("update", nil)
		if got := data(1)["probes"]; got != "absent" {
			return fmt.Errorf("probes %s", got)
		}
		return nil
	})
	d.operate(lifecycle.OpTerminate)
	d.await("Terminated", time.Minute, "", func(s status) bool { return s.Status == lifecycle.StatusTerminated })
}
