package api

import (
	"net/http"
	"strings"
	"testing"

	"github.com/temco/temco/internal/dev/testenv"
)

const (
	pP   = "/projects/p1"
	pCA  = pP + "/composite-apps/ca/v1"
	pDIG = pCA + "/deployment-intent-groups/dig1"
	pGPI = pDIG + "/generic-placement-intents/gpi1"
	pCL  = "/cluster-providers/cp1/clusters/c1"
)

// A kubeconfig that parses; the credentials are placeholders (no server is contacted).
const testKubeconfig = `apiVersion: v1
kind: Config
clusters:
- name: c1
  cluster: {server: "https://127.0.0.1:6443", certificate-authority-data: "dGVzdC1jYQ=="}
users:
- name: admin
  user: {client-certificate-data: "dGVzdC1jZXJ0", client-key-data: "dGVzdC1rZXktU0VDUkVU"}
contexts:
- name: c1
  context: {cluster: c1, user: admin}
current-context: c1
`

var testChart = testenv.Chart("web", "replicas: 1\n", map[string]string{
	"cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web\ndata:\n  replicas: \"{{ .Values.replicas }}\"\n",
})

// tree creates a provider with a cluster, and a project with a composite app, two apps,
// a composite profile with a profile, a controller, a DIG and its generic placement intent.
func tree(t testing.TB, c *client) {
	t.Helper()
	c.do("POST", "/cluster-providers", res("cp1", nil)).must(t, 201)
	c.multipart("POST", "/cluster-providers/cp1/clusters", res("c1", nil), []byte(testKubeconfig)).must(t, 201)
	c.do("POST", "/projects", res("p1", nil)).must(t, 201)
	c.do("POST", pP+"/composite-apps", res("ca", map[string]any{"compositeAppVersion": "v1"})).must(t, 201)
	c.multipart("POST", pCA+"/apps", res("app1", nil), testChart).must(t, 201)
	c.multipart("POST", pCA+"/apps", res("app2", nil), testChart).must(t, 201)
	c.do("POST", pCA+"/composite-profiles", res("cprof", nil)).must(t, 201)
	c.multipart("POST", pCA+"/composite-profiles/cprof/profiles", res("prof1", map[string]any{"app": "app1"}),
		testenv.Profile("replicas: 2\n")).must(t, 201)
	c.do("POST", "/controllers", res("gac", map[string]any{"type": "action", "priority": 1})).must(t, 201)
	c.do("POST", pP+"/logical-clouds", res("lc1", map[string]any{"level": "0"})).must(t, 201)
	c.do("POST", pP+"/logical-clouds", res("lc2", map[string]any{"namespace": "team-b", "user": map[string]any{"userName": "bob"}})).must(t, 201)
	c.do("POST", pCA+"/deployment-intent-groups", res("dig1", digSpec())).must(t, 201)
	c.do("POST", pDIG+"/generic-placement-intents", res("gpi1", nil)).must(t, 201)
}

func digSpec() map[string]any {
	return map[string]any{"compositeProfile": "cprof", "version": "1", "logicalCloud": "lc1",
		"overrideValues": []any{map[string]any{"app": "app1", "values": map[string]string{"a.b.c": "v"}}}}
}

func appIntentSpec(app string) map[string]any {
	return map[string]any{"app": app, "intent": map[string]any{
		"allOf": []any{map[string]any{"clusterProvider": "cp1", "cluster": "c1"}}}}
}

// jsonKind is one JSON resource kind exercised by TestJSONResources.
type jsonKind struct {
	name         string
	coll         string
	spec         map[string]any
	item         func(coll, name string) string
	child        func(c *client, item string) // creates a child (or referrer) that blocks the delete
	unblock      func(c *client, item string) // removes it again
	orphanColl   string                       // the collection under a parent that does not exist
	invalidSpecs []map[string]any             // each answered 400
}

func jsonKinds() []jsonKind {
	return []jsonKind{
		{name: "cluster provider", coll: "/cluster-providers",
			child: func(c *client, item string) {
				c.multipart("POST", item+"/clusters", res("cx", nil), []byte(testKubeconfig)).must(c.t, 201)
			},
			unblock: func(c *client, item string) { c.do("DELETE", item+"/clusters/cx", nil).must(c.t, 204) }},
		{name: "project", coll: "/projects",
			child: func(c *client, item string) {
				c.do("POST", item+"/composite-apps", res("cx", map[string]any{"compositeAppVersion": "v1"})).must(c.t, 201)
			},
			unblock: func(c *client, item string) { c.do("DELETE", item+"/composite-apps/cx/v1", nil).must(c.t, 204) }},
		{name: "composite app", coll: pP + "/composite-apps", spec: map[string]any{"compositeAppVersion": "v9"},
			item: func(coll, name string) string { return coll + "/" + name + "/v9" },
			child: func(c *client, item string) {
				c.multipart("POST", item+"/apps", res("ax", nil), testChart).must(c.t, 201)
			},
			unblock:      func(c *client, item string) { c.do("DELETE", item+"/apps/ax", nil).must(c.t, 204) },
			orphanColl:   "/projects/nope/composite-apps",
			invalidSpecs: []map[string]any{{}, {"compositeAppVersion": "v/1"}}},
		{name: "composite profile", coll: pCA + "/composite-profiles",
			child: func(c *client, item string) {
				c.multipart("POST", item+"/profiles", res("px", map[string]any{"app": "app2"}), testenv.Profile("a: 1\n")).must(c.t, 201)
			},
			unblock:    func(c *client, item string) { c.do("DELETE", item+"/profiles/px", nil).must(c.t, 204) },
			orphanColl: pP + "/composite-apps/nope/v1/composite-profiles"},
		{name: "controller", coll: "/controllers", spec: map[string]any{"host": "gac", "port": 9053, "type": "action", "priority": 1},
			child: func(c *client, item string) {
				name := item[strings.LastIndex(item, "/")+1:]
				c.do("POST", pDIG+"/intents", res("ix", map[string]any{"intent": map[string]string{
					"genericPlacementIntent": "gpi1", name: "i1"}})).must(c.t, 201)
			},
			unblock: func(c *client, _ string) { c.do("DELETE", pDIG+"/intents/ix", nil).must(c.t, 204) },
			invalidSpecs: []map[string]any{{"type": strings.Repeat("t", 49)}, {"priority": 101}, {"priority": -1},
				{"port": 70000}, {"priority": "high"}}},
		{name: "clm controller", coll: "/clm-controllers", spec: map[string]any{"host": "h", "port": 9999, "priority": 3},
			invalidSpecs: []map[string]any{{"host": "h"}, {"port": 9999}}},
		{name: "cluster kv pair", coll: pCL + "/kv-pairs", spec: map[string]any{"kv": []any{map[string]any{"key1": "v1"}}},
			orphanColl: "/cluster-providers/cp1/clusters/nope/kv-pairs", invalidSpecs: []map[string]any{{"kv": "x"}}},
		{name: "deployment intent group", coll: pCA + "/deployment-intent-groups", spec: digSpec(),
			child: func(c *client, item string) {
				c.do("POST", item+"/generic-placement-intents", res("gx", nil)).must(c.t, 201)
			},
			unblock:    func(c *client, item string) { c.do("DELETE", item+"/generic-placement-intents/gx", nil).must(c.t, 204) },
			orphanColl: pP + "/composite-apps/ca/v2/deployment-intent-groups",
			invalidSpecs: []map[string]any{{"version": "1", "logicalCloud": "lc1"}, {"compositeProfile": "cprof", "logicalCloud": "lc1"},
				{"compositeProfile": "cprof", "version": "1"},
				{"compositeProfile": "cprof", "version": "1", "logicalCloud": "lc1", "overrideValues": []any{map[string]any{"app": ""}}},
				{"compositeProfile": "cprof", "version": "1", "logicalCloud": "lc1", "overrideValues": []any{
					map[string]any{"app": "app1"}, map[string]any{"app": "app1"}}}}},
		{name: "generic placement intent", coll: pDIG + "/generic-placement-intents",
			child: func(c *client, item string) {
				c.do("POST", item+"/app-intents", res("ax", appIntentSpec("app1"))).must(c.t, 201)
			},
			unblock:    func(c *client, item string) { c.do("DELETE", item+"/app-intents/ax", nil).must(c.t, 204) },
			orphanColl: pCA + "/deployment-intent-groups/nope/generic-placement-intents"},
		{name: "app placement intent", coll: pGPI + "/app-intents", spec: appIntentSpec("app1"),
			orphanColl:   pDIG + "/generic-placement-intents/nope/app-intents",
			invalidSpecs: []map[string]any{{"app": "app1"}, {"intent": appIntentSpec("app1")["intent"]}}},
		{name: "deployment intent", coll: pDIG + "/intents",
			spec:         map[string]any{"intent": map[string]string{"genericPlacementIntent": "gpi1", "gac": "gac-intent"}},
			orphanColl:   pCA + "/deployment-intent-groups/nope/intents",
			invalidSpecs: []map[string]any{{"intent": map[string]string{"genericPlacementIntent": "a b"}}, {"intent": map[string]string{"a b": "x"}}}},
		{name: "logical cloud", coll: pP + "/logical-clouds",
			spec: map[string]any{"namespace": "team-a", "level": "1", "user": map[string]any{"userName": "alice", "type": "certificate"}},
			child: func(c *client, item string) {
				c.do("POST", item+"/cluster-references", res("r1", map[string]any{"clusterProvider": "cp1", "cluster": "c1"})).must(c.t, 201)
			},
			unblock:    func(c *client, item string) { c.do("DELETE", item+"/cluster-references/r1", nil).must(c.t, 204) },
			orphanColl: "/projects/nope/logical-clouds",
			invalidSpecs: []map[string]any{{"level": "2"}, {"level": "1", "user": map[string]any{"userName": "a"}},
				{"level": "1", "namespace": "Team_A", "user": map[string]any{"userName": "a"}},
				{"level": "1", "namespace": "ns", "user": map[string]any{"userName": strings.Repeat("u", 21)}},
				{"namespace": "ns", "user": map[string]any{"userName": "a"}, "labels": map[string]string{"bad key!": "v"}}}},
		{name: "cluster reference", coll: pP + "/logical-clouds/lc1/cluster-references",
			spec:         map[string]any{"clusterProvider": "cp1", "cluster": "c1"},
			orphanColl:   pP + "/logical-clouds/nope/cluster-references",
			invalidSpecs: []map[string]any{{"clusterProvider": "cp1"}, {"cluster": "c1"}}},
		{name: "user permission", coll: pP + "/logical-clouds/lc1/user-permissions",
			spec:         map[string]any{"namespace": "team-a", "apiGroups": []string{""}, "resources": []string{"configmaps"}, "verbs": []string{"get"}},
			orphanColl:   pP + "/logical-clouds/nope/user-permissions",
			invalidSpecs: []map[string]any{{"resources": []string{"pods"}}, {"namespace": "A B", "resources": []string{"pods"}, "verbs": []string{"get"}}}},
		{name: "cluster quota", coll: pP + "/logical-clouds/lc2/cluster-quotas", spec: map[string]any{"pods": "10", "limits.cpu": "2"},
			orphanColl: pP + "/logical-clouds/nope/cluster-quotas", invalidSpecs: []map[string]any{{}, {"pods": "ten"}}},
		{name: "logical cloud kv pair", coll: pP + "/logical-clouds/lc1/kv-pairs", spec: map[string]any{"kv": []any{map[string]any{"k": "v"}}},
			orphanColl: pP + "/logical-clouds/nope/kv-pairs"},
		{name: "app dependency", coll: pCA + "/apps/app1/dependency", spec: map[string]any{"app": "app2", "opStatus": "Ready", "wait": 5},
			orphanColl: pCA + "/apps/nope/dependency",
			invalidSpecs: []map[string]any{{"app": "app1", "opStatus": "Ready"}, {"app": "app2", "opStatus": "Done"},
				{"app": "app2", "opStatus": "Ready", "wait": -1}}},
	}
}

func TestJSONResources(t *testing.T) {
	for _, k := range jsonKinds() {
		t.Run(k.name, func(t *testing.T) {
			c := newClient(t)
			tree(t, c)
			item := func(name string) string {
				if k.item != nil {
					return k.item(k.coll, name)
				}
				return k.coll + "/" + name
			}
			body := res("a1", k.spec)

			created := c.do("POST", k.coll, body).must(t, http.StatusCreated)
			var got struct {
				Metadata map[string]string `json:"metadata"`
				Spec     map[string]any    `json:"spec"`
			}
			created.json(t, &got)
			if got.Metadata["name"] != "a1" || got.Metadata["description"] != "d-a1" {
				t.Fatalf("created body %s", created.body)
			}
			dup := c.do("POST", k.coll, body).must(t, http.StatusConflict)
			if m := dup.message(t); !strings.Contains(m, "already exists") {
				t.Errorf("duplicate message %q", m)
			}
			if r := c.do("GET", item("a1"), nil).must(t, 200); string(r.body) != string(created.body) {
				t.Errorf("GET returned %s, stored %s", r.body, created.body)
			}
			var all []map[string]any
			c.do("GET", k.coll, nil).must(t, 200).json(t, &all)
			if len(all) == 0 {
				t.Fatalf("list is empty after create")
			}

			changed := res("a1", k.spec)
			changed["metadata"].(map[string]any)["description"] = "changed"
			c.do("PUT", item("a1"), changed).must(t, http.StatusOK)
			c.do("GET", item("a1"), nil).must(t, 200).json(t, &got)
			if got.Metadata["description"] != "changed" {
				t.Errorf("PUT did not replace: %v", got.Metadata)
			}
			c.do("PUT", item("a1"), res("other", k.spec)).must(t, http.StatusBadRequest)
			c.do("PUT", item("a2"), res("a2", k.spec)).must(t, http.StatusCreated)

			for _, bad := range []string{`{"metadata": {"name": "x"`, `[1,2]`, ``, `{"metadata":{"name":"x"}} trailing`,
				`{"metadata": {"name": 7}}`} {
				r := c.do("POST", k.coll, bad).must(t, http.StatusBadRequest)
				_ = r.message(t)
			}
			for _, name := range []string{"", "-x", "a/b", "x y", strings.Repeat("n", 129)} {
				c.do("POST", k.coll, res(name, k.spec)).must(t, http.StatusBadRequest)
			}
			for _, spec := range k.invalidSpecs {
				r := c.do("POST", k.coll, res("bad", spec))
				if r.code != http.StatusBadRequest {
					t.Errorf("invalid spec %v answered %d, want 400: %s", spec, r.code, r.body)
				}
			}
			c.do("POST", k.coll, `<xml/>`, "Content-Type", "application/xml").must(t, http.StatusUnsupportedMediaType)
			big := `{"metadata":{"name":"big","description":"` + strings.Repeat("x", 3<<20) + `"}}`
			c.do("POST", k.coll, big).must(t, http.StatusRequestEntityTooLarge)

			if k.orphanColl != "" {
				c.do("POST", k.orphanColl, res("o1", k.spec)).must(t, http.StatusNotFound)
				c.do("GET", k.orphanColl, nil).must(t, http.StatusNotFound)
			}
			c.do("GET", item("nope"), nil).must(t, http.StatusNotFound)
			c.do("DELETE", item("nope"), nil).must(t, http.StatusNotFound)

			if k.child != nil {
				k.child(c, item("a1"))
				r := c.do("DELETE", item("a1"), nil).must(t, http.StatusConflict)
				if m := r.message(t); !strings.Contains(m, "cannot be deleted") {
					t.Errorf("delete-with-children message %q", m)
				}
				k.unblock(c, item("a1"))
			}
			c.do("DELETE", item("a1"), nil).must(t, http.StatusNoContent)
			c.do("GET", item("a1"), nil).must(t, http.StatusNotFound)
		})
	}
}

func TestMalformedQueryString(t *testing.T) {
	c := newClient(t)
	tree(t, c)
	msg := c.do("GET", pCA+"/composite-profiles/cprof/profiles?app=%zz", nil).must(t, 400).message(t)
	if !strings.Contains(msg, "malformed query string") {
		t.Errorf("message %q", msg)
	}
}
