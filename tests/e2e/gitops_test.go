package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/temco/temco/internal/core/lifecycle"
	"github.com/temco/temco/internal/dev/testenv"
)

var (
	gitOpsOnce sync.Once
	gitOpsErr  error
)

// Sync objects of the stack's provider: the git repository's access and Flux's timers
// (short, so that Flux picks commits up within seconds).
const (
	syncRepo  = "gitops-repo"
	syncTimer = "gitops-timers"
)

// registerGitOps registers the stack's GitOps cluster as EMCO files do it: sync objects
// holding the repository's access, and the cluster with spec.gitOps and a placeholder file.
func registerGitOps(t *testing.T) string {
	t.Helper()
	g := stack.GitOps
	if g == nil {
		t.Fatal("the stack has no GitOps cluster")
	}
	gitOpsOnce.Do(func() {
		c := &client{t: t}
		sync := "/cluster-providers/" + provider + "/cluster-sync-objects"
		for _, r := range []response{
			c.do("POST", sync, res(syncRepo, map[string]any{"kv": []any{
				map[string]string{"url": g.URL()}, map[string]string{"branch": g.Branch}, map[string]string{"userName": g.User},
				map[string]string{"gitToken": g.Password}, map[string]string{"repoName": g.Repo}}})),
			c.do("POST", sync, res(syncTimer, map[string]any{"kv": []any{
				map[string]string{"timeOut": "20"}, map[string]string{"syncInterval": "5"}, map[string]string{"retryInterval": "5"}}})),
			gitOpsCluster(c, g.Cluster.Name, syncRepo, syncTimer),
			c.do("POST", "/cluster-providers/"+provider+"/clusters/"+g.Cluster.Name+"/labels", map[string]string{"clusterLabel": "gitops"}),
		} {
			if r.code != 201 {
				gitOpsErr = fmt.Errorf("register the GitOps cluster: %d %s", r.code, r.body)
			}
		}
	})
	if gitOpsErr != nil {
		t.Fatal(gitOpsErr)
	}
	return g.Cluster.Name
}

// gitOpsCluster registers a Flux cluster reached through git with the given sync objects.
func gitOpsCluster(c *client, name, ref, resource string) response {
	return c.multipart("POST", "/cluster-providers/"+provider+"/clusters", res(name, map[string]any{"gitOps": map[string]string{
		"gitOpsType": "fluxcd", "gitOpsReferenceObject": ref, "gitOpsResourceObject": resource}}), []byte("values: placeholder\n"))
}

// onClusters sets up an admin logical cloud over the named clusters for d.
func onClusters(clusters ...string) func(*deployment) {
	return func(d *deployment) { d.cloud(d.logicalCloud, map[string]any{"level": "0"}, clusters...) }
}

// gitLog lists the subjects of the commits on the deploy branch touching path.
func gitLog(t *testing.T, path string) []string {
	t.Helper()
	out, err := stack.Git.Git(context.Background(), stack.GitOps.Repo, "log", "--format=%s", stack.GitOps.Branch, "--", path)
	if err != nil {
		t.Fatal(err)
	}
	if out == "" {
		return nil
	}
	return strings.Split(out, "\n")
}

// gitFiles lists the files under path on the deploy branch.
func gitFiles(t *testing.T, path string) []string {
	t.Helper()
	out, err := stack.Git.Git(context.Background(), stack.GitOps.Repo, "ls-tree", "-r", "--name-only", stack.GitOps.Branch, "--", path)
	if err != nil {
		t.Fatal(err)
	}
	if out == "" {
		return nil
	}
	return strings.Split(out, "\n")
}

var (
	gvrDeployment = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
	gvrConfigMap  = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	gvrService    = schema.GroupVersionResource{Version: "v1", Resource: "services"}
)

// present checks that object name is (want) or is not on the GitOps cluster.
func presentOnGitOps(t *testing.T, gvr schema.GroupVersionResource, name string, want bool) func() error {
	return func() error {
		u, err := dynClient(t, stack.GitOps.Cluster).Resource(gvr).Namespace("default").Get(context.Background(), name, metav1.GetOptions{})
		switch {
		case want && err != nil:
			return err
		case !want && err == nil:
			return fmt.Errorf("%s %s is still there", gvr.Resource, name)
		case !want && !apierrors.IsNotFound(err):
			return err
		case want && !strings.HasPrefix(u.GetLabels()["kustomize.toolkit.fluxcd.io/name"], "kust"):
			return fmt.Errorf("%s %s was not applied by Flux: labels %v", gvr.Resource, name, u.GetLabels())
		}
		return nil
	}
}

// A DIG placed on a cluster reached with its kubeconfig and on one reached only through
// git: instantiate applies the first directly and commits the second's objects, which
// Flux applies; status says deployed once committed (as EMCO's), ready from the objects'
// own status as the cluster's monitor reports it once Flux applied the commit; an update
// commits the difference (a removed object leaves git and the cluster), a rollback brings
// it back, and terminate removes the deployment. One commit per cluster and operation,
// naming the DIG, operation and revision.
func TestGitOpsDeploysThroughFlux(t *testing.T) {
	gc := registerGitOps(t)
	d := newDeployment(t, app{name: "gweb", chart: webChart("gweb"), placement: map[string]any{"allOf": []any{
		map[string]any{"clusterProvider": provider, "cluster": "cluster1"},
		map[string]any{"clusterProvider": provider, "cluster": gc}}}})
	d.logicalCloud, d.setUpCloud = "gitops", onClusters("cluster1", gc)
	d.create()
	// A second DIG on the GitOps cluster, instantiated at the same time: its commits race
	// the first's on the same branch, and neither is lost.
	other := newDeployment(t, app{name: "gother", chart: webChart("gother"), placement: clusterNamed(gc)})
	other.project += "-other"
	other.logicalCloud, other.setUpCloud = "gitops", onClusters(gc)
	other.create()
	inst := d.operate(lifecycle.OpInstantiate).ContextID
	otherInst := other.operate(lifecycle.OpInstantiate).ContextID
	d.await("Instantiated", 3*time.Minute, "", func(s status) bool { return s.Status == lifecycle.StatusInstantiated })
	other.await("Instantiated", 3*time.Minute, "", func(s status) bool { return s.Status == lifecycle.StatusInstantiated })
	eventually(t, "the other DIG applied by Flux", time.Minute, presentOnGitOps(t, gvrDeployment, "gother", true))
	if files := gitFiles(t, stack.GitOps.Path()+"/context/"+otherInst); len(files) != 3 {
		t.Errorf("the other DIG's files: %v", files)
	}
	for _, o := range []struct {
		gvr  schema.GroupVersionResource
		name string
	}{{gvrDeployment, "gweb"}, {gvrConfigMap, "gweb-config"}, {gvrService, "gweb"}} {
		eventually(t, o.name+" applied by Flux", time.Minute, presentOnGitOps(t, o.gvr, o.name, true))
	}
	folder := stack.GitOps.Path() + "/context/" + inst
	files := gitFiles(t, folder)
	want := []string{folder + "/app/gweb/gweb+Deployment.yaml", folder + "/app/gweb/gweb+Service.yaml", folder + "/app/gweb/gweb-config+ConfigMap.yaml"}
	if !slices.Equal(files, want) {
		t.Errorf("files of the deployment in git:\n got %v\nwant %v", files, want)
	}
	if kust := gitFiles(t, stack.GitOps.Path()+"/kust"+inst+".yaml"); len(kust) != 1 {
		t.Errorf("no Kustomization file kust%s.yaml in git", inst)
	}
	log := gitLog(t, folder)
	if len(log) != 1 || !strings.Contains(log[0], "instantiate") || !strings.Contains(log[0], "revision 1") ||
		!strings.Contains(log[0], "/deployment-intent-groups/dig") {
		t.Errorf("commits of the instantiate: %q", log)
	}
	// Ready on both clusters: read live on cluster1, from the monitor's report on the GitOps one.
	d.await("Ready", time.Minute, "?status=ready&output=summary", func(s status) bool { return s.ReadyStatus == "Ready" })

	// Update: the chart without its Service.
	d.c.multipart("PUT", d.ca()+"/apps/gweb", res("gweb", nil), testenv.Chart("gweb", "replicas: 1\nmessage: default\n",
		map[string]string{"cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: gweb-config\ndata:\n  message: updated\n"})).must(t, 200)
	d.update(lifecycle.OpUpdate, nil)
	eventually(t, "the Service pruned by Flux", time.Minute, presentOnGitOps(t, gvrService, "gweb", false))
	if err := presentOnGitOps(t, gvrConfigMap, "gweb-config", true)(); err != nil {
		t.Error(err)
	}
	if files := gitFiles(t, folder); !slices.Equal(files, []string{folder + "/app/gweb/gweb-config+ConfigMap.yaml"}) {
		t.Errorf("files after the update: %v", files)
	}
	if log := gitLog(t, folder); len(log) != 2 || !strings.Contains(log[0], "update") || !strings.Contains(log[0], "revision 2") {
		t.Errorf("commits after the update: %q", log)
	}

	// Rollback to revision 1: the Service comes back.
	d.update(lifecycle.OpRollback, map[string]any{"metadata": map[string]any{"name": "back"}, "spec": map[string]any{"revision": "1"}})
	eventually(t, "the Service back through Flux", time.Minute, presentOnGitOps(t, gvrService, "gweb", true))
	if files := gitFiles(t, folder); !slices.Equal(files, want) {
		t.Errorf("files after the rollback: %v", files)
	}
	if log := gitLog(t, folder); len(log) != 3 || !strings.Contains(log[0], "rollback") || !strings.Contains(log[0], "revision 3") {
		t.Errorf("commits after the rollback: %q", log)
	}

	d.operate(lifecycle.OpTerminate)
	d.await("Terminated", 3*time.Minute, "", func(s status) bool { return s.Status == lifecycle.StatusTerminated })
	for _, o := range []struct {
		gvr  schema.GroupVersionResource
		name string
	}{{gvrDeployment, "gweb"}, {gvrConfigMap, "gweb-config"}} {
		eventually(t, o.name+" removed by Flux", time.Minute, presentOnGitOps(t, o.gvr, o.name, false))
	}
	if files := gitFiles(t, folder); len(files) != 0 {
		t.Errorf("files left after terminate: %v", files)
	}
	if log := gitLog(t, folder); len(log) != 4 || !strings.Contains(log[0], "terminate") {
		t.Errorf("commits after terminate: %q", log)
	}
	other.operate(lifecycle.OpTerminate)
	other.await("Terminated", 3*time.Minute, "", func(s status) bool { return s.Status == lifecycle.StatusTerminated })
	eventually(t, "the other DIG removed", time.Minute, presentOnGitOps(t, gvrDeployment, "gother", false))
}

// resources lists every resource status of s.
func resources(s status) []string {
	var out []string
	for _, a := range s.Apps {
		for _, c := range a.Clusters {
			for _, r := range c.Resources {
				out = append(out, c.Cluster+" "+r.GVK.Kind+"/"+r.Name+" "+r.RsyncStatus+": "+r.Error)
			}
		}
	}
	return out
}

// anyResource tells whether some resource of s is in state with an error containing text.
func anyResource(s status, state, text string) bool {
	for _, r := range resources(s) {
		if strings.Contains(r, " "+state+": ") && strings.Contains(r, text) {
			return true
		}
	}
	return false
}

// gitHead is the deploy branch's head on the server.
func gitHead(t *testing.T) string {
	t.Helper()
	out, err := stack.Git.Git(context.Background(), stack.GitOps.Repo, "rev-parse", stack.GitOps.Branch)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// What goes wrong between temco and a GitOps cluster shows on the DIG: an unreachable git
// server as Retrying with the error, recovering once the server is back; a push the
// server refuses (a protected branch, a bad token) as Failed with the reason and nothing
// committed. A cluster whose Flux is not temco's (no monitor reports back) is deployed
// once committed, as EMCO says, and its readiness says that nothing reports.
func TestGitOpsFailures(t *testing.T) {
	gc := registerGitOps(t)
	one := func(t *testing.T, cluster string) *deployment {
		d := newDeployment(t, app{name: "gweb", chart: webChart("gweb"), placement: clusterNamed(cluster)})
		d.logicalCloud, d.setUpCloud = "gitops", onClusters(cluster)
		d.create()
		return d
	}

	t.Run("git server down", func(t *testing.T) {
		d := one(t, gc)
		if err := stack.Git.Stop(); err != nil {
			t.Fatal(err)
		}
		restarted := false
		t.Cleanup(func() {
			if !restarted {
				_ = stack.Git.Start()
			}
		})
		d.operate(lifecycle.OpInstantiate)
		d.await("Retrying with the error", time.Minute, "", func(s status) bool {
			return anyResource(s, lifecycle.ResRetrying, "connection refused")
		})
		if err := stack.Git.Start(); err != nil {
			t.Fatal(err)
		}
		restarted = true
		d.await("Instantiated once the server is back", 3*time.Minute, "", func(s status) bool { return s.Status == lifecycle.StatusInstantiated })
		eventually(t, "Flux applied the deployment", time.Minute, presentOnGitOps(t, gvrDeployment, "gweb", true))
		d.operate(lifecycle.OpTerminate)
		d.await("Terminated", 3*time.Minute, "", func(s status) bool { return s.Status == lifecycle.StatusTerminated })
		eventually(t, "Flux removed the deployment", time.Minute, presentOnGitOps(t, gvrDeployment, "gweb", false))
	})

	t.Run("worker killed after the commit", func(t *testing.T) {
		d := one(t, gc)
		inst := d.operate(lifecycle.OpInstantiate).ContextID
		folder := stack.GitOps.Path() + "/context/" + inst
		eventually(t, "the instantiate committed", time.Minute, func() error {
			if log := gitLog(t, folder); len(log) != 1 {
				return fmt.Errorf("commits %q", log)
			}
			return nil
		})
		stack.Worker.Kill()
		if err := stack.StartWorker(context.Background()); err != nil {
			t.Fatal(err)
		}
		d.await("Instantiated after the restart", 3*time.Minute, "", func(s status) bool { return s.Status == lifecycle.StatusInstantiated })
		if log := gitLog(t, folder); len(log) != 1 {
			t.Errorf("the retried apply committed again: %q", log)
		}
		eventually(t, "Flux applied the deployment", time.Minute, presentOnGitOps(t, gvrDeployment, "gweb", true))
		d.operate(lifecycle.OpTerminate)
		d.await("Terminated", 3*time.Minute, "", func(s status) bool { return s.Status == lifecycle.StatusTerminated })
		eventually(t, "Flux removed the deployment", time.Minute, presentOnGitOps(t, gvrDeployment, "gweb", false))
	})

	t.Run("protected branch", func(t *testing.T) {
		d := one(t, gc)
		if err := stack.Git.Protect(stack.GitOps.Repo, stack.GitOps.Branch); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = stack.Git.Unprotect(stack.GitOps.Repo) })
		before := gitHead(t)
		d.operate(lifecycle.OpInstantiate)
		s := d.await("InstantiateFailed", time.Minute, "", func(s status) bool { return s.Status == lifecycle.StatusInstantiateFailed })
		if !anyResource(s, lifecycle.ResFailed, "protected") {
			t.Errorf("no resource failed with the server's reason:\n%s", strings.Join(resources(s), "\n"))
		}
		if after := gitHead(t); after != before {
			t.Errorf("the branch moved from %s to %s", before, after)
		}
		if err := stack.Git.Unprotect(stack.GitOps.Repo); err != nil {
			t.Fatal(err)
		}
		d.operate(lifecycle.OpTerminate)
		d.await("Terminated", 3*time.Minute, "", func(s status) bool { return s.Status == lifecycle.StatusTerminated })
	})

	t.Run("bad token", func(t *testing.T) {
		c := &client{t: t}
		const badToken = "not-the-token-5be1c0"
		g := stack.GitOps
		c.do("POST", "/cluster-providers/"+provider+"/cluster-sync-objects", res("gitops-bad-token", map[string]any{"kv": []any{
			map[string]string{"url": g.URL()}, map[string]string{"branch": g.Branch}, map[string]string{"userName": g.User},
			map[string]string{"gitToken": badToken}, map[string]string{"repoName": g.Repo}}})).must(t, 201)
		gitOpsCluster(c, "gitops-bad-token", "gitops-bad-token", syncTimer).must(t, 201)
		d := one(t, "gitops-bad-token")
		before := gitHead(t)
		d.operate(lifecycle.OpInstantiate)
		s := d.await("InstantiateFailed", time.Minute, "", func(s status) bool { return s.Status == lifecycle.StatusInstantiateFailed })
		if !anyResource(s, lifecycle.ResFailed, "authentication failed") {
			t.Errorf("no resource failed for the bad token:\n%s", strings.Join(resources(s), "\n"))
		}
		if body := c.do("GET", d.dig()+"/status", nil).body; strings.Contains(string(body), badToken) {
			t.Error("the status shows the token")
		}
		if after := gitHead(t); after != before {
			t.Errorf("the branch moved from %s to %s", before, after)
		}
		for _, secret := range []string{badToken, g.Password} {
			for _, log := range []string{"logs/worker.log", "logs/api.log", "clusters/" + g.Cluster.Name + "/gitops-monitor.log"} {
				b, err := os.ReadFile(filepath.Join(stack.DataDir(), log))
				if err != nil {
					t.Fatal(err)
				}
				if strings.Contains(string(b), secret) {
					t.Errorf("%s shows a git token", log)
				}
			}
		}
	})

	t.Run("Flux without temco gitops-monitor", func(t *testing.T) {
		// The cluster's branch has no monitor's report: a Flux cluster set up as for EMCO.
		c := &client{t: t}
		gitOpsCluster(c, "gitops-no-monitor", syncRepo, syncTimer).must(t, 201)
		d := one(t, "gitops-no-monitor")
		inst := d.operate(lifecycle.OpInstantiate).ContextID
		s := d.await("Instantiated once committed", time.Minute, "", func(s status) bool { return s.Status == lifecycle.StatusInstantiated })
		if rs := resources(s); len(rs) != 3 || anyResource(s, lifecycle.ResRetrying, "") || anyResource(s, lifecycle.ResFailed, "") {
			t.Errorf("objects of a committed deployment:\n%s", strings.Join(rs, "\n"))
		}
		if files := gitFiles(t, "clusters/local+gitops-no-monitor/context/"+inst); len(files) != 3 {
			t.Errorf("the deployment was not committed: %v", files)
		}
		r := d.status("?status=ready")
		if r.ReadyStatus == "Ready" || !anyResource(r, "", "no status reported on branch local+gitops-no-monitor") {
			t.Errorf("readiness %s without a report:\n%s", r.ReadyStatus, strings.Join(resources(r), "\n"))
		}
		d.operate(lifecycle.OpTerminate)
		d.await("Terminated", time.Minute, "", func(s status) bool { return s.Status == lifecycle.StatusTerminated })
		if files := gitFiles(t, "clusters/local+gitops-no-monitor/context/"+inst); len(files) != 0 {
			t.Errorf("files left after terminate: %v", files)
		}
	})
}
