package api

import (
	"context"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/temco/temco/internal/core/diagnostics"
	"github.com/temco/temco/internal/core/lifecycle"
)

const (
	hubBroken = "hub:DeploymentIntentGroup/p1/broken" // a hub DIG the API refused
	pBroken   = pCA + "/deployment-intent-groups/broken"
	pLC1      = pP + "/logical-clouds/lc1"
)

// declaration is temco hub's report of owner's object (hub:Kind/namespace/name or
// hub:Kind/name) declaring path.
func declaration(owner, project, path string, accepted bool, message string, generation int64) map[string]any {
	object := strings.TrimPrefix(owner, "hub:")
	parts := strings.Split(object, "/")
	d := map[string]any{"object": object, "kind": parts[0], "name": parts[len(parts)-1], "generation": generation,
		"project": project, "accepted": accepted, "message": message, "time": "2025-06-01T10:00:00Z"}
	if len(parts) == 3 {
		d["namespace"] = parts[1]
	}
	if path != "" {
		d["path"] = "/v2" + path
	}
	return d
}

type diagnosticsList struct {
	Resources []diagnostics.Entry `json:"resources"`
	Summary   diagnostics.Summary `json:"summary"`
}

func (c *client) diagnostics(t *testing.T, query string) (diagnosticsList, response) {
	t.Helper()
	r := c.do("GET", "/diagnostics"+query, nil).must(t, http.StatusOK)
	var l diagnosticsList
	r.json(t, &l)
	return l, r
}

// entryAt is the listed entry of path (and object, for refused reports); nil when none.
func (l diagnosticsList) entryAt(path, object string) *diagnostics.Entry {
	for i, e := range l.Resources {
		if e.Path == path && (object == "" || e.Object == object) {
			return &l.Resources[i]
		}
	}
	return nil
}

func (l diagnosticsList) paths() []string {
	var out []string
	for _, e := range l.Resources {
		out = append(out, e.Path)
	}
	return out
}

// Every top-level resource is listed, REST's as rest and the hub's with its owner, each
// accepted with the error of its last operation when that failed; a refused hub report
// is an entry of its own with its message, replaced by the next report of its object and
// gone once deleted; an accepted report joins the stored DIG's entry.
func TestDiagnosticsListDeclaredResources(t *testing.T) {
	c, srv, _ := lifecycleClient(t)
	c.do("POST", pCA+"/deployment-intent-groups", res("hd", digSpec()), hub(hubA)...).must(t, http.StatusCreated)
	ctx := context.Background()
	record(t, srv, pDIG, lifecycle.StateInstantiated, "ctx-dig1", lifecycle.StatusInstantiated)
	if err := srv.Contexts.SetStatus(ctx, "ctx-dig1", lifecycle.StatusInstantiateFailed, "apply to cp1+c1: connection refused"); err != nil {
		t.Fatal(err)
	}
	record(t, srv, pLC1, lifecycle.StateInstantiated, "ctx-lc1", lifecycle.StatusInstantiateFailed)
	record(t, srv, pHD, lifecycle.StateInstantiated, "ctx-hd", lifecycle.StatusInstantiated)

	l, _ := c.diagnostics(t, "")
	want := []string{"/v2/cluster-providers/cp1", "/v2" + pCL, "/v2" + pP, "/v2" + pCA, "/v2" + pDIG, "/v2" + pHD,
		"/v2" + pLC1, "/v2" + pP + "/logical-clouds/lc2"}
	if !slices.Equal(l.paths(), want) {
		t.Fatalf("listed %q\nwant   %q", l.paths(), want)
	}
	for _, tc := range []struct {
		path, kind, project, name, source, owner string
		errors                                   []string
	}{
		{"/v2/cluster-providers/cp1", "ClusterProvider", "", "cp1", "rest", "", nil},
		{"/v2" + pCL, "Cluster", "", "c1", "rest", "", nil},
		{"/v2" + pP, "Project", "p1", "p1", "rest", "", nil},
		{"/v2" + pCA, "CompositeApp", "p1", "ca", "rest", "", nil},
		{"/v2" + pDIG, "DeploymentIntentGroup", "p1", "dig1", "rest", "", []string{"InstantiateFailed: apply to cp1+c1: connection refused"}},
		{"/v2" + pHD, "DeploymentIntentGroup", "p1", "hd", "hub", hubA, nil},
		{"/v2" + pLC1, "LogicalCloud", "p1", "lc1", "rest", "", []string{"InstantiateFailed"}},
	} {
		e := l.entryAt(tc.path, "")
		if e == nil {
			t.Errorf("%s is not listed", tc.path)
			continue
		}
		if e.Kind != tc.kind || e.Project != tc.project || e.Name != tc.name || e.Source != tc.source || e.Owner != tc.owner ||
			!e.Accepted || !slices.Equal(e.Errors, append([]string{}, tc.errors...)) {
			t.Errorf("%s: %+v\nwant kind %s, project %q, name %s, source %s, owner %q, accepted, errors %q",
				tc.path, *e, tc.kind, tc.project, tc.name, tc.source, tc.owner, tc.errors)
		}
	}
	if e := l.entryAt("/v2"+pCA, ""); e == nil || e.Version != "v1" {
		t.Errorf("the composite app's version is %q", e.Version)
	}
	if l.Summary != (diagnostics.Summary{Total: 8, Refused: 0, Hub: 1, REST: 7}) {
		t.Errorf("summary %+v", l.Summary)
	}

	t.Run("an accepted report joins the stored DIG", func(t *testing.T) {
		c.do("PUT", "/diagnostics/declarations", declaration(hubA, "p1", pHD, true, "", 3), hub(hubA)...).must(t, http.StatusNoContent)
		l, _ := c.diagnostics(t, "")
		e := l.entryAt("/v2"+pHD, "")
		if e == nil {
			t.Fatalf("the hub's DIG is not listed: %q", l.paths())
		}
		if e.Object != "DeploymentIntentGroup/p1/hd" || e.Generation != 3 || !e.Accepted || e.Source != "hub" || e.Reported == nil {
			t.Errorf("the hub's DIG after its accepted report: %+v", *e)
		}
		if len(l.Resources) != 8 {
			t.Errorf("an accepted report added an entry: %q", l.paths())
		}
	})

	t.Run("a refused report is listed with its message, replaced by the next one", func(t *testing.T) {
		object := strings.TrimPrefix(hubBroken, "hub:")
		c.do("PUT", "/diagnostics/declarations", declaration(hubBroken, "p1", pBroken, false, `composite profile "nope" does not exist`, 1),
			hub(hubBroken)...).must(t, http.StatusNoContent)
		c.do("PUT", "/diagnostics/declarations", declaration(hubBroken, "p1", pBroken, false, `logical cloud "nope" does not exist`, 2),
			hub(hubBroken)...).must(t, http.StatusNoContent)
		l, _ := c.diagnostics(t, "")
		e := l.entryAt("/v2"+pBroken, object)
		if e == nil {
			t.Fatalf("the refused DIG is not listed: %q", l.paths())
		}
		if e.Accepted || e.Source != "hub" || e.Kind != "DeploymentIntentGroup" || e.Name != "broken" || e.Namespace != "p1" ||
			e.Project != "p1" || e.Generation != 2 || !slices.Equal(e.Errors, []string{`logical cloud "nope" does not exist`}) {
			t.Errorf("the refused DIG's entry: %+v", *e)
		}
		if len(l.Resources) != 9 || l.Summary != (diagnostics.Summary{Total: 9, Refused: 1, Hub: 2, REST: 7}) {
			t.Errorf("after two reports of one object: %d entries, summary %+v", len(l.Resources), l.Summary)
		}
		// A cluster-scoped object, refused before it had a path.
		c.do("PUT", "/diagnostics/declarations", declaration("hub:Cluster/c9", "", "", false, `cluster provider "nope" does not exist`, 1),
			hub("hub:Cluster/c9")...).must(t, http.StatusNoContent)
		l, _ = c.diagnostics(t, "")
		if e := l.Resources[0]; e.Object != "Cluster/c9" || e.Path != "" || e.Accepted || e.Project != "" {
			t.Errorf("the refused cluster without a path is not first: %+v", e)
		}
	})

	t.Run("filters", func(t *testing.T) {
		for _, tc := range []struct{ query, want string }{
			{"?accepted=false", "|/v2" + pBroken},
			{"?accepted=true&source=hub", "/v2" + pHD},
			{"?source=hub", "|/v2" + pBroken + "|/v2" + pHD},
			{"?source=rest&project=p1", strings.Join([]string{"/v2" + pP, "/v2" + pCA, "/v2" + pDIG, "/v2" + pLC1, "/v2" + pP + "/logical-clouds/lc2"}, "|")},
			{"?project=p1&accepted=false", "/v2" + pBroken},
			{"?project=p2", ""},
		} {
			l, _ := c.diagnostics(t, tc.query)
			if got := strings.Join(l.paths(), "|"); got != tc.want {
				t.Errorf("%s lists %q\nwant %q", tc.query, got, tc.want)
			}
		}
		// The summary counts the project's entries (or all), whatever the other filters.
		l, _ := c.diagnostics(t, "?accepted=false")
		if l.Summary != (diagnostics.Summary{Total: 10, Refused: 2, Hub: 3, REST: 7}) {
			t.Errorf("summary with accepted=false %+v", l.Summary)
		}
		l, _ = c.diagnostics(t, "?project=p1&source=rest")
		if l.Summary != (diagnostics.Summary{Total: 7, Refused: 1, Hub: 2, REST: 5}) {
			t.Errorf("summary of project p1 %+v", l.Summary)
		}
		for query, want := range map[string]string{
			"?source=git":      `source="git" is invalid: use rest or hub`,
			"?accepted=maybe":  `accepted="maybe" is invalid: use true or false`,
			"?accept=false":    `unknown query parameter "accept": use project, source, accepted, limit, continue`,
			"?project=a%2Fb":   `project filter "a/b" is invalid`,
			"?limit=0":         `limit="0" is invalid`,
			"?continue=%25%25": `continue="%%" is invalid`,
		} {
			if m := c.do("GET", "/diagnostics"+query, nil).must(t, http.StatusBadRequest).message(t); !strings.Contains(m, want) {
				t.Errorf("%s: message %q, want it to say %q", query, m, want)
			}
		}
	})

	t.Run("pages", func(t *testing.T) {
		all, _ := c.diagnostics(t, "")
		var got []string
		query := "?limit=3"
		for pages := 0; ; pages++ {
			if pages > len(all.Resources) {
				t.Fatalf("more pages than entries: %q", got)
			}
			l, r := c.diagnostics(t, query)
			if len(l.Resources) > 3 {
				t.Fatalf("a page of %d entries", len(l.Resources))
			}
			if l.Summary != all.Summary {
				t.Errorf("a page's summary %+v, the whole list's %+v", l.Summary, all.Summary)
			}
			for _, e := range l.Resources {
				got = append(got, e.Key())
			}
			token := r.hdr.Get(headerContinue)
			if token == "" {
				break
			}
			if link := r.hdr.Get("Link"); !strings.Contains(link, "continue="+token) {
				t.Errorf("Link %q does not name the next page", link)
			}
			query = "?limit=3&continue=" + url.QueryEscape(token)
		}
		var want []string
		for _, e := range all.Resources {
			want = append(want, e.Key())
		}
		if !slices.Equal(got, want) {
			t.Errorf("pages of 3 list %q\nwant %q", got, want)
		}
		l, _ := c.diagnostics(t, "?accepted=false&limit=1")
		if len(l.Resources) != 1 || l.Resources[0].Object != "Cluster/c9" {
			t.Errorf("the first refused entry: %+v", l.Resources)
		}
	})

	t.Run("a deleted report is gone; deleting none is no error", func(t *testing.T) {
		del := "/diagnostics/declarations?object=" + url.QueryEscape(strings.TrimPrefix(hubBroken, "hub:"))
		c.do("DELETE", del, nil, hub(hubBroken)...).must(t, http.StatusNoContent)
		c.do("DELETE", del, nil, hub(hubBroken)...).must(t, http.StatusNoContent)
		l, _ := c.diagnostics(t, "")
		if e := l.entryAt("/v2"+pBroken, ""); e != nil {
			t.Errorf("the deleted report is still listed: %+v", *e)
		}
		c.do("DELETE", "/diagnostics/declarations?object="+url.QueryEscape("DeploymentIntentGroup/p1/hd"), nil, hub(hubA)...).must(t, http.StatusNoContent)
		l, _ = c.diagnostics(t, "")
		if e := l.entryAt("/v2"+pHD, ""); e == nil || e.Object != "" || e.Generation != 0 || e.Source != "hub" {
			t.Errorf("the hub's DIG after its report was deleted: %+v", e)
		}
	})
}

// A report comes from the declared object's owner only, with bounded fields; anything
// else is refused with a message saying why, and stores nothing.
func TestDeclarationRefusals(t *testing.T) {
	c := newClient(t)
	good := func() map[string]any { return declaration(hubBroken, "p1", pBroken, false, "refused", 1) }
	with := func(change func(map[string]any)) map[string]any {
		d := good()
		change(d)
		return d
	}
	const put, del = "/diagnostics/declarations", "/diagnostics/declarations?object=DeploymentIntentGroup%2Fp1%2Fbroken"
	for _, tc := range []struct {
		name, method, path string
		body               any
		hdr                []string
		code               int
		want               string
	}{
		{"no header", "PUT", put, good(), nil, 400,
			"X-Temco-Owner is required: send hub:<Kind>/<namespace>/<name>, the owner of the declared object"},
		{"another object's owner", "PUT", put, good(), hub(hubA), 409,
			`X-Temco-Owner "hub:DeploymentIntentGroup/p1/hd" is not the owner of the declared object "DeploymentIntentGroup/p1/broken": only "hub:DeploymentIntentGroup/p1/broken" reports it`},
		{"an owner without hub:", "PUT", put, good(), hub("DeploymentIntentGroup/p1/broken"), 409, `only "hub:DeploymentIntentGroup/p1/broken" reports it`},
		{"a malformed header", "PUT", put, good(), hub("hub:a b"), 400, "X-Temco-Owner \"hub:a b\" is invalid: character 6 is not printable ASCII"},
		{"a message over 4 KiB", "PUT", put, with(func(d map[string]any) { d["message"] = strings.Repeat("m", 4097) }), hub(hubBroken), 400,
			"declaration: message is 4097 bytes long: 4096 at most (shorten it)"},
		{"an object that is not its kind, namespace and name", "PUT", put, with(func(d map[string]any) { d["name"] = "other" }), hub(hubBroken), 400,
			`declaration: object "DeploymentIntentGroup/p1/broken" is not its kind, namespace and name: want "DeploymentIntentGroup/p1/other"`},
		{"a path outside the API", "PUT", put, with(func(d map[string]any) { d["path"] = pBroken }), hub(hubBroken), 400,
			"is not a path of the REST API: it begins with /v2/"},
		{"no object", "PUT", put, with(func(d map[string]any) { delete(d, "object") }), hub(hubBroken), 400, "declaration: object is required"},
		{"a body over 64 KiB", "PUT", put, with(func(d map[string]any) { d["extra"] = strings.Repeat("x", 64<<10) }), hub(hubBroken), 413,
			"request body is larger than the limit of 65536 bytes"},
		{"not JSON", "PUT", put, "{", hub(hubBroken), 400, "request body is not valid JSON"},
		{"a delete without object", "DELETE", "/diagnostics/declarations", nil, hub(hubBroken), 400, "object= is required"},
		{"a delete without header", "DELETE", del, nil, nil, 400, "X-Temco-Owner is required"},
		{"a delete by another owner", "DELETE", del, nil, hub(hubA), 409, `only "hub:DeploymentIntentGroup/p1/broken" reports it`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if m := c.do(tc.method, tc.path, tc.body, tc.hdr...).must(t, tc.code).message(t); !strings.Contains(m, tc.want) {
				t.Errorf("message %q\nwant it to say %q", m, tc.want)
			}
		})
	}
	if l, _ := c.diagnostics(t, ""); len(l.Resources) != 0 {
		t.Errorf("refused reports were stored: %+v", l.Resources)
	}
	// The limits themselves pass.
	c.do("PUT", put, with(func(d map[string]any) { d["message"] = strings.Repeat("<", 4096) }), hub(hubBroken)...).must(t, http.StatusNoContent)
	if l, _ := c.diagnostics(t, ""); len(l.Resources) != 1 || l.Resources[0].Errors[0] != strings.Repeat("<", 4096) {
		t.Errorf("a 4096-byte message was not kept whole: %+v", l.Resources)
	}
}

// Only an admin reports; a tenant reads the diagnostics of its projects only: no other
// project's entries or reports, nothing cluster-scoped.
func TestDiagnosticsOfATenant(t *testing.T) {
	iss := newIssuer(t)
	c := authClient(t, iss)
	admin := c.as(iss.Token("root", []string{"admin"}, nil))
	tree(t, admin)
	admin.do("POST", "/projects", res("p2", nil)).must(t, http.StatusCreated)
	alice := c.as(iss.Token("alice", []string{"project:p1"}, nil))
	nobody := c.as(iss.Token("nobody", []string{"project:p9"}, nil))

	report := declaration(hubBroken, "p1", pBroken, false, "refused in p1", 1)
	for _, who := range []struct {
		name string
		c    *client
		hdr  []string
		want string
	}{
		{"a tenant with the header", alice, hub(hubBroken), "PUT /v2/diagnostics/declarations requires the admin role"},
		{"a tenant without it", alice, nil, "PUT /v2/diagnostics/declarations requires the admin role"},
	} {
		if m := who.c.do("PUT", "/diagnostics/declarations", report, who.hdr...).must(t, http.StatusForbidden).message(t); m != who.want {
			t.Errorf("%s: message %q, want %q", who.name, m, who.want)
		}
	}
	if m := alice.do("DELETE", "/diagnostics/declarations?object=x", nil, hub("hub:x")...).must(t, http.StatusForbidden).message(t); !strings.Contains(m, "requires the admin role") {
		t.Errorf("a tenant's delete: %q", m)
	}
	admin.do("PUT", "/diagnostics/declarations", report, hub(hubBroken)...).must(t, http.StatusNoContent)
	admin.do("PUT", "/diagnostics/declarations", declaration("hub:DeploymentIntentGroup/p2/x", "p2", "/projects/p2/composite-apps/a/v1/deployment-intent-groups/x",
		false, "refused in p2", 1), hub("hub:DeploymentIntentGroup/p2/x")...).must(t, http.StatusNoContent)
	admin.do("PUT", "/diagnostics/declarations", declaration("hub:Cluster/c9", "", "", false, "refused cluster", 1), hub("hub:Cluster/c9")...).must(t, http.StatusNoContent)

	all, _ := admin.diagnostics(t, "")
	if all.Summary.Total != 11 || all.Summary.Refused != 3 {
		t.Fatalf("the admin sees %+v: %q", all.Summary, all.paths())
	}
	mine, _ := alice.diagnostics(t, "")
	want := []string{"/v2" + pP, "/v2" + pCA, "/v2" + pBroken, "/v2" + pDIG, "/v2" + pLC1, "/v2" + pP + "/logical-clouds/lc2"}
	if !slices.Equal(mine.paths(), want) {
		t.Errorf("alice sees %q\nwant      %q", mine.paths(), want)
	}
	if mine.Summary != (diagnostics.Summary{Total: 6, Refused: 1, Hub: 1, REST: 5}) {
		t.Errorf("alice's summary %+v", mine.Summary)
	}
	if m := alice.do("GET", "/diagnostics?project=p2", nil).must(t, http.StatusForbidden).message(t); m != `project "p2" is not granted to "alice"` {
		t.Errorf("alice's filter on p2: %q", m)
	}
	if l, _ := nobody.diagnostics(t, ""); len(l.Resources) != 0 || l.Summary.Total != 0 {
		t.Errorf("a tenant of a project that does not exist sees %q", l.paths())
	}
}
