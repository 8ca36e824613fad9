package e2e

import (
	"bytes"
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/temco/temco/internal/adapters/archive"
	"github.com/temco/temco/internal/core/lifecycle"
)

// The EMCO-style example under tests/emco (emcoctl files, a values file, charts and
// profiles packed as EMCO's examples pack them) runs unchanged with docs/emcoctl.md's commands:
// onboarding with a GitOps cluster and a standard logical cloud, a DIG whose intents come
// before its placement intent, instantiate, update, rollback and delete, with status
// checked at each step. Only the kubeconfig paths differ from `make run`'s, given by a
// second values file.
func TestEMCOExampleRunsUnchanged(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	override := filepath.Join(t.TempDir(), "clusters.yaml")
	if err := os.WriteFile(override, []byte("KubeConfig1: "+stack.Clusters[0].Kubeconfig()+
		"\nKubeConfig2: "+stack.Clusters[1].Kubeconfig()+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// run runs one client command from the repository root, as docs/emcoctl.md does; every
	// document must succeed or be skipped.
	run := func(cmd string, files ...string) string {
		t.Helper()
		args := []string{cmd}
		for _, f := range files {
			args = append(args, "-f", "tests/emco/"+f)
		}
		args = append(args, "-v", "tests/emco/values.yaml", "-v", override)
		if cmd == "apply" { // delete always awaits its terminate
			args = append(args, "--wait")
		}
		out, err := temco(t, root, args...)
		if err != nil {
			t.Fatalf("temco %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return out
	}
	const dig = "/projects/emco-demo/composite-apps/shop/v1/deployment-intent-groups/shop-dig"
	const cloud = "/projects/emco-demo/logical-clouds/shop-cloud"
	c := &client{t: t}
	var s struct {
		DeployedStatus string         `json:"deployedStatus"`
		ReadyStatus    string         `json:"readyStatus"`
		DeployedCounts map[string]int `json:"deployedCounts"`
		ReadyCounts    map[string]int `json:"readyCounts"`
		Revision       int64          `json:"revision"`
		Error          string         `json:"error"`
	}
	// awaitReady polls the DIG's readiness (a live read of both clusters) until every
	// object is Ready at revision rev, and checks the web Deployment's replicas.
	awaitReady := func(step string, rev int64, replicas int32, cacheMessage string) {
		t.Helper()
		c.do("GET", dig+"/status?status=deployed&output=summary", nil).must(t, 200).json(t, &s)
		if s.DeployedStatus != lifecycle.StatusInstantiated || s.DeployedCounts[lifecycle.ResApplied] != 12 || s.Revision != rev {
			t.Fatalf("%s: deployed status %s %v revision %d (%s), want Instantiated, 12 Applied, revision %d",
				step, s.DeployedStatus, s.DeployedCounts, s.Revision, s.Error, rev)
		}
		deadline := time.Now().Add(2 * time.Minute)
		for {
			c.do("GET", dig+"/status?status=ready&output=summary", nil).must(t, 200).json(t, &s)
			if s.ReadyStatus == "Ready" && s.ReadyCounts["Ready"] == 12 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: not Ready: %s %v", step, s.ReadyStatus, s.ReadyCounts)
			}
			time.Sleep(250 * time.Millisecond)
		}
		for _, cl := range stack.Clusters[:2] {
			cs, _ := cl.Clientset()
			dep, err := cs.AppsV1().Deployments("emco-shop").Get(context.Background(), "web", metav1.GetOptions{})
			if err != nil || *dep.Spec.Replicas != replicas {
				t.Errorf("%s: web on %s: %v, want %d replicas", step, cl.Name, err, replicas)
			}
			cm, err := cs.CoreV1().ConfigMaps("emco-shop").Get(context.Background(), "cache-config", metav1.GetOptions{})
			if err != nil || cm.Data["message"] != cacheMessage {
				t.Errorf("%s: cache-config on %s: %v %v, want message %q", step, cl.Name, err, cm.Data, cacheMessage)
			}
		}
	}

	out := run("apply", "prerequisites.yaml", "deployment.yaml")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 32 {
		t.Errorf("apply printed %d lines, want one per document (32):\n%s", len(lines), out)
	}
	for _, l := range lines { // "N anchor: METHOD /v2/path STATUS"
		if f := strings.Fields(l); len(f) < 5 || (f[4] != "201" && f[4] != "202") {
			t.Errorf("apply line %q: want 201 or 202", l)
		}
	}
	// The logical cloud answers as dcm's does (readiness by default); the GitOps
	// cluster is stored with its gitOps spec.
	var lc struct {
		ReadyStatus string `json:"readyStatus"`
		Clusters    []any  `json:"clusters"`
	}
	c.do("GET", cloud+"/status", nil).must(t, 200).json(t, &lc)
	if lc.ReadyStatus != "Ready" || len(lc.Clusters) != 2 {
		t.Errorf("logical cloud status: %+v", lc)
	}
	if b := c.do("GET", "/cluster-providers/emco-edge/clusters/edge-git", nil).must(t, 200).body; !bytes.Contains(b, []byte(`"gitOpsType":"fluxcd"`)) {
		t.Errorf("GitOps cluster: %s", b)
	}
	for _, cl := range stack.Clusters[:2] {
		cs, _ := cl.Clientset()
		if _, err := cs.RbacV1().RoleBindings("kube-system").Get(context.Background(), "shop-cloud-system-reader", metav1.GetOptions{}); err != nil {
			t.Errorf("%s: the permission in kube-system: %v", cl.Name, err)
		}
		if q, err := cs.CoreV1().ResourceQuotas("emco-shop").Get(context.Background(), "shop-quota", metav1.GetOptions{}); err != nil || q.Spec.Hard.Pods().String() != "50" {
			t.Errorf("%s: the cluster quota: %v", cl.Name, err)
		}
	}
	awaitReady("instantiate", 1, 1, "from-the-cache-profile")

	if out := run("update", "changes.yaml"); !strings.Contains(out, "PUT /v2"+dig+" 200") {
		t.Errorf("update: %s", out)
	}
	run("apply", "update.yaml")
	awaitReady("update", 2, 2, "updated")
	run("apply", "rollback.yaml")
	awaitReady("rollback", 3, 1, "from-the-cache-profile")
	if out := run("get", "deployment.yaml"); !strings.Contains(out, `"compositeProfile":"shop-profile"`) {
		t.Errorf("get does not print the DIG: %s", out)
	}

	run("delete", "deployment.yaml")
	c.do("GET", dig, nil).must(t, 404)
	for _, cl := range stack.Clusters[:2] {
		cs, _ := cl.Clientset()
		if _, err := cs.AppsV1().Deployments("emco-shop").Get(context.Background(), "web", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("%s: web after delete: %v", cl.Name, err)
		}
	}
	run("delete", "prerequisites.yaml")
	c.do("GET", "/projects/emco-demo", nil).must(t, 404)
	c.do("GET", "/cluster-providers/emco-edge", nil).must(t, 404)
	for _, cl := range stack.Clusters[:2] {
		cs, _ := cl.Clientset()
		if _, err := cs.RbacV1().RoleBindings("kube-system").Get(context.Background(), "shop-cloud-system-reader", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("%s: the permission in kube-system outlived the cloud: %v", cl.Name, err)
		}
	}
}

// The packed charts and profiles hold exactly their sources' files (`make emco-example`
// packs them again), in the layouts EMCO's examples use.
func TestEMCOExamplePackagesMatchTheirSources(t *testing.T) {
	for pkg, src := range map[string]string{"web.tgz": "charts", "cache.tgz": "charts",
		"web-profile.tar.gz": "profiles/web", "cache-profile.tar.gz": "profiles/cache"} {
		data, err := os.ReadFile(filepath.Join("../emco/packed", pkg))
		if err != nil {
			t.Fatal(err)
		}
		files, err := archive.Read(data)
		if err != nil {
			t.Fatalf("%s: %v", pkg, err)
		}
		want := map[string][]byte{}
		base := filepath.Join("../emco", src)
		if src == "charts" {
			base = filepath.Join(base, strings.TrimSuffix(pkg, ".tgz"))
		}
		_ = filepath.WalkDir(base, func(p string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				rel, _ := filepath.Rel(filepath.Join("../emco", src), p)
				want[filepath.ToSlash(rel)], _ = os.ReadFile(p)
			}
			return err
		})
		if len(files) != len(want) {
			t.Errorf("%s holds %d files, its sources %d: run make emco-example", pkg, len(files), len(want))
		}
		for name, b := range want {
			if !bytes.Equal(files[name], b) {
				t.Errorf("%s: %s differs from its source: run make emco-example", pkg, name)
			}
		}
	}
}
