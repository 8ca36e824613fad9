package cluster

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/temco/temco/internal/adapters/gitops"
	"github.com/temco/temco/internal/adapters/syncobject"
	"github.com/temco/temco/internal/dev/gitserver"
)

// How a worker judges Flux's report, read from a real git server: deployed means the
// deployment's Kustomization Ready at a revision holding temco's commit; removed means
// that Kustomization gone once Flux applied the commit.
func TestFluxApplied(t *testing.T) {
	ctx := context.Background()
	s := &gitserver.Server{Root: t.TempDir(), Addr: "127.0.0.1:0", Users: map[string]string{"u": "secret-token"}}
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Stop() })
	if err := s.CreateRepo(ctx, "r", "main"); err != nil {
		t.Fatal(err)
	}
	g := &gitCluster{key: "p+c", typ: syncobject.FluxCD, writer: &gitops.Writer{Dir: t.TempDir()},
		git: syncobject.Git{URL: s.URL("r"), Branch: "main", User: "u", Token: "secret-token"}}
	commit := func(path string) string {
		t.Helper()
		res, err := g.writer.Commit(ctx, g.remote(), gitops.Change{Message: path, Files: map[string][]byte{path: []byte("x")}})
		if err != nil {
			t.Fatal(err)
		}
		return res.Commit
	}
	report := func(ks ...gitops.KustomizationStatus) {
		t.Helper()
		c := gitops.Change{Replace: []string{gitops.StatusDir(g.key)}, Files: map[string][]byte{}, Message: "status", CreateBranch: true}
		for _, k := range ks {
			b, _ := json.Marshal(k)
			c.Files[gitops.StatusPath(g.key, k.Namespace, k.Name)] = b
		}
		if _, err := g.writer.Commit(ctx, g.statusRemote(), c); err != nil {
			t.Fatal(err)
		}
	}
	older, ours := commit("a"), commit("b")
	own := func(ready, rev string) gitops.KustomizationStatus {
		return gitops.KustomizationStatus{Namespace: "flux-system", Name: "kust1", Ready: ready, Message: "flux says", LastAppliedRevision: "main@sha1:" + rev}
	}
	boot := func(rev string) gitops.KustomizationStatus {
		return gitops.KustomizationStatus{Namespace: "flux-system", Name: "flux-system", Ready: "True", LastAppliedRevision: "main@sha1:" + rev}
	}
	check := func(name string, present, want bool, why string) {
		t.Helper()
		done, reason, err := g.fluxApplied(ctx, "flux-system", "kust1", ours, present)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if done != want || !strings.Contains(reason, why) {
			t.Errorf("%s: done %v (%q), want %v with %q", name, done, reason, want, why)
		}
	}

	check("no report, present", true, false, "no status reported on branch p+c")
	check("no report, removed", false, true, "")
	report(boot(older))
	check("not created yet", true, false, "Kustomization flux-system/kust1 does not exist yet")
	check("removal not applied yet", false, false, "no Kustomization of the cluster has applied the commit")
	report(boot(ours), own("True", older))
	check("ready at an older revision", true, false, "last applied main@sha1:"+older)
	check("still there", false, false, "still exists")
	report(boot(ours), own("False", ours))
	check("not ready", true, false, "Ready=False: flux says")
	report(boot(ours), own("True", ours))
	check("deployed", true, true, "")
	report(boot(ours))
	check("removed", false, true, "")
	// A Kustomization that never applied anything (its source failed: the git server was
	// down) reports no revision; it is one that has not applied the removal yet, not a
	// reason to fail the objects (found by make chaos).
	report(boot(older), gitops.KustomizationStatus{Namespace: "flux-system", Name: "other", Ready: "False"})
	check("a Kustomization that never applied", false, false, "no Kustomization of the cluster has applied the commit")
	report(boot(ours), gitops.KustomizationStatus{Namespace: "flux-system", Name: "other", Ready: "False"})
	check("removed, beside one that never applied", false, true, "")
}

// Flux's failures as kustomize-controller reports them: what no reconcile mends fails the
// objects at once, the rest is waited for.
func TestFluxRefusedTellsPermanentFailures(t *testing.T) {
	for _, c := range []struct {
		reason, message string
		want            bool
	}{
		{"ReconciliationFailed", `Service/default/web dry-run failed (Invalid): Service "web" is invalid: spec.ports[0].port: Invalid value: 99999`, true},
		{"ReconciliationFailed", `Role/kube-system/r dry-run failed (Forbidden): roles.rbac.authorization.k8s.io "r" is forbidden`, true},
		{"ReconciliationFailed", `ConfigMap/gone/c dry-run failed (Forbidden): unable to create new content in namespace gone because it is being terminated`, false},
		{"ReconciliationFailed", `ConfigMap/c namespace not specified: the server could not find the requested resource`, true},
		{"ReconciliationFailed", `DaemonSet/default/a dry-run failed (InternalError): failed to create typed patch object (default/a; apps/v1, Kind=DaemonSet): .spec.replicas: field not declared in schema`, true},
		{"ReconciliationFailed", `Deployment/default/web dry-run failed (InternalError): Internal error occurred: failed calling webhook "v.example.com"`, false},
		{"ReconciliationFailed", `Widget/default/w dry-run failed: no matches for kind "Widget" in version "example.com/v1"`, false},
		{"BuildFailed", `kustomize build failed: accumulating resources: may not add resource with an already registered id`, true},
		{"ArtifactFailed", `Source artifact not found, retrying in 30s`, false},
		{"Progressing", `Reconciliation in progress`, false},
	} {
		if got := fluxRefused(c.reason, c.message); got != c.want {
			t.Errorf("fluxRefused(%s, %q) = %v, want %v", c.reason, c.message, got, c.want)
		}
	}
}
