package api

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/temco/temco/internal/core/appctx"
	"github.com/temco/temco/internal/core/artifact"
	"github.com/temco/temco/internal/core/lifecycle"
)

// The DIG's dashboard answer: a page of clusters with a cell per app, filters by name,
// label and state, the retry of a Retrying cluster, and live reads of the page only.
func TestDashboardPagesFiltersAndCells(t *testing.T) {
	reads := &liveReads{}
	c := newClient(t, func(s *Server) { reads.contexts = s.Contexts; s.Ops = reads })
	tree(t, c)
	c.multipart("POST", "/cluster-providers/cp1/clusters", res("c2", nil), []byte(testKubeconfig)).must(t, 201)
	c.do("POST", "/cluster-providers/cp1/clusters/c2/labels", map[string]any{"clusterLabel": "edge"}).must(t, 201)

	var none dashboardView
	c.do("GET", pDIG+"/dashboard", nil).must(t, 200).json(t, &none)
	if none.State != lifecycle.StateCreated || len(none.Clusters) != 0 || none.Operation != nil {
		t.Fatalf("before an instantiate: %+v", none)
	}

	failed := time.Now().UTC().Truncate(time.Second)
	retrying := res3("Applied", "Retrying", "Pending")
	for i := 1; i < 3; i++ {
		retrying[i].Attempts, retrying[i].Error, retrying[i].Updated = 3, "dial tcp 10.0.0.2:6443: connect: connection refused", failed
	}
	obj := func(r appctx.Ref, kind, name string) appctx.Object {
		return appctx.Object{Ref: r, Manifest: manifest("v1", kind, name, nil)}
	}
	refs := res3("", "", "")
	instantiated(t, c, reads, pDIG, "ctx-1", map[string][]appctx.Object{
		"app1": {obj(refs[0].Ref, "Deployment", "web"), obj(refs[1].Ref, "Service", "web"), obj(refs[2].Ref, "ConfigMap", "web-cfg")},
		"app2": {obj(refs[2].Ref, "ConfigMap", "web-cfg")},
	}, []*appctx.ClusterApp{
		{App: "app1", Cluster: "cp1+c1", Resources: res3("Applied", "Applied", "Applied")},
		{App: "app2", Cluster: "cp1+c1", Resources: res3("Applied")},
		{App: "app1", Cluster: "cp1+c2", Resources: retrying},
	})
	present := appctx.Live{State: appctx.LivePresent, Ready: true}
	reads.live = map[string][]appctx.Live{
		"app1/cp1+c1": {present, present, {State: appctx.LivePresent}},
		"app2/cp1+c1": {present},
	}

	var v dashboardView
	c.do("GET", pDIG+"/dashboard", nil).must(t, 200).json(t, &v)
	if v.State != lifecycle.StateInstantiated || v.Revision != 1 || v.Total != 2 || v.Matched != 2 || len(v.Clusters) != 2 {
		t.Fatalf("dashboard: %+v", v)
	}
	if reads.reads != 0 {
		t.Errorf("a dashboard without live=true read the clusters %d times", reads.reads)
	}
	if v.Objects["Applied"] != 5 || v.Objects["Retrying"] != 1 || v.Objects["Pending"] != 1 {
		t.Errorf("objects by status: %v", v.Objects)
	}
	c1, c2 := v.Clusters[0], v.Clusters[1]
	if c1.Cluster != "c1" || c1.State != "Applied" || c1.Apps["app1"].State != "Applied" || c1.Apps["app1"].Ready != "" || c1.ReadAt != nil {
		t.Errorf("c1 before a read: %+v", c1)
	}
	if c2.State != "Retrying" || c2.Retry == nil || c2.Retry.Attempts != 3 || !strings.Contains(c2.Retry.Error, "connection refused") ||
		!c2.Retry.NextTry.Equal(failed.Add(4*time.Second)) || len(c2.Labels) != 1 || c2.Labels[0] != "edge" {
		t.Errorf("c2: %+v retry %+v", c2, c2.Retry)
	}
	if len(v.Revisions) != 1 || v.Revisions[0].Revision != 1 || v.Revisions[0].Instance != "ctx-1" {
		t.Errorf("revisions: %+v", v.Revisions)
	}

	// live=true reads the page's clusters (here only c1: the state filter keeps it).
	c.do("GET", pDIG+"/dashboard?live=true&cluster=C1", nil).must(t, 200).json(t, &v)
	if reads.reads != 1 || len(v.Clusters) != 1 || v.Matched != 1 || v.Total != 2 {
		t.Fatalf("cluster filter with a live read (%d reads): %+v", reads.reads, v)
	}
	if cl := v.Clusters[0]; cl.State != "NotReady" || cl.Apps["app2"].State != "Ready" || cl.Apps["app1"].Ready != "NotReady" || cl.ReadAt == nil {
		t.Errorf("c1 after a read: %+v", cl)
	}

	for query, want := range map[string][]string{
		"?state=Retrying":       {"c2"},
		"?state=NotReady":       {"c1"},
		"?state=Ready":          {},
		"?label=edge":           {"c2"},
		"?label=core":           {},
		"?limit=1&offset=1":     {"c2"},
		"?offset=5":             {},
		"?cluster=cp1%2Bc":      {"c1", "c2"},
		"?cluster=x&label=edge": {},
	} {
		c.do("GET", pDIG+"/dashboard"+query, nil).must(t, 200).json(t, &v)
		var got []string
		for _, cl := range v.Clusters {
			got = append(got, cl.Cluster)
		}
		if fmt.Sprint(got) != fmt.Sprint(want) && !(len(got) == 0 && len(want) == 0) {
			t.Errorf("%s: clusters %v, want %v", query, got, want)
		}
	}
	c.do("GET", pDIG+"/dashboard?state=Retrying", nil).must(t, 200).json(t, &v)
	if v.States["Retrying"] != 1 || v.States["NotReady"] != 1 || v.Matched != 1 {
		t.Errorf("state counts: %v, matched %d", v.States, v.Matched)
	}
	if want := "map[app1:map[NotReady:1 Retrying:1] app2:map[Ready:1]]"; fmt.Sprint(v.AppStates) != want {
		t.Errorf("clusters by app and state: %v, want %s", v.AppStates, want)
	}

	for query, want := range map[string]string{
		"?limit=0":        `limit="0" is invalid`,
		"?limit=501":      `limit="501" is invalid`,
		"?offset=-1":      `offset="-1" is invalid`,
		"?state=Sleeping": `state="Sleeping" is invalid`,
		"?label=a%20b":    `label filter "a b" is invalid`,
		"?live=yes":       `live="yes" is invalid`,
		"?page=2":         `unknown query parameter "page"`,
	} {
		if m := c.do("GET", pDIG+"/dashboard"+query, nil).must(t, 400).message(t); !strings.Contains(m, want) {
			t.Errorf("%s: %q does not say %q", query, m, want)
		}
	}
	c.do("GET", pCA+"/deployment-intent-groups/nope/dashboard", nil).must(t, 404)
}

// One app's objects on one cluster, read live with their details (a Secret's data never).
func TestDashboardObjectsReadOneClusterLive(t *testing.T) {
	reads := &liveReads{}
	c := newClient(t, func(s *Server) { reads.contexts = s.Contexts; s.Ops = reads })
	tree(t, c)
	secretRef := appctx.Ref{Version: "v1", Kind: "Secret", Namespace: "default", Name: "creds"}
	instantiated(t, c, reads, pDIG, "ctx-1", map[string][]appctx.Object{
		"app1": {{Ref: secretRef, Manifest: manifest("v1", "Secret", "creds", nil)}},
	}, []*appctx.ClusterApp{{App: "app1", Cluster: "cp1+c1", Resources: []appctx.ResourceStatus{{Ref: secretRef, Status: "Applied"}}}})
	reads.live = map[string][]appctx.Live{"app1/cp1+c1": {{State: appctx.LivePresent, Ready: true}}}
	reads.details = map[string]map[string]any{"Secret/creds": {"apiVersion": "v1", "kind": "Secret",
		"metadata": map[string]any{"name": "creds"}, "data": map[string]any{"password": "c2VjcmV0"}}}

	r := c.do("GET", pDIG+"/dashboard/clusters/cp1/c1/apps/app1", nil).must(t, 200)
	var v dashboardObjects
	r.json(t, &v)
	if reads.reads != 1 || len(v.Objects) != 1 || v.Objects[0].State != "Present" || !v.Objects[0].Ready || v.ReadAt == nil ||
		!strings.Contains(string(v.Objects[0].Detail), `"creds"`) {
		t.Fatalf("objects (%d reads): %s", reads.reads, r.body)
	}
	if strings.Contains(string(r.body), "c2VjcmV0") {
		t.Errorf("a Secret's data is shown: %s", r.body)
	}
	if m := c.do("GET", pDIG+"/dashboard/clusters/cp1/c9/apps/app1", nil).must(t, 404).message(t); !strings.Contains(m, `no app "app1" on cluster "cp1+c9"`) {
		t.Errorf("unplaced: %q", m)
	}
	c.do("GET", pDIG+"/dashboard/clusters/cp1/c%20/apps/app1", nil).must(t, 400)
}

// The page's files are served without a token, with a policy that loads nothing from
// elsewhere; /v2/session tells who the caller is.
func TestDashboardPageAndSession(t *testing.T) {
	c := newClient(t, func(s *Server) { s.TemporalUI, s.Namespace = "http://ui:8233", "default" })
	rec := httptest.NewRecorder()
	c.h.ServeHTTP(rec, httptest.NewRequest("GET", "/dashboard/", nil))
	if rec.Code != 200 || !strings.Contains(rec.Body.String(), `src="./app.js"`) ||
		!strings.Contains(rec.Header().Get("Content-Security-Policy"), "default-src 'self'") {
		t.Fatalf("GET /dashboard/: %d %v %.200s", rec.Code, rec.Header(), rec.Body.String())
	}
	rec = httptest.NewRecorder()
	c.h.ServeHTTP(rec, httptest.NewRequest("GET", "/dashboard", nil))
	if rec.Code != http.StatusMovedPermanently || rec.Header().Get("Location") != "/dashboard/" {
		t.Errorf("GET /dashboard: %d %v", rec.Code, rec.Header())
	}
	var s sessionView
	c.do("GET", "/session", nil).must(t, 200).json(t, &s)
	if s.Authentication || !s.Admin || s.TemporalUI != "http://ui:8233" || s.Namespace != "default" {
		t.Errorf("session without authentication: %+v", s)
	}
}

// With authentication on, the page itself is public and the session needs a token: a
// tenant learns its projects, and the API refuses what its role does not allow.
func TestDashboardSessionWithAuthentication(t *testing.T) {
	iss := newIssuer(t)
	c := authClient(t, iss)
	rec := httptest.NewRecorder()
	c.h.ServeHTTP(rec, httptest.NewRequest("GET", "/dashboard/", nil))
	if rec.Code != 200 {
		t.Errorf("the page without a token: %d", rec.Code)
	}
	c.do("GET", "/session", nil).must(t, 401)
	var s sessionView
	c.as(iss.Token("alice", []string{"project:p2", "project:p1"}, nil)).do("GET", "/session", nil).must(t, 200).json(t, &s)
	if !s.Authentication || s.Admin || s.Subject != "alice" || fmt.Sprint(s.Projects) != "[p1 p2]" {
		t.Errorf("tenant session: %+v", s)
	}
	c.as(iss.Token("root", []string{"admin"}, nil)).do("GET", "/session", nil).must(t, 200).json(t, &s)
	if !s.Admin || len(s.Projects) != 0 {
		t.Errorf("admin session: %+v", s)
	}
}

// A Secret a GitOps cluster keeps out of git reads Omitted: shown so, and left out of the
// overall readiness and of the dashboard's cell, which its absence would otherwise hold
// NotReady for ever.
func TestOmittedObjectsDoNotHoldReadinessBack(t *testing.T) {
	omitted := appctx.Live{State: appctx.LiveOmitted, Error: "not committed to git"}
	ready := appctx.Live{State: appctx.LivePresent, Ready: true}
	if got := readiness(omitted); got != readyOmitted {
		t.Errorf("readiness of an omitted object: %s", got)
	}
	if got := overallReadiness(map[string]int{readyReady: 2, readyOmitted: 1}); got != readyReady {
		t.Errorf("overall readiness with an omitted object: %s", got)
	}
	p := &appctx.ClusterApp{Resources: make([]appctx.ResourceStatus, 2), Live: []appctx.Live{ready, omitted}, LiveAt: time.Now()}
	for i := range p.Resources {
		p.Resources[i].Status = lifecycle.ResApplied
	}
	if cell := cellOf(p); cell.Ready != readyReady {
		t.Errorf("cell %+v", cell)
	}
	p.Live[0].Ready = false
	if cell := cellOf(p); cell.Ready != readyNotReady {
		t.Errorf("cell %+v", cell)
	}
}

// The charts that came by reference show in the dashboard answer, sorted by app, each
// with its stage, digest, retry and error; a context whose charts were all uploaded has
// none (the field is absent).
func TestDashboardShowsArtifacts(t *testing.T) {
	reads := &liveReads{}
	c := newClient(t, func(s *Server) { reads.contexts = s.Contexts; s.Ops = reads })
	tree(t, c)
	refs := res3("")
	instantiated(t, c, reads, pDIG, "ctx-1", map[string][]appctx.Object{
		"app1": {{Ref: refs[0].Ref, Manifest: manifest("apps/v1", "Deployment", "web", nil)}},
	}, []*appctx.ClusterApp{{App: "app1", Cluster: "cp1+c1", Resources: res3("Applied")}})

	r := c.do("GET", pDIG+"/dashboard", nil).must(t, 200)
	if strings.Contains(string(r.body), `"artifacts"`) {
		t.Errorf("uploaded charts only, yet artifacts: %s", r.body)
	}

	ctx := context.Background()
	digest := "sha256:" + strings.Repeat("ab", 32)
	next := time.Now().UTC().Add(time.Minute).Truncate(time.Second)
	for _, st := range []artifact.Status{
		{App: "web", Source: "oci://registry.example/charts/web", Transport: artifact.TransportOCI, Stage: artifact.StageRendered,
			Version: "1.2.0", Digest: digest, Blob: digest, Size: 2048, Cached: true},
		{App: "api", Source: "http://charts.example api", Transport: artifact.TransportHelm, Stage: artifact.StageDownloading,
			Version: "1.0.0", Size: 4096, Downloaded: 1024, Retrying: true, Attempts: 3, Error: "dial tcp: connection refused", NextTry: next},
	} {
		if err := reads.contexts.SetArtifact(ctx, "ctx-1", st); err != nil {
			t.Fatal(err)
		}
	}
	var v dashboardView
	c.do("GET", pDIG+"/dashboard", nil).must(t, 200).json(t, &v)
	if len(v.Artifacts) != 2 || v.Artifacts[0].App != "api" || v.Artifacts[1].App != "web" {
		t.Fatalf("artifacts: %+v", v.Artifacts)
	}
	if a := v.Artifacts[1]; a.Stage != artifact.StageRendered || a.Digest != digest || !a.Cached || a.Version != "1.2.0" || a.Updated.IsZero() {
		t.Errorf("web: %+v", a)
	}
	if a := v.Artifacts[0]; !a.Retrying || a.Attempts != 3 || !strings.Contains(a.Error, "connection refused") ||
		!a.NextTry.Equal(next) || a.Size != 4096 || a.Downloaded != 1024 {
		t.Errorf("api: %+v", a)
	}
}

// A state filter counts every cluster by its worst cell, and each app's cells, before it
// keeps the clusters in the state asked for.
func TestCountStatesKeepsTheStateAskedFor(t *testing.T) {
	res := func(statuses ...string) []appctx.ResourceStatus {
		var out []appctx.ResourceStatus
		for _, s := range statuses {
			out = append(out, appctx.ResourceStatus{Status: s})
		}
		return out
	}
	all := map[string][]*appctx.ClusterApp{
		"p+c1": {{App: "web", Resources: res(lifecycle.ResApplied)}, {App: "db", Resources: res(lifecycle.ResFailed)}},
		"p+c2": {{App: "web", Resources: res(lifecycle.ResApplied, lifecycle.ResApplied)}},
		"p+c3": {{App: "web", Resources: res(lifecycle.ResRetrying)}},
	}
	out := &dashboardView{}
	kept := countStates(out, []string{"p+c1", "p+c2", "p+c3", "p+c4"}, all, lifecycle.ResFailed)
	if strings.Join(kept, ",") != "p+c1" {
		t.Errorf("kept %v, want the failed cluster", kept)
	}
	if want := map[string]int{lifecycle.ResFailed: 1, lifecycle.ResApplied: 1, lifecycle.ResRetrying: 1, lifecycle.ResPending: 1}; !maps.Equal(out.States, want) {
		t.Errorf("clusters by state %v, want %v", out.States, want)
	}
	if out.AppStates["web"][lifecycle.ResApplied] != 2 || out.AppStates["web"][lifecycle.ResRetrying] != 1 || out.AppStates["db"][lifecycle.ResFailed] != 1 {
		t.Errorf("apps' cells by state %v", out.AppStates)
	}
}
