package cluster

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/temco/temco/internal/gitops"
	"github.com/temco/temco/internal/gitserver"
	"github.com/temco/temco/internal/syncobject"
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
}
