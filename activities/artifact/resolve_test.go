package artifact

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"go.temporal.io/sdk/testsuite"

	"github.com/temco/temco/internal/adapters/egress"
	"github.com/temco/temco/internal/core/appctx"
	"github.com/temco/temco/internal/core/artifact"
	"github.com/temco/temco/internal/core/artifact/blobs"
	"github.com/temco/temco/internal/core/lifecycle"
	"github.com/temco/temco/internal/core/model"
	"github.com/temco/temco/internal/core/store"
	"github.com/temco/temco/internal/dev/testenv"
	"github.com/temco/temco/internal/dev/testenv/poll"
)

// indexServer serves Helm repositories: /shared holds charts app0..app9, /rN holds rN;
// each index.yaml read is counted, and those of /rN wait for release.
type indexServer struct {
	mu       sync.Mutex
	reads    map[string]int
	inFlight int
	most     int
	release  chan struct{}
}

func (s *indexServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	repo, ok := strings.CutSuffix(r.URL.Path, "/index.yaml")
	if !ok {
		http.NotFound(w, r)
		return
	}
	s.mu.Lock()
	s.reads[repo]++
	s.inFlight++
	s.most = max(s.most, s.inFlight)
	s.mu.Unlock()
	defer func() { s.mu.Lock(); s.inFlight--; s.mu.Unlock() }()
	charts := []string{strings.TrimPrefix(repo, "/")}
	if repo == "/shared" {
		charts = nil
		for i := range 10 {
			charts = append(charts, fmt.Sprintf("app%d", i))
		}
	} else {
		<-s.release
	}
	var b strings.Builder
	b.WriteString("apiVersion: v1\nentries:\n")
	for _, c := range charts {
		fmt.Fprintf(&b, "  %s:\n  - name: %s\n    version: 1.0.0\n    digest: %s\n    urls: [%s-1.0.0.tgz]\n", c, c, artifact.Digest([]byte(c))[7:], c)
	}
	_, _ = w.Write([]byte(b.String()))
}

func (s *indexServer) readsOf(repo string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.reads[repo]
}

func (s *indexServer) state() (inFlight, most int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.inFlight, s.most
}

// An operation's apps are resolved a few at once (maxResolving), and the apps of one Helm
// repository from one read of its index: an operation of many apps neither reads an index
// per app nor holds every app's read at once.
func TestAnOperationsAppsResolveAFewAtOnceFromOneReadOfEachIndex(t *testing.T) {
	ferret, err := testenv.StartFerretDB(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ferret.Stop)
	ctx := context.Background()
	db := testenv.Database(t, ferret, "artifact_resolve")
	srv := &indexServer{reads: map[string]int{}, release: make(chan struct{})}
	hs := httptest.NewServer(srv)
	t.Cleanup(hs.Close)
	u, _ := url.Parse(hs.URL)
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

	// deploy stores DIG ca/d of composite app ca, whose apps name their charts by repo.
	deploy := func(ca string, charts map[string]string) lifecycle.ContextRef {
		dig := lifecycle.Target{Project: "p", CompositeApp: ca, Version: "v1", DIG: "d"}
		docs := []*store.Doc{
			{ID: dig.CompositeAppID(), Parent: "/projects/p", Kind: model.KindCompositeApp, Name: ca, Body: `{"metadata":{"name":"` + ca + `"},"spec":{}}`},
			{ID: dig.ID(), Kind: model.KindDIG, Name: "d", Body: `{"metadata":{"name":"d"},"spec":{}}`},
		}
		for chart, repo := range charts {
			docs = append(docs, &store.Doc{ID: dig.CompositeAppID() + "/apps/" + chart, Parent: dig.CompositeAppID(), Kind: model.KindApp, Name: chart,
				Body: `{"metadata":{"name":"` + chart + `"},"spec":{"chart":{"helmRepo":"` + hs.URL + repo + `","chart":"` + chart + `","version":"1.0.0"}}}`})
		}
		for _, d := range docs {
			d.LooseRefs = true
			if err := a.Store.Create(ctx, d); err != nil {
				t.Fatal(err)
			}
		}
		if err := a.Contexts.Create(ctx, &appctx.Context{ID: ca, DIG: dig.ID(), Instance: ca, Revision: 1}); err != nil {
			t.Fatal(err)
		}
		return lifecycle.ContextRef{Target: dig, ContextID: ca}
	}
	resolve := func(ref lifecycle.ContextRef) (lifecycle.ArtifactPlan, error) {
		var plan lifecycle.ArtifactPlan
		v, err := env.ExecuteActivity(a.ResolveArtifacts, ref)
		if err == nil {
			err = v.Get(&plan)
		}
		return plan, err
	}
	if err := a.Store.Create(ctx, &store.Doc{ID: "/projects/p", Kind: model.KindProject, Name: "p", Body: `{"metadata":{"name":"p"},"spec":{}}`}); err != nil {
		t.Fatal(err)
	}

	shared := map[string]string{}
	for i := range 10 {
		shared[fmt.Sprintf("app%d", i)] = "/shared"
	}
	plan, err := resolve(deploy("shared", shared))
	if err != nil || len(plan.Fetch) != 10 {
		t.Fatalf("ten apps of one repository: %d to fetch, %v", len(plan.Fetch), err)
	}
	if n := srv.readsOf("/shared"); n != 1 {
		t.Errorf("ten apps of one repository read its index %d times, want once", n)
	}

	apart := map[string]string{}
	for i := range 8 {
		apart[fmt.Sprintf("r%d", i)] = fmt.Sprintf("/r%d", i)
	}
	done := make(chan error, 1)
	ref := deploy("apart", apart)
	go func() { _, err := resolve(ref); done <- err }()
	poll.Until(t, "the first reads", time.Minute, func(context.Context) error {
		if n, _ := srv.state(); n < maxResolving {
			return fmt.Errorf("%d reads in flight", n)
		}
		return nil
	})
	// The others wait for a slot: none more comes while the first are held.
	for deadline := time.Now().Add(time.Second); time.Now().Before(deadline); time.Sleep(poll.Every / 4) {
		if _, most := srv.state(); most > maxResolving {
			break
		}
	}
	close(srv.release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if _, most := srv.state(); most != maxResolving {
		t.Errorf("eight apps of eight repositories were resolved %d at once, want %d", most, maxResolving)
	}
}
