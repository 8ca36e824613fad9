package api

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/temco/temco/internal/core/model"
	"github.com/temco/temco/internal/core/store"
)

// walk follows a list's pages from path (which names its limit) and returns every name in
// order, failing on a page over limit or a Link that disagrees with X-Continue.
func walk(t *testing.T, c *client, path string, limit int) []string {
	t.Helper()
	var names []string
	for pages := 0; ; pages++ {
		if pages > 100 {
			t.Fatalf("%s: no end after 100 pages", path)
		}
		r := c.do("GET", path, nil).must(t, 200)
		var page []json.RawMessage
		r.json(t, &page)
		if len(page) > limit {
			t.Fatalf("%s answered %d items, over the limit %d", path, len(page), limit)
		}
		for _, item := range page {
			names = append(names, nameOf(t, item))
		}
		token, link := r.hdr.Get(headerContinue), r.hdr.Get("Link")
		if token == "" {
			if link != "" {
				t.Fatalf("%s: Link %q without %s", path, link, headerContinue)
			}
			return names
		}
		next, ok := strings.CutSuffix(strings.TrimPrefix(link, "<"), `>; rel="next"`)
		u, err := url.Parse(next)
		if !ok || err != nil || u.Query().Get("continue") != token || !strings.HasPrefix(u.Path, "/v2/") {
			t.Fatalf("%s: Link %q does not name the next page of token %q", path, link, token)
		}
		path = strings.TrimPrefix(u.RequestURI(), "/v2")
	}
}

// nameOf is a list item's name: a resource's metadata.name, a label's clusterLabel, or a string.
func nameOf(t *testing.T, item json.RawMessage) string {
	var v struct {
		Metadata struct{ Name string } `json:"metadata"`
		Label    string                `json:"clusterLabel"`
	}
	var s string
	if json.Unmarshal(item, &s) == nil {
		return s
	}
	if err := json.Unmarshal(item, &v); err != nil {
		t.Fatalf("list item %s: %v", item, err)
	}
	return v.Metadata.Name + v.Label
}

// Every kind of list pages alike: limit items a page, and the tokens walk the whole list,
// in the unpaged answer's order, keeping the list's own filters (?app=, ?label=).
func TestListsPageThroughContinueTokens(t *testing.T) {
	c := newClient(t)
	tree(t, c)
	var projects, clusters, labelled []string
	for i := range 5 {
		p := fmt.Sprintf("q%d", i)
		c.do("POST", "/projects", res(p, nil)).must(t, 201)
		cl := fmt.Sprintf("c%d", i+2)
		c.multipart("POST", "/cluster-providers/cp1/clusters", res(cl, nil), []byte(testKubeconfig)).must(t, 201)
		c.do("POST", "/cluster-providers/cp1/clusters/c1/labels", map[string]any{"clusterLabel": "l" + p}).must(t, 201)
		if i%2 == 0 {
			c.do("POST", "/cluster-providers/cp1/clusters/"+cl+"/labels", map[string]any{"clusterLabel": "edge"}).must(t, 201)
			labelled = append(labelled, cl)
		}
		projects, clusters = append(projects, p), append(clusters, cl)
	}
	for _, tc := range []struct {
		name, path string
		want       []string
	}{
		{"projects", "/projects", append([]string{"p1"}, projects...)},
		{"clusters", "/cluster-providers/cp1/clusters", append([]string{"c1"}, clusters...)},
		{"clusters with labels", "/cluster-providers/cp1/clusters?withLabels=true", append([]string{"c1"}, clusters...)},
		{"cluster names by label", "/cluster-providers/cp1/clusters?label=edge", labelled},
		{"a cluster's labels", "/cluster-providers/cp1/clusters/c1/labels", []string{"lq0", "lq1", "lq2", "lq3", "lq4"}},
		{"composite apps", pP + "/composite-apps", []string{"ca"}},
		{"profiles of app1", pCA + "/composite-profiles/cprof/profiles?app=app1", []string{"prof1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sep := "?"
			if strings.Contains(tc.path, "?") {
				sep = "&"
			}
			whole := walk(t, c, tc.path, listCap)
			if !slices.Equal(whole, tc.want) {
				t.Fatalf("unpaged: %v, want %v", whole, tc.want)
			}
			for _, limit := range []int{1, 2, len(tc.want), len(tc.want) + 1} {
				if got := walk(t, c, fmt.Sprintf("%s%slimit=%d", tc.path, sep, limit), limit); !slices.Equal(got, tc.want) {
					t.Errorf("limit=%d walked %v, want %v", limit, got, tc.want)
				}
			}
		})
	}
	// A full last page announces no next one: the database read one more to know.
	if r := c.do("GET", "/projects?limit=6", nil).must(t, 200); r.hdr.Get(headerContinue) != "" {
		t.Errorf("a page holding the rest of the list announces more: %q", r.hdr.Get(headerContinue))
	}
}

// Without limit a list answers up to the cap, so EMCO clients see 10,000 clusters under a
// provider in one answer; the 10,001st is behind the continue token.
func TestListWithoutLimitAnswersUpToTheCap(t *testing.T) {
	c := newClient(t)
	c.do("POST", "/cluster-providers", res("cp1", nil)).must(t, 201)
	var docs []any
	for i := range listCap + 1 {
		name := fmt.Sprintf("c%05d", i)
		body, _ := json.Marshal(res(name, nil))
		docs = append(docs, &store.Doc{ID: "/cluster-providers/cp1/clusters/" + name, Parent: "/cluster-providers/cp1",
			Scope: "/cluster-providers/cp1", Kind: model.KindCluster, Name: name, Body: string(body)})
	}
	if _, err := c.store.Database().Collection("resources").InsertMany(context.Background(), docs); err != nil {
		t.Fatal(err)
	}
	r := c.do("GET", "/cluster-providers/cp1/clusters", nil).must(t, 200)
	var page []json.RawMessage
	r.json(t, &page)
	if len(page) != listCap || nameOf(t, page[listCap-1]) != fmt.Sprintf("c%05d", listCap-1) || r.hdr.Get(headerContinue) == "" {
		t.Fatalf("unpaged: %d clusters, %s %q", len(page), headerContinue, r.hdr.Get(headerContinue))
	}
	r = c.do("GET", "/cluster-providers/cp1/clusters?continue="+r.hdr.Get(headerContinue), nil).must(t, 200)
	if r.json(t, &page); len(page) != 1 || nameOf(t, page[0]) != fmt.Sprintf("c%05d", listCap) || r.hdr.Get(headerContinue) != "" {
		t.Errorf("the rest: %s (%s %q)", r.body, headerContinue, r.hdr.Get(headerContinue))
	}
}

func TestListLimitAndContinueAreValidated(t *testing.T) {
	c := newClient(t)
	long := base64.RawURLEncoding.EncodeToString([]byte(strings.Repeat("a", maxContinueLen)))
	for _, tc := range []struct{ query, param string }{
		{"limit=0", "limit"}, {"limit=-1", "limit"}, {fmt.Sprintf("limit=%d", listCap+1), "limit"}, {"limit=ten", "limit"},
		{"limit=", "limit"}, {"limit=1&limit=2", "limit"}, {"limit=1.5", "limit"},
		{"continue=not*base64", "continue"}, {"continue=" + long, "continue"}, {"continue=_w", "continue"}, // "\xff": not UTF-8
		{"continue=YQ&continue=Yg", "continue"},
	} {
		for _, path := range []string{"/projects", "/cluster-providers"} {
			m := c.do("GET", path+"?"+tc.query, nil).must(t, 400).message(t)
			if !strings.HasPrefix(m, tc.param+"=") {
				t.Errorf("%s?%s: message %q does not name %s", path, tc.query, m, tc.param)
			}
		}
	}
	c.do("GET", fmt.Sprintf("/projects?limit=%d", listCap), nil).must(t, 200)
	c.do("GET", "/projects?limit=1&continue=", nil).must(t, 200) // empty: from the start
}

// A token only sets where a page starts inside the list it is used on: one from another
// project's list, or one made up to name another project's ids, shows nothing outside the
// route's parent; a tenant's pages hold only its projects, and are full.
func TestContinueTokenStaysInsideItsList(t *testing.T) {
	iss := newIssuer(t)
	c := authClient(t, iss).as(iss.Token("root", []string{"admin"}, nil))
	for _, p := range []string{"pa", "pb", "pc", "pd", "pe"} {
		c.do("POST", "/projects", res(p, nil)).must(t, 201)
		for _, ca := range []string{"a", "b", "c"} {
			c.do("POST", "/projects/"+p+"/composite-apps", res(p+ca, map[string]any{"compositeAppVersion": "v1"})).must(t, 201)
		}
	}
	r := c.do("GET", "/projects/pa/composite-apps?limit=1", nil).must(t, 200)
	tokenA := r.hdr.Get(headerContinue)
	made := func(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }
	for _, token := range []string{tokenA, made("../../pa/composite-apps/paa/v1"), made("/projects/pa"), made(""), made("\x00")} {
		var got []json.RawMessage
		c.do("GET", "/projects/pb/composite-apps?continue="+token, nil).must(t, 200).json(t, &got)
		for _, item := range got {
			if n := nameOf(t, item); !strings.HasPrefix(n, "pb") {
				t.Errorf("project pb's list with token %q shows %q", token, n)
			}
		}
	}

	tenant := c.as(iss.Token("tina", []string{"project:pb", "project:pd", "project:zz"}, nil))
	if got := walk(t, tenant, "/projects?limit=1", 1); !slices.Equal(got, []string{"pb", "pd"}) {
		t.Errorf("the tenant's pages: %v, want [pb pd]", got)
	}
	var first []json.RawMessage
	r = tenant.do("GET", "/projects?limit=1", nil).must(t, 200)
	if r.json(t, &first); len(first) != 1 || r.hdr.Get(headerContinue) == "" {
		t.Errorf("the tenant's first page of one is not full or has no next: %s", r.body)
	}
	for _, token := range []string{made("pa"), made("pc"), made("")} {
		var got []json.RawMessage
		tenant.do("GET", "/projects?continue="+token, nil).must(t, 200).json(t, &got)
		for _, item := range got {
			if n := nameOf(t, item); n != "pb" && n != "pd" {
				t.Errorf("the tenant's list with token %q shows project %q", token, n)
			}
		}
	}
	tenant.do("GET", "/projects/pa/composite-apps?continue="+tokenA, nil).must(t, 403)
	none := c.as(iss.Token("nobody", []string{"viewer"}, nil))
	if r := none.do("GET", "/projects?limit=1", nil).must(t, 200); string(r.body) != "[]" || r.hdr.Get(headerContinue) != "" {
		t.Errorf("a caller granted no project lists %s", r.body)
	}
}

// The OpenAPI document tells every list's paging: its parameters and headers.
func TestOpenAPIDocumentsListPaging(t *testing.T) {
	c := newClient(t)
	doc, err := openapi3.NewLoader().LoadFromData(c.do("GET", "/openapi.yaml", nil).must(t, 200).body)
	if err != nil {
		t.Fatal(err)
	}
	lists := 0
	for path, item := range doc.Paths.Map() {
		get := item.Get
		if get == nil || get.Responses.Value("200") == nil {
			continue
		}
		ok := get.Responses.Value("200").Value
		if ok.Content == nil || ok.Content.Get("application/json") == nil || !ok.Content.Get("application/json").Schema.Value.Type.Is("array") {
			continue
		}
		if strings.HasPrefix(path, "/v2/contexts/") { // controllers' views of a context, not stored lists
			continue
		}
		lists++
		if get.Parameters.GetByInAndName("query", "limit") == nil || get.Parameters.GetByInAndName("query", "continue") == nil ||
			ok.Headers[headerContinue] == nil || ok.Headers["Link"] == nil {
			t.Errorf("GET %s answers an array but does not document limit, continue, %s and Link", path, headerContinue)
		}
	}
	if lists < 20 {
		t.Errorf("only %d lists: the check looked at the wrong document", lists)
	}
}
