package cluster

import (
	"context"
	"encoding/base64"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/temco/temco/internal/adapters/gitops"
	"github.com/temco/temco/internal/adapters/syncobject"
	"github.com/temco/temco/internal/core/appctx"
	"github.com/temco/temco/internal/core/lifecycle"
	"github.com/temco/temco/internal/dev/gitserver"
	"github.com/temco/temco/internal/dev/testenv"
)

// A GitOps cluster commits a deployment's Secrets to git in clear unless its registration
// says gitOpsSecrets: omit; then the Secret is in no commit, its status says so, and a live
// read does not count it as missing.
func TestGitOpsClusterCommitsSecretsUnlessTheyAreOmitted(t *testing.T) {
	const marker = "hunter2-gitops-marker"
	ctx := context.Background()
	srv := &gitserver.Server{Root: t.TempDir(), Addr: "127.0.0.1:0", Users: map[string]string{"u": "secret-token"}}
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Stop() })
	s, err := appctx.New(ctx, testenv.Database(t, ferret, "gitsecrets"))
	if err != nil {
		t.Fatal(err)
	}
	newObject := func(m map[string]any) appctx.Object {
		o, err := appctx.NewObject(&unstructured.Unstructured{Object: m})
		if err != nil {
			t.Fatal(err)
		}
		return o
	}
	app := &appctx.App{Name: "a", Objects: []appctx.Object{
		newObject(map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "cm"}, "data": map[string]any{"k": "v"}}),
		newObject(map[string]any{"apiVersion": "v1", "kind": "Secret", "metadata": map[string]any{"name": "db"},
			"data": map[string]any{"password": base64.StdEncoding.EncodeToString([]byte(marker))}}),
	}}

	for _, c := range []struct {
		name      string
		omit      bool
		committed bool   // the Secret's file is in git
		warning   string // of the Secret's status
		notReady  int    // of a live read with no report from the cluster
	}{
		{name: "commit", committed: true, notReady: 2},
		{name: "omit", omit: true, warning: "not committed to git: cluster p+c keeps Secrets out of its repository", notReady: 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			if err := srv.CreateRepo(ctx, c.name, "main"); err != nil {
				t.Fatal(err)
			}
			header := &appctx.Context{ID: "ctx-" + c.name, Instance: "ctx-" + c.name, Apps: []string{"a"}, Namespace: "ns", DIG: "dig"}
			p := &appctx.ClusterApp{App: "a", Cluster: "p+c", Resources: []appctx.ResourceStatus{
				{Ref: app.Objects[0].Ref, Status: lifecycle.ResPending}, {Ref: app.Objects[1].Ref, Status: lifecycle.ResPending}}}
			if err := s.PutPlacement(ctx, header.ID, []*appctx.ClusterApp{p}, map[string]int{"p+c": 0}); err != nil {
				t.Fatal(err)
			}
			// anthos: committed is deployed, no Flux to wait for.
			g := &gitCluster{key: "p+c", typ: syncobject.Anthos, writer: &gitops.Writer{Dir: t.TempDir()}, schemas: &Schemas{},
				git: syncobject.Git{URL: srv.URL(c.name), Branch: "main", User: "u", Token: "secret-token"}, noSecrets: c.omit}
			r := &run{ctx: ctx, contexts: s, header: header, apps: map[string]*appctx.App{"a": app},
				byApp: map[string]*appctx.ClusterApp{"a": p}, started: time.Now(), saved: time.Now()}
			if err := g.apply(r); err != nil {
				t.Fatal(err)
			}
			if err := r.flush(ctx); err != nil {
				t.Fatal(err)
			}

			wantInGit := func(when string) {
				t.Helper()
				files, _, err := g.writer.ReadDir(ctx, g.remote(), "clusters/p+c/context")
				if err != nil || len(files) == 0 {
					t.Fatalf("%s: committed %d files (%v)", when, len(files), err)
				}
				secretFile := false
				for path, b := range files {
					secretFile = secretFile || strings.HasSuffix(path, "db+Secret.yaml")
					if !c.committed && strings.Contains(string(b), base64.StdEncoding.EncodeToString([]byte(marker))) {
						t.Errorf("%s: %s holds the Secret's value", when, path)
					}
				}
				if secretFile != c.committed {
					t.Errorf("%s: the Secret's file committed: %v, want %v", when, secretFile, c.committed)
				}
			}
			wantInGit("apply")

			stored, err := s.ClusterApps(ctx, header.ID, "p+c")
			if err != nil {
				t.Fatal(err)
			}
			cm, sec := stored[0].Resources[0], stored[0].Resources[1]
			if cm.Status != lifecycle.ResApplied || cm.Warning != "" || sec.Status != lifecycle.ResApplied ||
				(c.warning == "") != (sec.Warning == "") || !strings.Contains(sec.Warning, c.warning) {
				t.Errorf("statuses: ConfigMap %s %q, Secret %s %q", cm.Status, cm.Warning, sec.Status, sec.Warning)
			}

			res := g.read(ctx, header, stored, reading{})
			if res.NotReady != c.notReady {
				t.Errorf("a read counts %d objects not ready, want %d (%+v)", res.NotReady, c.notReady, stored[0].Live)
			}
			if l := stored[0].Live[1]; c.omit && (l.State != appctx.LiveOmitted || !strings.Contains(l.Error, "not committed to git")) {
				t.Errorf("the omitted Secret reads as %+v", stored[0].Live[1])
			}

			// An update's prune commits what stays as the apply did: the Secret stays out.
			next := &placed{header: header, placements: []*appctx.ClusterApp{p}, apps: r.apps}
			if err := g.remove(r, map[string][]int{}, next); err != nil {
				t.Fatal(err)
			}
			wantInGit("prune")
		})
	}
}
