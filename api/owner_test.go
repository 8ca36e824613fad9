package api

import (
	"bytes"
	"context"
	"encoding/json"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"go.mongodb.org/mongo-driver/v2/event"

	"github.com/temco/temco/internal/core/model"
	"github.com/temco/temco/internal/core/store"
	"github.com/temco/temco/internal/dev/testenv"
)

const (
	hubA = "hub:DeploymentIntentGroup/p1/hd"
	hubB = "hub:DeploymentIntentGroup/p1/other"
	pHD  = pCA + "/deployment-intent-groups/hd" // the hub's DIG (hubA) beside REST's dig1
)

// hub is the header temco hub sends as owner.
func hub(owner string) []string { return []string{HeaderOwner, owner} }

// ownerOfAnswer reads the top-level "owner" of a JSON object answer (and whether it is there).
func ownerOfAnswer(t *testing.T, r response) (string, bool) {
	t.Helper()
	var m map[string]any
	r.json(t, &m)
	o, ok := m["owner"]
	s, _ := o.(string)
	return s, ok
}

// A resource the hub creates is its own: answered with its owner, written only with the
// same header; REST's writes of it, below it, or its operations are refused and change
// nothing, and so are another owner's.
func TestOwnedDIGIsWrittenOnlyByItsOwner(t *testing.T) {
	c, _, ops := lifecycleClient(t)
	r := c.do("POST", pCA+"/deployment-intent-groups", res("hd", digSpec()), hub(hubA)...).must(t, http.StatusCreated)
	if o, _ := ownerOfAnswer(t, r); o != hubA {
		t.Errorf("create answered owner %q, want %q", o, hubA)
	}
	gpi := pHD + "/generic-placement-intents/gpi"
	c.do("POST", pHD+"/generic-placement-intents", res("gpi", nil), hub(hubA)...).must(t, http.StatusCreated)
	c.do("POST", pHD+"/intents", res("i", map[string]any{"intent": map[string]string{"genericPlacementIntent": "gpi"}}), hub(hubA)...).must(t, http.StatusCreated)
	for _, app := range []string{"app1", "app2"} {
		c.do("POST", gpi+"/app-intents", res(app, appIntentSpec(app)), hub(hubA)...).must(t, http.StatusCreated)
	}
	c.do("POST", pHD+"/generic-placement-intents", res("extra", nil), hub(hubA)...).must(t, http.StatusCreated)
	// app2 needs a profile to be instantiated: the composite app is REST's, so REST adds it.
	c.multipart("POST", pCA+"/composite-profiles/cprof/profiles", res("prof2", map[string]any{"app": "app2"}),
		testenv.Profile("replicas: 1\n")).must(t, http.StatusCreated)

	t.Run("reads show the owner, REST's resources keep EMCO's shape", func(t *testing.T) {
		if o, _ := ownerOfAnswer(t, c.do("GET", pHD, nil).must(t, 200)); o != hubA {
			t.Errorf("GET %s: owner %q, want %q", pHD, o, hubA)
		}
		if o, _ := ownerOfAnswer(t, c.do("GET", gpi+"/app-intents/app1", nil).must(t, 200)); o != hubA {
			t.Errorf("GET app intent: owner %q, want %q", o, hubA)
		}
		if _, ok := ownerOfAnswer(t, c.do("GET", pDIG, nil).must(t, 200)); ok {
			t.Errorf("GET of REST's DIG shows an owner: %s", c.do("GET", pDIG, nil).body)
		}
		var list []map[string]any
		c.do("GET", pCA+"/deployment-intent-groups", nil).must(t, 200).json(t, &list)
		owners := map[string]any{}
		for _, d := range list {
			owners[d["metadata"].(map[string]any)["name"].(string)] = d["owner"]
		}
		if len(owners) != 2 || owners["hd"] != hubA || owners["dig1"] != nil {
			t.Errorf("list shows owners %v, want hd: %q and none for dig1", owners, hubA)
		}
	})

	before := snapshot(t, c)
	changed := desc(res("hd", digSpec()), "changed")
	owned := `deployment intent group "hd" is owned by "` + hubA + `"`
	for _, w := range []struct {
		name, method, path string
		body               any
		hdr                []string
		want               string
	}{
		{"REST replace", "PUT", pHD, changed, nil, owned + ": change it there, not over REST (X-Temco-Owner)"},
		{"REST delete", "DELETE", pHD, nil, nil, owned + ": change it there, not over REST (X-Temco-Owner)"},
		{"REST sub-resource create", "POST", pHD + "/generic-placement-intents", res("rest", nil), nil,
			owned + ": change what is below it there, not over REST (X-Temco-Owner)"},
		{"REST create below the nearest owned ancestor", "POST", gpi + "/app-intents", res("rest", appIntentSpec("app1")), nil,
			`generic placement intent "gpi" is owned by "` + hubA + `": change what is below it there, not over REST (X-Temco-Owner)`},
		{"REST replace of an owned sub-resource", "PUT", gpi, res("gpi", nil), nil,
			`generic placement intent "gpi" is owned by "` + hubA + `": change it there, not over REST (X-Temco-Owner)`},
		{"REST approve", "POST", pHD + "/approve", nil, nil, owned + ": change it there, not over REST (X-Temco-Owner)"},
		{"REST instantiate", "POST", pHD + "/instantiate", nil, nil, owned + ": change it there, not over REST (X-Temco-Owner)"},
		{"REST migrate into it", "POST", pDIG + "/migrate", map[string]any{"spec": map[string]string{
			"targetCompositeAppVersion": "v1", "targetDeploymentIntentGroup": "hd"}}, nil, owned + ": change it there, not over REST (X-Temco-Owner)"},
		{"other owner's replace", "PUT", pHD, changed, hub(hubB), owned + `, not by "` + hubB + `" (X-Temco-Owner): change it there`},
		{"other owner's delete", "DELETE", gpi + "/app-intents/app1", nil, hub(hubB),
			`app placement intent "app1" is owned by "` + hubA + `", not by "` + hubB + `" (X-Temco-Owner): change it there`},
		{"other owner's instantiate", "POST", pHD + "/instantiate", nil, hub(hubB), owned + `, not by "` + hubB + `" (X-Temco-Owner): change it there`},
		{"hub replace of REST's DIG", "PUT", pDIG, desc(res("dig1", digSpec()), "changed"), hub(hubA),
			`deployment intent group "dig1" is owned by REST (it was created without X-Temco-Owner), not by "` + hubA + `": change it over REST`},
		{"hub delete of REST's intent", "DELETE", pGPI, nil, hub(hubA),
			`generic placement intent "gpi1" is owned by REST (it was created without X-Temco-Owner), not by "` + hubA + `": change it over REST`},
		{"hub approve of REST's DIG", "POST", pDIG + "/approve", nil, hub(hubA),
			`deployment intent group "dig1" is owned by REST (it was created without X-Temco-Owner), not by "` + hubA + `": change it over REST`},
	} {
		t.Run(w.name, func(t *testing.T) {
			refused(t, c.do(w.method, w.path, w.body, w.hdr...), w.want)
		})
	}
	if after := snapshot(t, c); after != before {
		t.Errorf("refused writes changed the store:\nbefore:\n%s\nafter:\n%s", before, after)
	}
	if len(ops.started) != 0 {
		t.Fatalf("refused operations started: %v", ops.started)
	}

	t.Run("the owner writes as before", func(t *testing.T) {
		r := c.do("PUT", pHD, changed, hub(hubA)...).must(t, http.StatusOK)
		if o, _ := ownerOfAnswer(t, r); o != hubA {
			t.Errorf("replace answered owner %q", o)
		}
		var got struct {
			Metadata struct{ Description string }
		}
		c.do("GET", pHD, nil).must(t, 200).json(t, &got)
		if got.Metadata.Description != "changed" {
			t.Errorf("the owner's replace was not stored: description %q", got.Metadata.Description)
		}
		c.do("DELETE", pHD+"/generic-placement-intents/extra", nil, hub(hubA)...).must(t, http.StatusNoContent)
		c.do("GET", pHD+"/generic-placement-intents/extra", nil).must(t, http.StatusNotFound)
		c.do("POST", pHD+"/approve", nil, hub(hubA)...).must(t, http.StatusAccepted)
		c.do("POST", pHD+"/instantiate", nil, hub(hubA)...).must(t, http.StatusAccepted)
		if len(ops.started) != 1 || ops.started[0] != "instantiate "+pHD {
			t.Errorf("operations started: %v, want the instantiate of %s", ops.started, pHD)
		}
		// REST's resources stay REST's to write.
		c.do("PUT", pGPI, desc(res("gpi1", nil), "rest"), nil...).must(t, http.StatusOK)
	})

	// An operator's decisions on a running operation are no change of what the hub
	// declares: a hub DIG's rollout is approved, paused, resumed or rolled back, and its
	// operation stopped, over REST (whatever the operation then answers, never ownership).
	t.Run("REST decides on the hub DIG's running operation", func(t *testing.T) {
		for _, path := range []string{pHD + "/rollout/approve", pHD + "/rollout/pause", pHD + "/rollout/resume", pHD + "/rollout/rollback", pHD + "/stop"} {
			if r := c.do("POST", path, nil); strings.Contains(string(r.body), "is owned by") {
				t.Errorf("POST %s refused for ownership: %d %s", path, r.code, r.body)
			}
		}
	})
}

// desc sets a resource's description.
func desc(r map[string]any, d string) map[string]any {
	r["metadata"].(map[string]any)["description"] = d
	return r
}

// The header is an owner's name: 1 to 256 printable ASCII characters, no spaces, sent
// once; anything else is refused and creates nothing.
func TestOwnerHeaderIsValidated(t *testing.T) {
	c := newClient(t)
	for _, tc := range []struct {
		name   string
		values []string
		want   string
	}{
		{"empty", []string{""}, "it is empty"},
		{"too long", []string{strings.Repeat("a", maxOwnerLen+1)}, "it is 257 characters long: 256 at most"},
		{"a space", []string{"hub:a b"}, "character 6 is not printable ASCII"},
		{"a control character", []string{"hub:\x01"}, "character 5 is not printable ASCII"},
		{"not ASCII", []string{"hub:é"}, "character 5 is not printable ASCII"},
		{"sent twice", []string{"hub:a", "hub:b"}, "X-Temco-Owner is sent 2 times: send it once"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := jsonRequest(t, "POST", "/projects", res("p1", nil))
			for _, v := range tc.values {
				req.Header.Add(HeaderOwner, v)
			}
			if m := c.serve(req).must(t, http.StatusBadRequest).message(t); !strings.Contains(m, tc.want) {
				t.Errorf("message %q, want it to say %q", m, tc.want)
			}
			c.do("GET", "/projects/p1", nil).must(t, http.StatusNotFound)
		})
	}
	longest := strings.Repeat("~", maxOwnerLen)
	c.do("POST", "/projects", res("p1", nil), hub(longest)...).must(t, http.StatusCreated)
	if o, _ := ownerOfAnswer(t, c.do("GET", "/projects/p1", nil).must(t, 200)); o != longest {
		t.Errorf("owner %q, want the 256 characters sent", o)
	}
}

// jsonRequest is a request with a JSON body, for headers do cannot send.
func jsonRequest(t *testing.T, method, path string, body any) *http.Request {
	t.Helper()
	data, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	req := httptest.NewRequest(method, "/v2"+path, bytes.NewReader(data))
	req.Header.Set("Content-Type", "application/json")
	return req
}

// multipartRequest is a multipart request (metadata + file), for headers multipart cannot send.
func multipartRequest(t *testing.T, path string, metadata any, file []byte) *http.Request {
	t.Helper()
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	md, err := json.Marshal(metadata)
	if err != nil {
		t.Fatal(err)
	}
	_ = mw.WriteField("metadata", string(md))
	fw, _ := mw.CreateFormFile("file", "file")
	_, _ = fw.Write(file)
	_ = mw.Close()
	req := httptest.NewRequest("POST", "/v2"+path, &buf)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	return req
}

// Without the header nothing is written below an owned project, whatever the route: a
// composite app, a cluster label below an owned cluster, a cluster import's reference in
// an owned logical cloud; with it, the hub writes below REST's resources and another
// owner's (a DIG below a composite app).
func TestRESTWritesNothingBelowOwnedResources(t *testing.T) {
	c := newClient(t)
	const project, cloud, cluster = "hub:Project/hp", "hub:LogicalCloud/p1/hlc", "hub:Cluster/cp1/hc"
	c.do("POST", "/projects", res("hp", nil), hub(project)...).must(t, http.StatusCreated)
	c.do("POST", "/projects", res("p1", nil)).must(t, http.StatusCreated)
	c.do("POST", "/projects/p1/logical-clouds", res("hlc", map[string]any{"level": "0"}), hub(cloud)...).must(t, http.StatusCreated)
	c.do("POST", "/cluster-providers", res("cp1", nil)).must(t, http.StatusCreated)
	req := multipartRequest(t, "/cluster-providers/cp1/clusters", res("hc", nil), []byte(testKubeconfig))
	req.Header.Set(HeaderOwner, cluster)
	c.serve(req).must(t, http.StatusCreated)

	before := snapshot(t, c)
	for _, w := range []struct {
		name, method, path string
		body               any
		want               string
	}{
		{"composite app", "POST", "/projects/hp/composite-apps", res("ca", map[string]any{"compositeAppVersion": "v1"}),
			`project "hp" is owned by "hub:Project/hp": change what is below it there, not over REST (X-Temco-Owner)`},
		{"project replace", "PUT", "/projects/hp", res("hp", nil),
			`project "hp" is owned by "hub:Project/hp": change it there, not over REST (X-Temco-Owner)`},
		{"cluster label", "POST", "/cluster-providers/cp1/clusters/hc/labels", map[string]string{"clusterLabel": "edge"},
			`cluster "hc" is owned by "hub:Cluster/cp1/hc": change what is below it there, not over REST (X-Temco-Owner)`},
		{"logical cloud instantiate", "POST", "/projects/p1/logical-clouds/hlc/instantiate", nil,
			`logical cloud "hlc" is owned by "hub:LogicalCloud/p1/hlc": change it there, not over REST (X-Temco-Owner)`},
		{"cluster import into an owned logical cloud", "POST", "/cluster-providers/cp1/cluster-imports", map[string]any{"clusters": []any{
			map[string]any{"metadata": map[string]any{"name": "c9"}, "kubeconfig": testKubeconfig,
				"logicalClouds": []map[string]string{{"project": "p1", "logicalCloud": "hlc"}}}}},
			`logical cloud "hlc" is owned by "hub:LogicalCloud/p1/hlc": change what is below it there, not over REST (X-Temco-Owner)`},
	} {
		t.Run(w.name, func(t *testing.T) { refused(t, c.do(w.method, w.path, w.body), w.want) })
	}
	if after := snapshot(t, c); after != before {
		t.Errorf("refused writes changed the store:\nbefore:\n%s\nafter:\n%s", before, after)
	}

	// The hub writes below REST's provider and its own cluster, and below another owner's
	// project; what it creates is its own.
	c.do("POST", "/cluster-providers/cp1/clusters/hc/labels", map[string]string{"clusterLabel": "edge"}, hub(cluster)...).must(t, http.StatusCreated)
	if o, _ := ownerOfAnswer(t, c.do("GET", "/cluster-providers/cp1/clusters/hc/labels/edge", nil).must(t, 200)); o != cluster {
		t.Errorf("label owner %q, want %q", o, cluster)
	}
	const app = "hub:CompositeApp/hp/ca"
	c.do("POST", "/projects/hp/composite-apps", res("ca", map[string]any{"compositeAppVersion": "v1"}), hub(app)...).must(t, http.StatusCreated)
	if o, _ := ownerOfAnswer(t, c.do("GET", "/projects/hp/composite-apps/ca/v1", nil).must(t, 200)); o != app {
		t.Errorf("composite app owner %q, want %q", o, app)
	}
	c.do("POST", "/cluster-providers/cp1/cluster-imports", map[string]any{"clusters": []any{
		map[string]any{"metadata": map[string]any{"name": "c9"}, "kubeconfig": testKubeconfig,
			"logicalClouds": []map[string]string{{"project": "p1", "logicalCloud": "hlc"}}}}}, hub(cloud)...).must(t, http.StatusCreated)
	if o, _ := ownerOfAnswer(t, c.do("GET", "/cluster-providers/cp1/clusters/c9", nil).must(t, 200)); o != cloud {
		t.Errorf("imported cluster owner %q, want %q", o, cloud)
	}
}

// Only an admin names an owner: a tenant's request with the header is refused, even in
// its own project, and writes nothing; an admin's goes through.
func TestOwnerHeaderNeedsTheAdminRole(t *testing.T) {
	iss := newIssuer(t)
	c := authClient(t, iss)
	admin := c.as(iss.Token("root", []string{"admin"}, nil))
	alice := c.as(iss.Token("alice", []string{"project:p1"}, nil))
	admin.do("POST", "/projects", res("p1", nil)).must(t, http.StatusCreated)
	for _, r := range []struct{ method, path string }{{"POST", pP + "/composite-apps"}, {"GET", pP}} {
		var body any
		if r.method == "POST" {
			body = res("ca", map[string]any{"compositeAppVersion": "v1"})
		}
		m := alice.do(r.method, r.path, body, hub(hubA)...).must(t, http.StatusForbidden).message(t)
		if want := `X-Temco-Owner may be sent only with the admin role (temco hub's token); "alice" writes as REST: leave the header out`; m != want {
			t.Errorf("%s %s: message %q\nwant %q", r.method, r.path, m, want)
		}
	}
	alice.do("GET", pCA, nil).must(t, http.StatusNotFound)
	admin.do("POST", pP+"/composite-apps", res("ca", map[string]any{"compositeAppVersion": "v1"}), hub(hubA)...).must(t, http.StatusCreated)
	if o, _ := ownerOfAnswer(t, alice.do("GET", pCA, nil).must(t, 200)); o != hubA {
		t.Errorf("owner %q, want %q", o, hubA)
	}
	// The tenant, writing as REST, is refused the hub's composite app like any REST client.
	refused(t, alice.do("DELETE", pCA, nil), `composite app "ca" version "v1" is owned by "`+hubA+`": change it there, not over REST (X-Temco-Owner)`)
}

// countingReads is a client whose store counts its finds by _id: readsOf(id, write) is
// how many times write read id.
func countingReads(t *testing.T) (c *client, st *store.Store, readsOf func(id string, write func()) int) {
	var mu sync.Mutex
	reads := map[string]int{}
	mon := &event.CommandMonitor{Started: func(_ context.Context, e *event.CommandStartedEvent) {
		if id, ok := e.Command.Lookup("filter", "_id").StringValueOK(); ok && e.CommandName == "find" {
			mu.Lock()
			reads[id]++
			mu.Unlock()
		}
	}}
	st, _, err := store.Open(context.Background(), ferret.URI(), newClient(t).store.Database().Name(), mon)
	if err != nil {
		t.Fatal(err)
	}
	return newClient(t, func(s *Server) { s.Store = st }), st, func(id string, write func()) int {
		mu.Lock()
		clear(reads)
		mu.Unlock()
		write()
		mu.Lock()
		defer mu.Unlock()
		return reads[id]
	}
}

// A PUT reads what it replaces once: the ownership check's read serves the replace (a
// read fewer per update), which still writes over exactly that revision.
func TestAPutReadsWhatItReplacesOnce(t *testing.T) {
	c, _, readsOf := countingReads(t)
	c.do("POST", "/projects", res("p", nil)).must(t, http.StatusCreated)
	ca := "/projects/p/composite-apps/ca/v1"
	c.do("POST", "/projects/p/composite-apps", res("ca", map[string]any{"compositeAppVersion": "v1"})).must(t, http.StatusCreated)
	body := res("ca", map[string]any{"compositeAppVersion": "v1"})
	body["metadata"].(map[string]any)["description"] = "replaced"
	if got := readsOf(ca, func() { c.do("PUT", ca, body).must(t, http.StatusOK) }); got != 1 {
		t.Errorf("the PUT read %s %d times, want once", ca, got)
	}
	if r := c.do("GET", ca, nil); !strings.Contains(string(r.body), `"replaced"`) {
		t.Errorf("after the PUT: %s", r.body)
	}
}

// A REST resource records, when it is created, that nothing above it is owned: its PUT and
// DELETE read it alone, not what is above it. One written before (without the record)
// walks up as it did.
func TestRESTWritesReadNothingAboveWhatTheyChange(t *testing.T) {
	c, st, readsOf := countingReads(t)
	c.do("POST", "/projects", res("p", nil)).must(t, http.StatusCreated)
	ca := "/projects/p/composite-apps/ca/v1"
	c.do("POST", "/projects/p/composite-apps", res("ca", map[string]any{"compositeAppVersion": "v1"})).must(t, http.StatusCreated)
	body := res("ca", map[string]any{"compositeAppVersion": "v1"})
	body["metadata"].(map[string]any)["description"] = "replaced"
	if n := readsOf("/projects/p", func() { c.do("PUT", ca, body).must(t, http.StatusOK) }); n != 0 {
		t.Errorf("the PUT read the project %d times, want none", n)
	}
	if n := readsOf("/projects/p", func() { c.do("DELETE", ca, nil).must(t, http.StatusNoContent) }); n != 0 {
		t.Errorf("the DELETE read the project %d times, want none", n)
	}
	old := &store.Doc{ID: ca, Parent: "/projects/p", Scope: "/projects/p", Kind: model.KindCompositeApp, Name: "ca",
		Body: `{"metadata":{"name":"ca"},"spec":{"compositeAppVersion":"v1"}}`}
	if err := st.Create(context.Background(), old); err != nil {
		t.Fatal(err)
	}
	if n := readsOf("/projects/p", func() { c.do("DELETE", ca, nil).must(t, http.StatusNoContent) }); n != 1 {
		t.Errorf("the DELETE of a resource written before read the project %d times, want once", n)
	}
}

// ownedProject is the hub's project hp with, below it, the hub's composite app hca and
// two written by no one: old, as before Above was recorded, and rec, with it recorded.
func ownedProject(t *testing.T, c *client, st *store.Store) (owner, appOwner string) {
	t.Helper()
	owner, appOwner = "hub:Project/hp", "hub:CompositeApp/hp/hca"
	c.do("POST", "/projects", res("hp", nil), hub(owner)...).must(t, http.StatusCreated)
	c.do("POST", "/projects/hp/composite-apps", res("hca", map[string]any{"compositeAppVersion": "v1"}), hub(appOwner)...).must(t, http.StatusCreated)
	for _, d := range []*store.Doc{
		{ID: "/projects/hp/composite-apps/old/v1", Parent: "/projects/hp", Scope: "/projects/hp", Kind: model.KindCompositeApp, Name: "old",
			Body: `{"metadata":{"name":"old"},"spec":{"compositeAppVersion":"v1"}}`},
		{ID: "/projects/hp/composite-apps/rec/v1", Parent: "/projects/hp", Scope: "/projects/hp", Kind: model.KindCompositeApp, Name: "rec",
			Body: `{"metadata":{"name":"rec"},"spec":{"compositeAppVersion":"v1"}}`, Above: "/projects/hp", AboveV: 1},
	} {
		if err := st.Create(context.Background(), d); err != nil {
			t.Fatal(err)
		}
	}
	return owner, appOwner
}

// A REST create of a kind that checks nothing else reads its parent once, after its
// pending insert, and answers there as before: 409 below an owned resource (the parent,
// what is recorded above it, or, for a parent written before that record, an ancestor),
// leaving nothing behind; 404 without the parent. What it creates records that nothing
// above it is owned.
func TestARESTCreateReadsItsParentOnce(t *testing.T) {
	c, st, readsOf := countingReads(t)
	ctx := context.Background()
	c.do("POST", "/projects", res("p", nil)).must(t, http.StatusCreated)
	ca := "/projects/p/composite-apps/ca/v1"
	if n := readsOf("/projects/p", func() {
		c.do("POST", "/projects/p/composite-apps", res("ca", map[string]any{"compositeAppVersion": "v1"})).must(t, http.StatusCreated)
	}); n != 1 {
		t.Errorf("the create read its parent %d times, want once", n)
	}
	if d, err := st.Ownership(ctx, ca); err != nil || d.AboveV != 1 || d.Above != "" {
		t.Errorf("created %+v (%v): want nothing owned above it, recorded", d, err)
	}
	c.do("POST", "/projects/nope/composite-apps", res("ca", map[string]any{"compositeAppVersion": "v1"})).must(t, http.StatusNotFound)

	ownedProject(t, c, st)
	before := snapshot(t, c)
	for app, want := range map[string]string{
		"hca": `composite app "hca" version "v1" is owned by "hub:CompositeApp/hp/hca": change what is below it there, not over REST (X-Temco-Owner)`,
		"old": `project "hp" is owned by "hub:Project/hp": change what is below it there, not over REST (X-Temco-Owner)`,
		"rec": `project "hp" is owned by "hub:Project/hp": change what is below it there, not over REST (X-Temco-Owner)`,
	} {
		refused(t, c.do("POST", "/projects/hp/composite-apps/"+app+"/v1/composite-profiles", res("cp", nil)), want)
	}
	if after := snapshot(t, c); after != before {
		t.Errorf("refused creates changed the store:\nbefore:\n%s\nafter:\n%s", before, after)
	}
}

// A delete of a kind without an operation makes its owner check on the resource as the
// store's delete marks it, reading nothing of its own, and answers as before: 409 for an
// owned resource or one below an owned resource (what is recorded above it, or, for one
// written before that record, an ancestor; also when there is nothing to delete), leaving
// no mark behind; the owner deletes its own.
func TestADeleteChecksItsOwnerOnWhatItMarks(t *testing.T) {
	c, st, readsOf := countingReads(t)
	ctx := context.Background()
	c.do("POST", "/projects", res("p", nil)).must(t, http.StatusCreated)
	ca := "/projects/p/composite-apps/ca/v1"
	c.do("POST", "/projects/p/composite-apps", res("ca", map[string]any{"compositeAppVersion": "v1"})).must(t, http.StatusCreated)
	if n := readsOf(ca, func() { c.do("DELETE", ca, nil).must(t, http.StatusNoContent) }); n != 0 {
		t.Errorf("the delete read %s %d times, want none", ca, n)
	}
	c.do("DELETE", ca, nil).must(t, http.StatusNotFound)

	owner, appOwner := ownedProject(t, c, st)
	below := `project "hp" is owned by "hub:Project/hp": change what is below it there, not over REST (X-Temco-Owner)`
	before := snapshot(t, c)
	for _, w := range []struct {
		app   string
		owner []string
		want  string
	}{
		{"hca", nil, `composite app "hca" version "v1" is owned by "hub:CompositeApp/hp/hca": change it there, not over REST (X-Temco-Owner)`},
		{"hca", hub(owner), `composite app "hca" version "v1" is owned by "hub:CompositeApp/hp/hca", not by "hub:Project/hp" (X-Temco-Owner): change it there`},
		{"old", nil, below},
		{"rec", nil, below},
		{"missing", nil, below},
	} {
		refused(t, c.do("DELETE", "/projects/hp/composite-apps/"+w.app+"/v1", nil, w.owner...), w.want)
	}
	if after := snapshot(t, c); after != before {
		t.Errorf("refused deletes changed the store:\nbefore:\n%s\nafter:\n%s", before, after)
	}
	if n, err := c.store.Database().Collection("resources").CountDocuments(ctx, map[string]any{"deletingSince": map[string]any{"$exists": true}}); err != nil || n != 0 {
		t.Errorf("%d documents marked as being deleted after refused deletes (%v)", n, err)
	}
	c.do("DELETE", "/projects/hp/composite-apps/hca/v1", nil, hub(appOwner)...).must(t, http.StatusNoContent)
}
