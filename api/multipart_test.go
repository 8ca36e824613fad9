package api

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"maps"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/temco/temco/internal/dev/testenv"
)

func TestClusterKubeconfigIsValidatedSealedAndNeverReturned(t *testing.T) {
	c := newClient(t)
	c.do("POST", "/cluster-providers", res("cp1", nil)).must(t, 201)
	coll := "/cluster-providers/cp1/clusters"

	r := c.multipart("POST", coll, res("c1", nil), []byte(testKubeconfig)).must(t, 201)
	if bytes.Contains(r.body, []byte("client-key-data")) || bytes.Contains(r.body, []byte("dGVzdC1rZXktU0VDUkVU")) {
		t.Fatalf("create response leaks the kubeconfig: %s", r.body)
	}
	for _, path := range []string{coll, coll + "/c1", coll + "?withLabels=true"} {
		r := c.do("GET", path, nil, "Accept", "application/octet-stream").must(t, 200)
		if bytes.Contains(r.body, []byte("dGVzdC1rZXktU0VDUkVU")) || bytes.Contains(r.body, []byte("apiVersion")) {
			t.Fatalf("GET %s leaks the kubeconfig: %s", path, r.body)
		}
	}
	d, err := c.store.Get(context.Background(), coll+"/c1")
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(d.Secret, []byte("dGVzdC1rZXktU0VDUkVU")) || len(d.Secret) == 0 {
		t.Fatal("the kubeconfig is not encrypted at rest")
	}
	plain, err := c.keys.Open(d.Secret, []byte(d.ID))
	if err != nil || string(plain) != testKubeconfig {
		t.Fatalf("sealed kubeconfig does not open to the upload: %v", err)
	}

	c.multipart("POST", coll, res("c1", nil), []byte(testKubeconfig)).must(t, http.StatusConflict)
	c.multipart("POST", "/cluster-providers/nope/clusters", res("c2", nil), []byte(testKubeconfig)).must(t, http.StatusNotFound)
	for name, kc := range map[string]string{
		"empty":       "",
		"not yaml":    "{{{{",
		"no server":   strings.Replace(testKubeconfig, `server: "https://127.0.0.1:6443", `, "", 1),
		"no context":  strings.Replace(testKubeconfig, "current-context: c1\n", "current-context: other\n", 1),
		"exec plugin": strings.Replace(testKubeconfig, `{client-certificate-data: "dGVzdC1jZXJ0", client-key-data: "dGVzdC1rZXktU0VDUkVU"}`, `{exec: {command: /bin/sh, apiVersion: client.authentication.k8s.io/v1}}`, 1),
		"key file":    strings.Replace(testKubeconfig, `client-key-data: "dGVzdC1rZXktU0VDUkVU"`, `client-key: /etc/shadow`, 1),
	} {
		r := c.multipart("POST", coll, res("bad", nil), []byte(kc)).must(t, http.StatusBadRequest)
		if m := r.message(t); !strings.Contains(m, "kubeconfig") || strings.Contains(m, "dGVzdC1") {
			t.Errorf("%s: message %q", name, m)
		}
	}
	c.multipart("POST", coll, res("nofile", nil), nil).must(t, http.StatusBadRequest)
	c.do("POST", coll, res("json", nil)).must(t, http.StatusUnsupportedMediaType)
	// A gitOps cluster needs no kubeconfig.
	gitops := res("g1", map[string]any{"gitOps": map[string]string{"gitOpsType": "fluxcd", "gitOpsReferenceObject": "r", "gitOpsResourceObject": "o"}})
	c.multipart("POST", coll, gitops, nil).must(t, 201)
	// Clusters cannot be replaced (EMCO has no PUT).
	c.do("PUT", coll+"/c1", res("c1", nil)).must(t, http.StatusMethodNotAllowed)
}

func TestMalformedMultipartIs400(t *testing.T) {
	c := newClient(t)
	c.do("POST", "/cluster-providers", res("cp1", nil)).must(t, 201)
	for name, body := range map[string]string{
		"no closing boundary": "--XX\r\nContent-Disposition: form-data; name=\"metadata\"\r\n\r\n{}",
		"garbage":             "not multipart at all",
	} {
		req := httptest.NewRequest("POST", "/v2/cluster-providers/cp1/clusters", strings.NewReader(body))
		req.Header.Set("Content-Type", "multipart/form-data; boundary=XX")
		if r := c.serve(req); r.code != http.StatusBadRequest {
			t.Errorf("%s: status %d: %s", name, r.code, r.body)
		}
	}
	req := httptest.NewRequest("POST", "/v2/cluster-providers/cp1/clusters", strings.NewReader("x"))
	req.Header.Set("Content-Type", "multipart/form-data")
	if r := c.serve(req); r.code != http.StatusBadRequest {
		t.Errorf("missing boundary: status %d", r.code)
	}
	c.multipart("POST", "/cluster-providers/cp1/clusters", "not an object", []byte(testKubeconfig)).must(t, http.StatusBadRequest)
}

func TestClusterLabels(t *testing.T) {
	c := newClient(t)
	c.do("POST", "/cluster-providers", res("cp1", nil)).must(t, 201)
	coll := "/cluster-providers/cp1/clusters"
	for _, n := range []string{"c1", "c2", "c3"} {
		c.multipart("POST", coll, res(n, nil), []byte(testKubeconfig)).must(t, 201)
	}
	c.do("POST", coll+"/c1/labels", map[string]string{"clusterLabel": "edge"}).must(t, 201)
	c.do("POST", coll+"/c3/labels", map[string]string{"clusterLabel": "edge"}).must(t, 201)
	c.do("POST", coll+"/c3/labels", map[string]string{"clusterLabel": "gpu"}).must(t, 201)
	c.do("POST", coll+"/c3/labels", map[string]string{"clusterLabel": "gpu"}).must(t, http.StatusConflict)
	c.do("POST", coll+"/nope/labels", map[string]string{"clusterLabel": "gpu"}).must(t, http.StatusNotFound)
	c.do("POST", coll+"/c1/labels", map[string]string{"clusterLabel": "a b"}).must(t, http.StatusBadRequest)
	c.do("POST", coll+"/c1/labels", `{"clusterLabel": `).must(t, http.StatusBadRequest)

	var names []string
	c.do("GET", coll+"?label=edge", nil).must(t, 200).json(t, &names)
	if strings.Join(names, ",") != "c1,c3" {
		t.Errorf("?label=edge = %v, want [c1 c3]", names)
	}
	var with []struct {
		Metadata struct{ Name string }           `json:"metadata"`
		Labels   []struct{ ClusterLabel string } `json:"labels"`
	}
	c.do("GET", coll+"?withLabels=true", nil).must(t, 200).json(t, &with)
	if len(with) != 3 || len(with[2].Labels) != 2 || len(with[1].Labels) != 0 {
		t.Errorf("?withLabels=true = %+v", with)
	}
	var labels []map[string]string
	c.do("GET", coll+"/c3/labels", nil).must(t, 200).json(t, &labels)
	if len(labels) != 2 || labels[0]["clusterLabel"] != "edge" {
		t.Errorf("labels of c3 = %v", labels)
	}
	c.do("GET", coll+"/c3/labels/gpu", nil).must(t, 200)
	c.do("DELETE", coll+"/c3", nil).must(t, http.StatusConflict)
	c.do("DELETE", coll+"/c3/labels/gpu", nil).must(t, 204)
	c.do("DELETE", coll+"/c3/labels/edge", nil).must(t, 204)
	c.do("GET", coll+"/c3/labels/gpu", nil).must(t, http.StatusNotFound)
	c.do("DELETE", coll+"/c3", nil).must(t, 204)
}

func TestAppsCarryHelmCharts(t *testing.T) {
	c := newClient(t)
	tree(t, c)
	coll := pCA + "/apps"
	c.multipart("POST", coll, res("app3", nil), testChart).must(t, 201)
	r := c.do("GET", coll+"/app3", nil, "Accept", "application/octet-stream").must(t, 200)
	if !bytes.Equal(r.body, testChart) {
		t.Fatal("the chart downloaded differs from the upload")
	}
	var md map[string]any
	c.do("GET", coll+"/app3", nil).must(t, 200).json(t, &md)
	if md["metadata"].(map[string]any)["name"] != "app3" {
		t.Errorf("GET app = %v", md)
	}
	for name, file := range map[string][]byte{
		"not gzip":      []byte("hello"),
		"no Chart.yaml": testenv.TarGz(map[string]string{"x/values.yaml": "a: 1"}),
		"bad Chart":     testenv.TarGz(map[string]string{"x/Chart.yaml": "name: [", "x/values.yaml": ""}),
	} {
		r := c.multipart("POST", coll, res("bad", nil), file).must(t, http.StatusBadRequest)
		if m := r.message(t); !strings.Contains(m, "chart") {
			t.Errorf("%s: message %q", name, m)
		}
	}
	c.multipart("POST", coll, res("nofile", nil), nil).must(t, http.StatusBadRequest)
	// A replace without a file keeps the chart.
	c.multipart("PUT", coll+"/app3", map[string]any{"metadata": map[string]any{"name": "app3", "description": "new"}}, nil).must(t, 200)
	r = c.do("GET", coll+"/app3", nil, "Accept", "application/octet-stream").must(t, 200)
	if !bytes.Equal(r.body, testChart) {
		t.Fatal("PUT without a file lost the chart")
	}
	// An app used by a placement intent cannot be deleted.
	c.do("POST", pGPI+"/app-intents", res("ai", appIntentSpec("app3"))).must(t, 201)
	r = c.do("DELETE", coll+"/app3", nil).must(t, http.StatusConflict)
	if m := r.message(t); !strings.Contains(m, `app placement intent "ai"`) {
		t.Errorf("message %q does not name the referrer", m)
	}
	c.do("DELETE", pGPI+"/app-intents/ai", nil).must(t, 204)
	c.do("DELETE", coll+"/app3", nil).must(t, 204)
}

func TestAppProfiles(t *testing.T) {
	c := newClient(t)
	tree(t, c)
	coll := pCA + "/composite-profiles/cprof/profiles"
	for name, file := range map[string][]byte{
		"not gzip":         []byte("hello"),
		"no values":        testenv.TarGz(map[string]string{"other.yaml": "a: 1"}),
		"values not map":   testenv.TarGz(map[string]string{"override_values.yaml": "- 1\n- 2"}),
		"path traversal":   testenv.TarGz(map[string]string{"../override_values.yaml": "a: 1"}),
		"absolute path":    testenv.TarGz(map[string]string{"/override_values.yaml": "a: 1"}),
		"missing resource": testenv.TarGz(map[string]string{"manifest.yaml": "type:\n  configresource:\n  - {filepath: x.yaml, chartpath: c/templates/x.yaml}\n", "override_values.yaml": "a: 1"}),
	} {
		r := c.multipart("POST", coll, res("bad", map[string]any{"app": "app2"}), file)
		if r.code != http.StatusBadRequest {
			t.Errorf("%s: status %d: %s", name, r.code, r.body)
		}
	}
	c.multipart("POST", coll, res("prof2", map[string]any{"app": "app2"}), testenv.Profile("x: 1\n")).must(t, 201)
	var list []map[string]any
	c.do("GET", coll+"?app=app2", nil).must(t, 200).json(t, &list)
	if len(list) != 1 || list[0]["metadata"].(map[string]any)["name"] != "prof2" {
		t.Errorf("?app=app2 = %v", list)
	}
	r := c.multipart("POST", coll, res("prof3", map[string]any{"app": "app2"}), testenv.Profile("x: 1\n")).must(t, http.StatusConflict)
	if m := r.message(t); !strings.Contains(m, "prof2") {
		t.Errorf("message %q", m)
	}
	// As in EMCO, a profile may name its app before the app exists.
	c.multipart("POST", coll, res("prof4", map[string]any{"app": "later"}), testenv.Profile("x: 1\n")).must(t, 201)
	r = c.do("GET", coll+"/prof2", nil, "Accept", "application/octet-stream").must(t, 200)
	if !bytes.Equal(r.body, testenv.Profile("x: 1\n")) {
		t.Error("profile download differs")
	}
}

// References may name resources created later, as EMCO allows; once they exist, they
// cannot be deleted while referenced.
func TestReferencesMayComeFirstAndBlockDeletes(t *testing.T) {
	c := newClient(t)
	tree(t, c)
	// DIG intents before their placement intent and controller.
	c.do("POST", pDIG+"/intents", res("i1", map[string]any{"intent": map[string]string{"genericPlacementIntent": "later", "ctl": "x"}})).must(t, 201)
	c.do("POST", "/controllers", res("ctl", map[string]any{"type": "action", "priority": 5})).must(t, 201)
	r := c.do("DELETE", "/controllers/ctl", nil).must(t, http.StatusConflict)
	if m := r.message(t); !strings.Contains(m, "i1") {
		t.Errorf("message %q", m)
	}
	// A DIG before its composite profile and logical cloud; an app intent before its app.
	c.do("POST", pCA+"/deployment-intent-groups", res("d2", map[string]any{"compositeProfile": "later", "version": "1", "logicalCloud": "later"})).must(t, 201)
	c.do("POST", pGPI+"/app-intents", res("ai", appIntentSpec("later"))).must(t, 201)
	// A cluster in a logical cloud cannot be deregistered; a cloud used by a DIG cannot be deleted.
	c.do("POST", pP+"/logical-clouds/lc1/cluster-references", res("r1", map[string]any{"clusterProvider": "cp1", "cluster": "c1"})).must(t, 201)
	c.do("DELETE", pCL, nil).must(t, http.StatusConflict)
	c.do("DELETE", pP+"/logical-clouds/lc1/cluster-references/r1", nil).must(t, 204)
	c.do("DELETE", pP+"/logical-clouds/lc1", nil).must(t, http.StatusConflict)
	// The composite profile is in use by the DIG.
	c.do("DELETE", pCA+"/composite-profiles/cprof/profiles/prof1", nil).must(t, 204)
	r = c.do("DELETE", pCA+"/composite-profiles/cprof", nil).must(t, http.StatusConflict)
	if m := r.message(t); !strings.Contains(m, "deployment intent group") {
		t.Errorf("message %q", m)
	}
}

func TestPlacementIntentValidation(t *testing.T) {
	c := newClient(t)
	tree(t, c)
	m := func(kv ...string) map[string]any {
		out := map[string]any{}
		for i := 0; i+1 < len(kv); i += 2 {
			out[kv[i]] = kv[i+1]
		}
		return out
	}
	cases := map[string]map[string]any{
		"empty intent":         {},
		"cluster and label":    {"allOf": []any{m("clusterProvider", "cp1", "cluster", "c1", "clusterLabel", "edge")}},
		"neither":              {"allOf": []any{m("clusterProvider", "cp1")}},
		"no provider":          {"anyOf": []any{m("cluster", "c1")}},
		"bad label":            {"anyOf": []any{m("clusterProvider", "cp1", "clusterLabel", "a b")}},
		"empty allOf entry":    {"allOf": []any{m()}},
		"match and anyOf":      {"allOf": []any{map[string]any{"clusterProvider": "cp1", "cluster": "c1", "anyOf": []any{m("clusterProvider", "cp1", "cluster", "c2")}}}},
		"bad nested anyOf":     {"allOf": []any{map[string]any{"anyOf": []any{m("clusterProvider", "cp1")}}}},
		"anyOf both fields":    {"anyOf": []any{m("clusterProvider", "cp1", "cluster", "c1", "clusterLabel", "x")}},
		"allOf is not a list":  {"allOf": "c1"},
		"cluster is not a str": {"allOf": []any{map[string]any{"clusterProvider": "cp1", "cluster": 1}}},
	}
	for name, intent := range cases {
		r := c.do("POST", pGPI+"/app-intents", res("ai", map[string]any{"app": "app1", "intent": intent}))
		if r.code != http.StatusBadRequest {
			t.Errorf("%s: status %d: %s", name, r.code, r.body)
		}
	}
	good := map[string]any{"allOf": []any{m("clusterProvider", "cp1", "clusterLabel", "edge"),
		map[string]any{"anyOf": []any{m("clusterProvider", "cp1", "cluster", "c1"), m("clusterProvider", "cp1", "cluster", "c2")}}},
		"anyOf": []any{m("clusterProvider", "cp1", "cluster", "c1")}}
	c.do("POST", pGPI+"/app-intents", res("ai", map[string]any{"app": "app1", "intent": good})).must(t, 201)
}

func TestMultipartBodyLimit(t *testing.T) {
	c := newClient(t)
	c.do("POST", "/cluster-providers", res("cp1", nil)).must(t, 201)
	huge := bytes.Repeat([]byte("a"), 11<<20)
	r := c.multipart("POST", "/cluster-providers/cp1/clusters", res("c1", nil), huge).must(t, http.StatusRequestEntityTooLarge)
	if m := r.message(t); !strings.Contains(m, "10 MiB") {
		t.Errorf("message %q", m)
	}
	// Without Content-Length the limit applies while reading.
	req := httptest.NewRequest("POST", "/v2/projects", strings.NewReader(`{"metadata":{"name":"p","description":"`+strings.Repeat("x", 3<<20)+`"}}`))
	req.ContentLength = -1
	req.Header.Set("Content-Type", "application/json")
	if r := c.serve(req); r.code != http.StatusRequestEntityTooLarge {
		t.Errorf("streamed oversize body: status %d", r.code)
	}
}

func TestUnknownRoutesAnswerJSON(t *testing.T) {
	c := newClient(t)
	c.do("GET", "/nothing-here", nil).must(t, http.StatusNotFound).message(t)
	c.do("PATCH", "/projects", nil).must(t, http.StatusMethodNotAllowed).message(t)
	c.do("GET", "/projects/a%2Fb", nil).must(t, http.StatusBadRequest).message(t)
	if r := c.do("GET", "/projects", nil).must(t, 200); string(r.body) != "[]" {
		t.Errorf("empty list = %s, want []", r.body)
	}
	req := httptest.NewRequest("GET", "/healthz", nil)
	if r := c.serve(req); r.code != 200 {
		t.Errorf("healthz %d", r.code)
	}
}

func TestReadinessFollowsItsDependencies(t *testing.T) {
	var down error
	srv := &Server{Log: slog.New(slog.DiscardHandler), Ready: func(context.Context) error { return down }, Hosts: []string{testHost}}
	h := srv.Handler()
	probe := func(path string) int {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", path, nil))
		return rec.Code
	}
	if probe("/readyz") != 200 || probe("/healthz") != 200 {
		t.Error("not ready with every dependency up")
	}
	down = errors.New("temporal: connection refused")
	if probe("/readyz") != http.StatusServiceUnavailable || probe("/healthz") != 200 {
		t.Error("a dependency down must fail readiness only (liveness restarts would not help)")
	}
}

// Charts are accepted in every layout EMCO's examples pack them in, and then some, and
// stored as uploaded; a bad or hostile archive is answered 400 with the reason.
func TestChartArchiveLayouts(t *testing.T) {
	c := newClient(t)
	tree(t, c)
	coll := pCA + "/apps"
	chart := func(prefix string) map[string]string {
		return map[string]string{prefix + "Chart.yaml": "apiVersion: v2\nname: web\nversion: 0.1.0\n",
			prefix + "templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web\n"}
	}
	dotSlash := chart("./web/")
	dotSlash["./"], dotSlash["./web/"], dotSlash["./web/templates/"] = "", "", ""
	twoCharts := chart("a/")
	maps.Copy(twoCharts, chart("b/"))
	for _, tc := range []struct {
		name    string
		archive []byte
	}{
		{"tar -czf web.tgz -C helm web", testenv.TarOf(chart("web/"), true)},
		{"tar -czf web.tgz -C helm .", testenv.TarOf(dotSlash, true)},
		{"plain tar", testenv.TarOf(chart("web/"), false)},
		{"chart at the archive root", testenv.TarOf(chart(""), true)},
		{"chart at the root, ./ prefix", testenv.TarOf(chart("./"), false)},
		{"the only chart, in a folder named otherwise", testenv.TarOf(chart("nginx/"), true)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := c.with(t)
			c.multipart("POST", coll, res("web", nil), tc.archive).must(t, 201)
			if r := c.do("GET", coll+"/web", nil, "Accept", "application/octet-stream").must(t, 200); !bytes.Equal(r.body, tc.archive) {
				t.Error("the chart downloaded differs from the upload")
			}
			c.do("DELETE", coll+"/web", nil).must(t, 204)
		})
	}
	type refusal struct {
		name    string
		archive []byte
		want    string
	}
	rejected := []refusal{
		{"not an archive", []byte("apiVersion: v2\nname: web\n"), "invalid Helm chart archive: the file is neither a tar nor a gzip-compressed tar archive"},
		{"empty", testenv.TarOf(map[string]string{"./": ""}, true), "the archive is empty"},
		{"no Chart.yaml", testenv.TarOf(map[string]string{"x/values.yaml": "a: 1"}, true),
			"no Chart.yaml found at the archive root or in the top-level folders x (EMCO expects web/Chart.yaml)"},
		{"several charts", testenv.TarOf(twoCharts, true), "the archive holds several charts, in folders a, b"},
		{"invalid chart", testenv.TarOf(map[string]string{"web/Chart.yaml": "apiVersion: v2\nname: web\n"}, true),
			`cannot load the chart in folder "web": validation: chart.metadata.version is required`},
	}
	want := map[string]string{"bomb": "unpacks to more than 32 MiB", "huge-header": "unpacks to more than 32 MiB",
		"traversal": "leads outside the archive", "symlink": "is a symbolic link", "device": "is a device", "flood": "more than 1000 entries"}
	for name, a := range testenv.HostileArchives("web") {
		rejected = append(rejected, refusal{"hostile " + name, a, want[name]})
	}
	for _, tc := range rejected {
		t.Run(tc.name, func(t *testing.T) {
			r := c.with(t).multipart("POST", coll, res("web", nil), tc.archive).must(t, http.StatusBadRequest)
			if m := r.message(t); !strings.Contains(m, tc.want) {
				t.Errorf("message %q, want it to say %q", m, tc.want)
			}
		})
	}
}

// Profiles are accepted at the archive root or wrapped in one folder, with or without
// ./ and manifest.yaml, compressed or not, and stored as uploaded.
func TestProfileArchiveLayouts(t *testing.T) {
	c := newClient(t)
	tree(t, c)
	coll := pCA + "/composite-profiles/cprof/profiles"
	manifest := "version: v1\ntype:\n  values: values/v.yaml\n  configresource:\n  - {filepath: cm.yaml, chartpath: web/templates/cm.yaml}\n"
	for _, tc := range []struct {
		name    string
		archive []byte
	}{
		{"bare names", testenv.Profile("a: 1\n")},
		{"tar -czf p.tgz -C profile .", testenv.TarOf(map[string]string{"./": "", "./manifest.yaml": "type: {values: override_values.yaml}\n",
			"./override_values.yaml": "a: 1\n"}, true)},
		{"plain tar", testenv.TarOf(map[string]string{"override_values.yaml": "a: 1\n"}, false)},
		{"wrapped in a folder", testenv.TarOf(map[string]string{"profile/": "", "profile/override_values.yaml": "a: 1\n"}, true)},
		{"values and resources named by the manifest", testenv.TarOf(map[string]string{"manifest.yaml": manifest,
			"values/v.yaml": "a: 1\n", "cm.yaml": "kind: ConfigMap\n"}, true)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := c.with(t)
			c.multipart("POST", coll, res("p", map[string]any{"app": "app2"}), tc.archive).must(t, 201)
			if r := c.do("GET", coll+"/p", nil, "Accept", "application/octet-stream").must(t, 200); !bytes.Equal(r.body, tc.archive) {
				t.Error("the profile downloaded differs from the upload")
			}
			c.do("DELETE", coll+"/p", nil).must(t, 204)
		})
	}
	for _, tc := range []struct {
		name    string
		archive []byte
		want    string
	}{
		{"not an archive", []byte("a: 1\n"), "invalid app profile archive: the file is neither a tar nor a gzip-compressed tar archive"},
		{"no values file", testenv.TarOf(map[string]string{"./other.yaml": "a: 1"}, true), "the profile has no override_values.yaml"},
		{"manifest naming a missing values file", testenv.TarOf(map[string]string{"manifest.yaml": manifest, "cm.yaml": ""}, true),
			`manifest.yaml names the values file "values/v.yaml", which the profile does not contain`},
		{"manifest naming a missing resource", testenv.TarOf(map[string]string{"manifest.yaml": manifest, "values/v.yaml": "a: 1\n"}, true),
			`manifest.yaml names "cm.yaml", which the profile does not contain`},
		{"a symbolic link", testenv.HostileArchives("p")["symlink"], `archive entry "p/values.yaml" is a symbolic link`},
		{"path traversal", testenv.TarOf(map[string]string{"../override_values.yaml": "a: 1"}, true), "leads outside the archive"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := c.with(t).multipart("POST", coll, res("p", map[string]any{"app": "app2"}), tc.archive).must(t, http.StatusBadRequest)
			if m := r.message(t); !strings.Contains(m, tc.want) {
				t.Errorf("message %q, want it to say %q", m, tc.want)
			}
		})
	}
}
