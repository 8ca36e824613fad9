package hub

import (
	"context"
	"encoding/base64"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/temco/temco/hubapi/v1alpha1"
	"github.com/temco/temco/internal/dev/testenv"
)

var (
	secrets        = schema.GroupVersionResource{Version: "v1", Resource: "secrets"}
	kustomizations = schema.GroupVersionResource{Group: "kustomize.toolkit.fluxcd.io", Version: "v1", Resource: "kustomizations"}
)

// versionedWeb is the web chart at version, its ConfigMap's default message "v<version>".
func versionedWeb(version string) []byte {
	return testenv.VersionedChart("web", version, "replicas: 1\nmessage: v"+version+"\n", map[string]string{"all.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: web-config
data:
  message: {{ .Values.message | quote }}
`})
}

// GitOps of temco itself: the stack's Flux applies folder hub/ of its git repository to
// the hub. A commit adds a composite app (its chart from the stack's Helm repository) and
// a DIG: it is deployed; a commit changing the chart's version updates it on the
// clusters; a commit deleting the DIG's file terminates it.
func TestGitOpsOfTemcoItself(t *testing.T) {
	fleet(t)
	ctx := context.Background()
	g := stack.GitOps
	dyn, err := g.Cluster.Dynamic()
	if err != nil {
		t.Fatal(err)
	}
	kc, err := os.ReadFile(stack.Hub().Kubeconfig())
	if err != nil {
		t.Fatal(err)
	}
	sec := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Secret",
		"metadata": map[string]any{"name": "hub-kubeconfig", "namespace": "flux-system"}, "stringData": map[string]any{"value": string(kc)}}}
	if _, err := dyn.Resource(secrets).Namespace("flux-system").Create(ctx, sec, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	ks := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "kustomize.toolkit.fluxcd.io/v1", "kind": "Kustomization",
		"metadata": map[string]any{"name": "temco-hub", "namespace": "flux-system"},
		"spec": map[string]any{"sourceRef": map[string]any{"kind": "GitRepository", "name": "flux-system"}, "path": "./hub",
			"prune": true, "interval": "10s", "kubeConfig": map[string]any{"secretRef": map[string]any{"name": "hub-kubeconfig"}}}}}
	if _, err := dyn.Resource(kustomizations).Namespace("flux-system").Create(ctx, ks, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	testenv.PublishChart(t, stack.Stack, versionedWeb("0.1.0"), "web-0.1.0.tgz")
	testenv.PublishChart(t, stack.Stack, versionedWeb("0.2.0"), "web-0.2.0.tgz")
	app := func(version string) string {
		return fmt.Sprintf(`apiVersion: temco.io/v1alpha1
kind: CompositeApp
metadata: {name: store-v1, namespace: shopping}
spec:
  name: store
  version: v1
  apps:
  - name: web
    chart: {helmRepo: %q, chart: web, version: %q}
  profiles:
  - name: prof
    profiles: [{name: web-profile, app: web, archiveFrom: {name: store-files, key: web-profile.tgz}}]
---
apiVersion: v1
kind: ConfigMap
metadata: {name: store-files, namespace: shopping}
binaryData:
  web-profile.tgz: %s
`, stack.HelmRepo.URL(), version, base64.StdEncoding.EncodeToString(testenv.Profile("replicas: 1\n")))
	}
	const digFile = `apiVersion: temco.io/v1alpha1
kind: DeploymentIntentGroup
metadata: {name: gitdig, namespace: shopping}
spec:
  compositeApp: store
  compositeAppVersion: v1
  compositeProfile: prof
  version: r1
  logicalCloud: default
  placement:
  - app: web
    allOf: [{clusterProvider: local, clusterLabel: edge}]
  state: Instantiated
`
	if err := g.Commit(ctx, map[string]string{"hub/store.yaml": app("0.1.0"), "hub/gitdig.yaml": digFile}, "temco: store v1 with web 0.1.0, deployed"); err != nil {
		t.Fatal(err)
	}
	d := &v1.DeploymentIntentGroup{ObjectMeta: objMeta("shopping", "gitdig")}
	eventually(t, 4*time.Minute, "gitdig deployed from git", deployed(t, d, 1, "v0.1.0"))

	if err := g.Commit(ctx, map[string]string{"hub/store.yaml": app("0.2.0")}, "temco: web 0.2.0"); err != nil {
		t.Fatal(err)
	}
	eventually(t, 4*time.Minute, "gitdig updated to the chart's 0.2.0", deployed(t, d, 2, "v0.2.0"))

	if err := g.Remove(ctx, []string{"hub/gitdig.yaml"}, "temco: gitdig removed"); err != nil {
		t.Fatal(err)
	}
	eventually(t, 4*time.Minute, "gitdig terminated and deleted", func() error {
		if err := hub.Get(ctx, client.ObjectKey{Namespace: "shopping", Name: "gitdig"}, d); !apierrors.IsNotFound(err) {
			return fmt.Errorf("still there (%v): %+v", err, d.Status.Conditions)
		}
		if got := strings.Join(messages(t), ","); got != "," {
			return fmt.Errorf("messages %s", got)
		}
		return nil
	})
	if c := restStatus(t, "/v2/projects/shopping/composite-apps/store/v1/deployment-intent-groups/gitdig"); c != 404 {
		t.Errorf("the DIG in temco after its file went: %d, want 404", c)
	}
}

// kubectl apply: an object the CRD's schema refuses never reaches the hub (kubectl says
// why); one the schema takes but temco refuses is reported on the object — Accepted
// False with the API's reason, an Event — and shown by kubectl get.
func TestKubectlApplyWithAnInvalidObject(t *testing.T) {
	fleet(t)
	kubectl := func(stdin string, args ...string) (string, error) {
		cmd := exec.Command(filepath.Join(stack.Hub().BinDir, "kubectl"), append([]string{"--kubeconfig", stack.Hub().Kubeconfig()}, args...)...)
		cmd.Stdin = strings.NewReader(stdin)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	noPlacement := `apiVersion: temco.io/v1alpha1
kind: DeploymentIntentGroup
metadata: {name: noplacement, namespace: shopping}
spec: {compositeApp: shop, compositeAppVersion: v1, compositeProfile: prof, version: r1, logicalCloud: default, state: Bogus}
`
	out, err := kubectl(noPlacement, "apply", "-f", "-")
	if err == nil || !strings.Contains(out, "spec.placement: Required value") || !strings.Contains(out, `spec.state: Unsupported value: "Bogus"`) {
		t.Errorf("kubectl apply of a DIG without placement and a bad state: err %v, output:\n%s", err, out)
	}
	wrongCloud := `apiVersion: temco.io/v1alpha1
kind: DeploymentIntentGroup
metadata: {name: nocloud, namespace: shopping}
spec:
  compositeApp: shop
  compositeAppVersion: v1
  compositeProfile: prof
  version: r1
  logicalCloud: nowhere
  placement: [{app: web, allOf: [{clusterProvider: local, clusterLabel: edge}]}]
  state: Instantiated
`
	if out, err := kubectl(wrongCloud, "apply", "-f", "-"); err != nil {
		t.Fatalf("kubectl apply: %v\n%s", err, out)
	}
	eventually(t, time.Minute, "nocloud refused", func() error {
		var d v1.DeploymentIntentGroup
		if err := hub.Get(context.Background(), client.ObjectKey{Namespace: "shopping", Name: "nocloud"}, &d); err != nil {
			return err
		}
		c := meta.FindStatusCondition(d.Status.Conditions, v1.Accepted)
		if c == nil || c.Status != metav1.ConditionFalse || !strings.Contains(c.Message, "nowhere") || c.ObservedGeneration != d.Generation {
			return fmt.Errorf("accepted %+v", c)
		}
		return nil
	})
	out, err = kubectl("", "get", "dig", "-n", "shopping", "nocloud")
	if err != nil || !strings.Contains(out, "nocloud") || !strings.Contains(out, "False") {
		t.Errorf("kubectl get dig: %v\n%s", err, out)
	}
	out, err = kubectl("", "events", "-n", "shopping", "--for", "deploymentintentgroup.temco.io/nocloud")
	if err != nil || !strings.Contains(out, "Refused") || !strings.Contains(out, "nowhere") {
		t.Errorf("kubectl events: %v\n%s", err, out)
	}
	if out, err := kubectl("", "delete", "dig", "-n", "shopping", "nocloud", "--wait=true", "--timeout=60s"); err != nil {
		t.Errorf("kubectl delete of a refused DIG: %v\n%s", err, out)
	}
}
