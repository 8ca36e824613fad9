package artifact

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"go.temporal.io/sdk/testsuite"

	"github.com/temco/temco/internal/adapters/egress"
	"github.com/temco/temco/internal/core/appctx"
	"github.com/temco/temco/internal/core/artifact"
	"github.com/temco/temco/internal/core/artifact/blobs"
	"github.com/temco/temco/internal/core/lifecycle"
	"github.com/temco/temco/internal/core/model"
	"github.com/temco/temco/internal/core/store"
	"github.com/temco/temco/internal/dev/testenv"
)

// Knowing another project's chart digest gets a project nothing: the store serves a chart
// only to the projects that fetched it themselves, so naming the digest with a URL that
// serves other bytes fails with a mismatch; the project that fetched it is served from the
// store.
func TestAStoredChartIsNotServedToAnotherProjectByItsDigest(t *testing.T) {
	ferret, err := testenv.StartFerretDB(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ferret.Stop)
	ctx := context.Background()
	db := testenv.Database(t, ferret, "artifact_tenancy")
	private := testenv.VersionedChart("web", "1.0.0", "", map[string]string{"cm.yaml": "kind: ConfigMap\n"})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/p/web.tgz" {
			_, _ = w.Write(private)
			return
		}
		_, _ = w.Write([]byte("whatever the other project serves"))
	}))
	t.Cleanup(srv.Close)
	u, _ := url.Parse(srv.URL)
	a := &Activities{Allow: egress.MustParse(u.Host), Blobs: blobs.NewStore(db)}
	if a.Store, err = store.New(ctx, db); err != nil {
		t.Fatal(err)
	}
	if a.Contexts, err = appctx.New(ctx, db); err != nil {
		t.Fatal(err)
	}
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestActivityEnvironment()
	env.RegisterActivity(a)
	// deploy runs project's pipeline for a chart at path claiming private's digest.
	deploy := func(project, path string) (int, error, artifact.Status) {
		t.Helper()
		dig := lifecycle.Target{Project: project, CompositeApp: "ca", Version: "v1", DIG: "d"}
		for _, d := range []*store.Doc{
			{ID: "/projects/" + project, Kind: model.KindProject, Name: project, Body: `{"metadata":{"name":"` + project + `"},"spec":{}}`},
			{ID: dig.CompositeAppID(), Parent: "/projects/" + project, Kind: model.KindCompositeApp, Name: "ca", Body: `{"metadata":{"name":"ca"},"spec":{}}`},
			{ID: dig.ID(), Kind: model.KindDIG, Name: "d", Body: `{"metadata":{"name":"d"},"spec":{}}`},
			{ID: dig.CompositeAppID() + "/apps/web", Parent: dig.CompositeAppID(), Kind: model.KindApp, Name: "web",
				Body: `{"metadata":{"name":"web"},"spec":{"chart":{"url":"` + srv.URL + path + `","digest":"` + artifact.Digest(private) + `"}}}`},
		} {
			d.LooseRefs = true
			if err := a.Store.Create(ctx, d); err != nil && !strings.Contains(err.Error(), "exists") {
				t.Fatal(err)
			}
		}
		ctxID := project + "-ctx"
		if err := a.Contexts.Create(ctx, &appctx.Context{ID: ctxID, DIG: dig.ID(), Instance: ctxID, Revision: 1}); err != nil {
			t.Fatal(err)
		}
		n, err, h := runPipeline(t, env, a, lifecycle.ContextRef{Target: dig, ContextID: ctxID})
		return n, err, h.Artifacts["web"]
	}
	if n, err, st := deploy("p", "/p/web.tgz"); n != 1 || err != nil || st.Stage != artifact.StageStored || st.Cached {
		t.Fatalf("the owner's first fetch: %d, %v, %+v", n, err, st)
	}
	n, err, st := deploy("q", "/q/web.tgz")
	if n != 1 || err == nil || st.Stage != artifact.StageFailed || !strings.Contains(st.Error, "digest mismatch") {
		t.Fatalf("another project naming the digest: fetched %d, %v, %+v; want its own download, refused", n, err, st)
	}
	if e, ok, _ := a.Blobs.Lookup(ctx, artifact.Digest(private)); !ok || len(e.Projects) != 1 || e.Projects[0] != "p" {
		t.Errorf("the stored chart's projects: %+v", e)
	}
}
