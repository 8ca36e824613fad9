package cluster

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/temco/temco/internal/adapters/gitops"
	"github.com/temco/temco/internal/adapters/syncobject"
	"github.com/temco/temco/internal/core/appctx"
	"github.com/temco/temco/internal/dev/gitserver"
)

// How a worker reads a Flux cluster's objects from its monitor's report, on a real git
// server: present and ready from the deployment's Kustomization inventory once it applied
// what git holds for the deployment (later commits of other deployments do not matter);
// never ready before, saying why, and saying when Flux refused it for good.
func TestGitOpsReadinessFollowsWhatFluxApplied(t *testing.T) {
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
	commit := func(path, content string) string {
		t.Helper()
		res, err := g.writer.Commit(ctx, g.remote(), gitops.Change{Message: path, Files: map[string][]byte{path: []byte(content)}})
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
	header := &appctx.Context{ID: "1", DIG: "/projects/p/composite-apps/a/v1/deployment-intent-groups/d", Instance: "1", Namespace: "default"}
	cm := appctx.Ref{Version: "v1", Kind: "ConfigMap", Namespace: "default", Name: "cm"}
	check := func(name string, want appctx.Live, why string) {
		t.Helper()
		p := []*appctx.ClusterApp{{App: "a", Resources: []appctx.ResourceStatus{{Ref: cm}}}}
		g.read(ctx, header, p, reading{})
		got := p[0].Live[0]
		if got.State != want.State || got.Ready != want.Ready || !strings.Contains(got.Error, why) {
			t.Errorf("%s: %+v, want %s ready=%v with %q", name, got, want.State, want.Ready, why)
		}
	}
	own := func(ready, applied string, present bool) gitops.KustomizationStatus {
		return gitops.KustomizationStatus{Namespace: "flux-system", Name: "kust1", Ready: ready, LastAppliedRevision: "main@sha1:" + applied,
			Resources: []gitops.ResourceStatus{{Version: "v1", Kind: "ConfigMap", Namespace: "default", Name: "cm", Present: present, Ready: present}}}
	}
	boot := gitops.KustomizationStatus{Namespace: "flux-system", Name: "flux-system", Ready: "True"}
	present, absent := appctx.Live{State: appctx.LivePresent}, appctx.Live{State: appctx.LiveNotPresent}

	check("no report", appctx.Live{State: appctx.LiveUnknown}, "no status reported on branch p+c")
	older := commit("clusters/p+c/context/1/app/a/cm+ConfigMap.yaml", "v1")
	report(boot)
	check("not created yet", absent, "Kustomization flux-system/kust1 does not exist yet")
	ours := commit("clusters/p+c/context/1/app/a/cm+ConfigMap.yaml", "v2") // an update
	report(boot, own("True", older, true))
	check("ready at the previous revision", present, "Flux has not applied what git holds for this deployment yet: Kustomization flux-system/kust1: Ready=True; last applied main@sha1:"+older)
	report(boot, own("True", ours, true))
	check("applied", appctx.Live{State: appctx.LivePresent, Ready: true}, "")
	elsewhere := commit("clusters/p+c/context/2/app/b/x+ConfigMap.yaml", "other")
	check("applied, another deployment committed since", appctx.Live{State: appctx.LivePresent, Ready: true}, "")
	third := commit("clusters/p+c/kust1.yaml", "timers changed")
	check("its Kustomization changed since", present, "has not applied what git holds")
	refusal := own("False", ours, true)
	refusal.Reason, refusal.Message = "ReconciliationFailed", "ConfigMap/default/cm dry-run failed (Invalid): bad"
	refusal.LastAttemptedRevision = "main@sha1:" + elsewhere
	report(boot, refusal)
	check("failing at a revision before the last change", present, "Flux has not applied what git holds for this deployment yet")
	refusal.LastAttemptedRevision = "main@sha1:" + third
	report(boot, refusal)
	check("refused", present, "Flux refused what git holds for this deployment (no later reconcile applies it")
	denied := own("False", older, false)
	denied.Reason, denied.LastAppliedRevision = "AccessDenied", ""
	report(boot, denied)
	check("access denied", absent, "Flux refused what git holds")
	g.typ = syncobject.Anthos
	check("anthos", appctx.Live{State: appctx.LiveUnknown}, "temco reads no status back from anthos clusters")
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

// A logical cloud's set-up commits its Namespace with its Kustomization, unless git holds
// it in the cloud's folder already (a cloud set up before): moving it could let the
// cloud's Kustomization prune it.
func TestALogicalCloudKeepsWhereGitHoldsItsNamespace(t *testing.T) {
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
	header := &appctx.Context{ID: "9", DIG: "/projects/p/logical-clouds/team", Instance: "9", Namespace: "team-ns"}
	dep := g.base(header)
	if !dep.BootstrapNamespaces {
		t.Fatal("a logical cloud's set-up does not commit its Namespace with its Kustomization")
	}
	if err := g.keepNamespacesInFolder(ctx, &dep); err != nil || !dep.BootstrapNamespaces {
		t.Errorf("a new cloud: BootstrapNamespaces %v, %v", dep.BootstrapNamespaces, err)
	}
	if _, err := g.writer.Commit(ctx, g.remote(), gitops.Change{Message: "an earlier set-up",
		Files: map[string][]byte{"clusters/p+c/context/9/app/logical-cloud/team-ns+Namespace.yaml": []byte("kind: Namespace\n")}}); err != nil {
		t.Fatal(err)
	}
	if err := g.keepNamespacesInFolder(ctx, &dep); err != nil || dep.BootstrapNamespaces {
		t.Errorf("a cloud whose folder holds its Namespace: BootstrapNamespaces %v, %v", dep.BootstrapNamespaces, err)
	}
	if d := g.base(&appctx.Context{DIG: "/projects/p/composite-apps/a/v1/deployment-intent-groups/d", Instance: "1"}); d.BootstrapNamespaces {
		t.Error("a DIG's Namespaces go with its Kustomization")
	}
}
