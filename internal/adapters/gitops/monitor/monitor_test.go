package monitor

import (
	"context"
	"fmt"
	"log/slog"
	"reflect"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/temco/temco/internal/adapters/gitops"
	"github.com/temco/temco/internal/dev/testenv/poll"
)

const (
	clusterID = "local+gitops1"
	revision  = "main@sha1:0123456789abcdef0123456789abcdef01234567"
)

var (
	configMaps = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	widgets    = schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}
)

// One monitor beside a real cluster, writing to a real git server, pass after pass.
func TestMonitorWritesWhatFluxReportsToTheStatusBranch(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a local cluster")
	}
	ctx := context.Background()
	git := startGit(t)
	kube := startCluster(t)
	dc, err := dynamic.NewForConfig(kube)
	if err != nil {
		t.Fatal(err)
	}
	status := gitops.Remote{URL: git.url, Branch: gitops.StatusBranch(clusterID), User: gitUser, Token: gitToken}
	m := &Monitor{Kube: kube, Git: &gitops.Writer{Dir: t.TempDir()}, Remote: status, Cluster: clusterID,
		Interval: time.Hour, Log: slog.New(slog.NewTextHandler(t.Output(), nil))}
	reader := &gitops.Writer{Dir: t.TempDir()} // a temco worker

	// Kustomization apps applied a ConfigMap that exists, namespace default, a Deployment
	// that does not, and a Widget of a kind the cluster does not serve (yet); infra is
	// suspended and was never reconciled.
	create(t, dc, configMaps, map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"namespace": "default", "name": "hello"}})
	create(t, dc, kustomizations, kustomization("apps", false))
	setFluxStatus(t, dc, "apps", "True", "ReconciliationSucceeded", "Applied revision: "+revision, []any{
		map[string]any{"id": "default_hello__ConfigMap", "v": "v1"},
		map[string]any{"id": "_default__Namespace", "v": "v1"},
		map[string]any{"id": "default_web_apps_Deployment", "v": "v1"},
		map[string]any{"id": "default_gadget_example.com_Widget", "v": "v1"},
	})
	create(t, dc, kustomizations, kustomization("infra", true))

	t.Run("the first pass creates the status branch with a file per Kustomization", func(t *testing.T) {
		if h := git.head(t, status.Branch); h != "" {
			t.Fatalf("branch %s exists before the first pass: %s", status.Branch, h)
		}
		if wrote, err := m.Pass(ctx); err != nil || !wrote {
			t.Fatalf("first pass: wrote %v, %v", wrote, err)
		}
		got, err := readStatus(ctx, reader, status, clusterID)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 2 {
			t.Fatalf("status files of %v, want apps and infra", keys(got))
		}
		apps := got["default/apps"]
		widget := apps.Resources[len(apps.Resources)-1]
		if !strings.Contains(widget.Message, "does not serve") {
			t.Errorf("the Widget of a kind not served: message %q", widget.Message)
		}
		apps.Resources[len(apps.Resources)-1].Message = ""
		want := gitops.KustomizationStatus{Namespace: "default", Name: "apps", Generation: 1, ObservedGeneration: 1,
			Ready: "True", Reason: "ReconciliationSucceeded", Message: "Applied revision: " + revision,
			LastAppliedRevision: revision, LastAttemptedRevision: revision,
			Resources: []gitops.ResourceStatus{
				{Version: "v1", Kind: "ConfigMap", Namespace: "default", Name: "hello", Present: true, Ready: true},
				{Version: "v1", Kind: "Namespace", Name: "default", Present: true, Ready: true},
				{Group: "apps", Version: "v1", Kind: "Deployment", Namespace: "default", Name: "web"},
				{Group: "example.com", Version: "v1", Kind: "Widget", Namespace: "default", Name: "gadget"},
			}}
		if !reflect.DeepEqual(apps, want) {
			t.Errorf("status of apps\n%+v\nwant\n%+v", apps, want)
		}
		infra := got["default/infra"]
		if !infra.Suspended || infra.Ready != "" || infra.Generation != 1 || len(infra.Resources) != 0 {
			t.Errorf("status of the suspended, never reconciled infra: %+v", infra)
		}
		if msg, _ := git.Git(ctx, "gitops", "log", "-1", "--format=%s", status.Branch); msg != "temco gitops-monitor: status of "+clusterID {
			t.Errorf("commit message %q", msg)
		}
	})

	t.Run("a pass over an unchanged cluster makes no commit and no git request", func(t *testing.T) {
		// The cluster is live: its controllers may still move a status the first pass read
		// (a loaded run saw the second pass write). Passes until one writes nothing: then
		// the cluster stands still, and the next pass must not touch git at all.
		deadline := time.Now().Add(30 * time.Second)
		for {
			wrote, err := m.Pass(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if !wrote {
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("every pass for 30 s wrote a new status: the cluster never stood still")
			}
		}
		head, requests := git.head(t, status.Branch), git.requests.Load()
		if wrote, err := m.Pass(ctx); err != nil || wrote {
			t.Fatalf("second pass: wrote %v, %v", wrote, err)
		}
		if now := git.head(t, status.Branch); now != head {
			t.Errorf("the branch moved from %s to %s", head, now)
		}
		if n := git.requests.Load() - requests; n != 0 {
			t.Errorf("the pass made %d git requests", n)
		}
	})

	t.Run("a kind installed after the monitor started is found", func(t *testing.T) {
		installCRDs(t, dc, []byte(widgetCRD))
		poll.Until(t, "widgets served", time.Minute, func(ctx context.Context) error {
			_, err := dc.Resource(widgets).Namespace("default").List(ctx, metav1.ListOptions{})
			return err
		})
		create(t, dc, widgets, map[string]any{"apiVersion": "example.com/v1", "kind": "Widget",
			"metadata": map[string]any{"namespace": "default", "name": "gadget"}})
		if wrote, err := m.Pass(ctx); err != nil || !wrote {
			t.Fatalf("pass: wrote %v, %v", wrote, err)
		}
		got, err := readStatus(ctx, reader, status, clusterID)
		if err != nil {
			t.Fatal(err)
		}
		rs := got["default/apps"].Resources
		if w := rs[len(rs)-1]; w.Kind != "Widget" || !w.Present || !w.Ready || w.Message != "" {
			t.Errorf("the Widget now served: %+v", w)
		}
	})

	t.Run("a deleted Kustomization's file disappears", func(t *testing.T) {
		if err := dc.Resource(kustomizations).Namespace("default").Delete(ctx, "infra", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		if wrote, err := m.Pass(ctx); err != nil || !wrote {
			t.Fatalf("pass: wrote %v, %v", wrote, err)
		}
		got, err := readStatus(ctx, reader, status, clusterID)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := got["default/apps"]; !ok || len(got) != 1 {
			t.Errorf("status files of %v, want apps only", keys(got))
		}
	})

	t.Run("a refused push is logged without the token, and retried", func(t *testing.T) {
		const wrong = "wrong-token-5be1f0"
		var logs logBuffer
		bad := &Monitor{Kube: kube, Git: &gitops.Writer{Dir: t.TempDir()}, Cluster: clusterID,
			Remote:   gitops.Remote{URL: git.url, Branch: status.Branch, User: gitUser, Token: wrong},
			Interval: 100 * time.Millisecond, Log: slog.New(slog.NewJSONHandler(&logs, nil))}
		stop := runInBackground(t, bad)
		poll.Until(t, "two failed passes logged", time.Minute, func(context.Context) error {
			if n := strings.Count(logs.String(), "status pass failed"); n < 2 {
				return fmt.Errorf("%d failed passes logged", n)
			}
			return nil
		})
		stop()
		if out := logs.String(); strings.Contains(out, wrong) {
			t.Errorf("the log shows the token:\n%s", out)
		}
	})

	t.Run("Run reports a change at the next interval and stops with its context", func(t *testing.T) {
		m.Interval = 200 * time.Millisecond
		stop := runInBackground(t, m)
		setFluxStatus(t, dc, "apps", "False", "HealthCheckFailed", "timeout waiting for: [Deployment/default/web status: 'NotFound']", nil)
		poll.Until(t, "the status published", time.Minute, func(ctx context.Context) error {
			got, err := readStatus(ctx, reader, status, clusterID)
			if err != nil {
				return err
			}
			if apps := got["default/apps"]; apps.Ready != "False" || apps.Reason != "HealthCheckFailed" {
				return fmt.Errorf("apps reported Ready=%s %s", apps.Ready, apps.Reason)
			}
			return nil
		})
		stop()
	})
}

// runInBackground runs m.Run; stop cancels it and waits until Run has returned.
func runInBackground(t *testing.T, m *Monitor) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx) }()
	return func() {
		t.Helper()
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Run: %v", err)
			}
		case <-time.After(30 * time.Second):
			t.Fatal("Run did not return 30s after its context ended")
		}
	}
}

func kustomization(name string, suspend bool) map[string]any {
	return map[string]any{"apiVersion": "kustomize.toolkit.fluxcd.io/v1", "kind": "Kustomization",
		"metadata": map[string]any{"namespace": "default", "name": name},
		"spec": map[string]any{"interval": "1m", "path": "./" + name, "prune": true, "suspend": suspend,
			"sourceRef": map[string]any{"kind": "GitRepository", "name": "flux-system"}}}
}

// setFluxStatus writes what kustomize-controller would: the Ready condition, the
// revisions and, unless nil, the inventory.
func setFluxStatus(t *testing.T, dc dynamic.Interface, name, ready, reason, message string, inventory []any) {
	t.Helper()
	ctx := context.Background()
	k, err := dc.Resource(kustomizations).Namespace("default").Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	st, _, _ := unstructured.NestedMap(k.Object, "status")
	if st == nil {
		st = map[string]any{}
	}
	st["observedGeneration"] = k.GetGeneration()
	st["lastAppliedRevision"], st["lastAttemptedRevision"] = revision, revision
	st["conditions"] = []any{map[string]any{"type": "Ready", "status": ready, "reason": reason, "message": message,
		"lastTransitionTime": "2026-01-02T03:04:05Z", "observedGeneration": k.GetGeneration()}}
	if inventory != nil {
		st["inventory"] = map[string]any{"entries": inventory}
	}
	k.Object["status"] = st
	if _, err := dc.Resource(kustomizations).Namespace("default").UpdateStatus(ctx, k, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("status of Kustomization %s: %v", name, err)
	}
}

func create(t *testing.T, dc dynamic.Interface, r schema.GroupVersionResource, obj map[string]any) {
	t.Helper()
	u := &unstructured.Unstructured{Object: obj}
	if _, err := dc.Resource(r).Namespace(u.GetNamespace()).Create(context.Background(), u, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create %s %s/%s: %v", u.GetKind(), u.GetNamespace(), u.GetName(), err)
	}
}

func keys(m map[string]gitops.KustomizationStatus) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

const widgetCRD = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.com
spec:
  group: example.com
  scope: Namespaced
  names: {plural: widgets, singular: widget, kind: Widget, listKind: WidgetList}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}
`
