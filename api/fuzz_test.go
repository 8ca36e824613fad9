package api

import (
	"bytes"
	"context"
	"mime/multipart"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/labstack/echo/v4"

	"github.com/temco/temco/internal/adapters/codec"
	"github.com/temco/temco/internal/core/model"
	"github.com/temco/temco/internal/dev/testenv"
)

// The fuzz targets send hostile bodies through the real handlers and store (FerretDB).
// client.serve fails a run on any 5xx, and on a 4xx without a JSON message; run them
// longer with `make fuzz`.

// jsonRoutes are the routes taking a JSON body, under the tree of `tree`.
var jsonRoutes = []struct{ method, path string }{
	{"POST", "/projects"}, {"PUT", pP}, {"POST", "/cluster-providers"}, {"PUT", "/cluster-providers/cp1"},
	{"POST", "/cluster-providers/cp1/clusters/c1/labels"}, {"POST", "/cluster-providers/cp1/clusters/c1/kv-pairs"},
	{"POST", "/controllers"}, {"PUT", "/controllers/gac"}, {"POST", "/clm-controllers"}, {"POST", "/dtc-controllers"},
	{"POST", pP + "/composite-apps"}, {"PUT", pCA}, {"POST", pCA + "/apps/app1/dependency"},
	{"POST", pCA + "/composite-profiles"}, {"POST", pCA + "/deployment-intent-groups"}, {"PUT", pDIG},
	{"POST", pDIG + "/intents"}, {"POST", pDIG + "/generic-placement-intents"},
	{"POST", pDIG + "/generic-placement-intents/gpi1/app-intents"},
	{"POST", pP + "/logical-clouds"}, {"PUT", pP + "/logical-clouds/lc1"},
	{"POST", pP + "/logical-clouds/lc1/cluster-references"}, {"POST", pP + "/logical-clouds/lc1/user-permissions"},
	{"POST", pP + "/logical-clouds/lc1/cluster-quotas"}, {"POST", pP + "/logical-clouds/lc1/kv-pairs"},
}

func FuzzJSONRequests(f *testing.F) {
	c := newClient(f)
	tree(f, c)
	f.Add(uint8(0), []byte(`{"metadata":{"name":"p2"},"spec":{}}`))
	f.Add(uint8(14), []byte(`{"metadata":{"name":"d2"},"spec":{"compositeProfile":"cprof","version":"1","logicalCloud":"lc1",`+
		`"overrideValues":[{"app":"app1","values":{"a.b":"c"}}]}}`))
	f.Add(uint8(18), []byte(`{"metadata":{"name":"i2"},"spec":{"app":"app1","intent":{"allOf":[{"clusterProvider":"cp1","clusterLabel":"x"}],"anyOf":[]}}}`))
	f.Add(uint8(19), []byte(`{"metadata":{"name":"lc2"},"spec":{"level":"1","namespace":"ns","user":{"userName":"u","type":"certificate"}}}`))
	f.Add(uint8(23), []byte(`{"metadata":{"name":"q"},"spec":{"pods":"-1","limits.memory":"1Ei"}}`))
	f.Add(uint8(1), []byte(`{"metadata":{"name":"p1","userData1":"\u0000"},"spec":null} trailing`))
	f.Add(uint8(3), []byte(`{"metadata":{"name":"../../x"}}`))
	f.Add(uint8(5), []byte(`[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[`))
	f.Fuzz(func(t *testing.T, route uint8, body []byte) {
		r := jsonRoutes[int(route)%len(jsonRoutes)]
		undo(c.with(t), r.method, r.path, c.with(t).do(r.method, r.path, body))
		// Nothing here deletes: the deepest resource of the tree (hence its ancestors) stays.
		if _, err := c.store.Get(context.Background(), pDIG); err != nil {
			t.Fatalf("%s %s lost the DIG: %v", r.method, r.path, err)
		}
	})
}

// undo deletes what a fuzz input created: on FerretDB's SQLite backend every query but by
// _id scans the collection, so a growing collection would slow the fuzzer to a crawl.
func undo(c *client, method, coll string, r response) {
	if method != "POST" || r.code != 201 {
		return
	}
	var created struct {
		Metadata struct{ Name string }
		Spec     struct{ CompositeAppVersion string }
	}
	r.json(c.t, &created)
	path := coll + "/" + created.Metadata.Name
	if created.Spec.CompositeAppVersion != "" {
		path += "/" + created.Spec.CompositeAppVersion
	}
	c.do("DELETE", path, nil)
}

// multipartRoutes take metadata and a file: kubeconfigs, charts, profiles.
var multipartRoutes = []struct{ method, path string }{
	{"POST", "/cluster-providers/cp1/clusters"}, {"POST", pCA + "/apps"}, {"PUT", pCA + "/apps/app2"},
	{"POST", pCA + "/composite-profiles/cprof/profiles"}, {"PUT", pCA + "/composite-profiles/cprof/profiles/prof1"},
}

func FuzzMultipartRequests(f *testing.F) {
	c := newClient(f)
	tree(f, c)
	f.Add(uint8(0), false, []byte(`{"metadata":{"name":"c9"}}`), []byte(testKubeconfig))
	f.Add(uint8(1), false, []byte(`{"metadata":{"name":"app9"}}`), testChart)
	f.Add(uint8(3), false, []byte(`{"metadata":{"name":"prof9"},"spec":{"app":"app2"}}`), testenv.Profile("a: 1\n"))
	for name, a := range testenv.HostileArchives("web") {
		if name == "bomb" {
			continue // each run would unpack 32 MiB: TestHostile* covers it
		}
		f.Add(uint8(1), false, []byte(`{"metadata":{"name":"app8"}}`), a)
		f.Add(uint8(3), false, []byte(`{"metadata":{"name":"prof8"},"spec":{"app":"app2"}}`), a)
	}
	f.Add(uint8(0), true, []byte("--B\r\nContent-Disposition: form-data; name=\"metadata\"\r\n\r\n{}\r\n--B\r\nContent-Disposition: form-data; name=\"file\"; filename=\"f\"\r\n\r\n"), []byte("x\r\n--B--\r\n"))
	f.Fuzz(func(t *testing.T, route uint8, raw bool, metadata, file []byte) {
		r := multipartRoutes[int(route)%len(multipartRoutes)]
		var body bytes.Buffer
		contentType := "multipart/form-data; boundary=B"
		if raw { // the fuzzer writes the envelope itself
			body.Write(metadata)
			body.Write(file)
		} else {
			mw := multipart.NewWriter(&body)
			_ = mw.WriteField("metadata", string(metadata))
			fw, _ := mw.CreateFormFile("file", "file")
			_, _ = fw.Write(file)
			_ = mw.Close()
			contentType = mw.FormDataContentType()
		}
		req := httptest.NewRequest(r.method, "/v2"+r.path, &body)
		req.Header.Set("Content-Type", contentType)
		undo(c.with(t), r.method, r.path, c.with(t).serve(req))
	})
}

// FuzzChartArchive checks chart archives alone, much faster than through the handler.
func FuzzChartArchive(f *testing.F) {
	f.Add(testChart)
	for name, a := range testenv.HostileArchives("web") {
		if name == "bomb" {
			continue // each run would unpack 32 MiB: TestHostileChartsAreRefused covers it
		}
		f.Add(a)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		r := &request[model.AppSpec]{file: data}
		r.res.Metadata.Name = "web"
		if err := attachChart(context.Background(), nil, r); err != nil {
			if he, ok := err.(*echo.HTTPError); !ok || he.Code != 400 {
				t.Fatalf("a bad chart is answered %v, want a 400", err)
			}
			return
		}
		if !bytes.Equal(r.blob, data) {
			t.Fatal("an accepted chart is not stored as uploaded")
		}
	})
}

func TestHostileChartsAreRefused(t *testing.T) {
	want := map[string]string{"bomb": "unpacks to more than 32 MiB", "huge-header": "unpacks to more than 32 MiB",
		"traversal": `"../../etc/cron.d/x" leads outside the archive`, "symlink": `"web/values.yaml" is a symbolic link`,
		"device": `"web/values.yaml" is a device`, "flood": "more than 1000 entries"}
	for name, a := range testenv.HostileArchives("web") {
		r := &request[model.AppSpec]{file: a}
		r.res.Metadata.Name = "web"
		if err := attachChart(context.Background(), nil, r); err == nil || !strings.Contains(err.Error(), want[name]) {
			t.Errorf("%s chart: %v, want an error saying %q", name, err, want[name])
		}
	}
}

// FuzzCodecRequests sends hostile bodies to the codec endpoint the Temporal UI calls.
func FuzzCodecRequests(f *testing.F) {
	c := newClient(f, func(s *Server) { s.Codec = codec.Codec{Keys: s.Keys} })
	enc := func(body string) []byte {
		req := httptest.NewRequest("POST", "/codec/encode", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		return c.serve(req).must(f, 200).body
	}
	plain := `{"payloads":[{"metadata":{"encoding":"anNvbi9wbGFpbg=="},"data":"eyJrIjoidiJ9"}]}`
	f.Add(true, []byte(plain))
	f.Add(true, enc(plain))
	f.Add(false, enc(plain))
	f.Add(true, []byte(`{"payloads":[{"metadata":{"encoding":"YmluYXJ5L2VuY3J5cHRlZA=="},"data":"AQJrMQ=="}]}`))
	f.Fuzz(func(t *testing.T, decode bool, body []byte) {
		path := "/codec/encode"
		if decode {
			path = "/codec/decode"
		}
		req := httptest.NewRequest("POST", path, bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		c.with(t).serve(req)
	})
}

// FuzzCrossSiteHeaders sends a create with hostile Host, Origin, Sec-Fetch-Site,
// Content-Type and X-Temco-Client values: no 5xx, a refusal with a JSON message, and a
// refused request stores nothing.
func FuzzCrossSiteHeaders(f *testing.F) {
	c := newClient(f, func(s *Server) {
		s.Hosts, s.AllowedOrigins = []string{testHost, "temco.example.com"}, []string{"https://ui.example.com"}
	})
	f.Add("127.0.0.1:9015", "", "", "application/json", "")
	f.Add("temco.example.com", "https://ui.example.com", "cross-site", "application/json", "")
	f.Add("evil.test:9015", "http://evil.test:9015", "same-origin", "application/json", "")
	f.Add("[::1]:9015", "http://[::1]:9015", "", "application/merge-patch+json", "")
	f.Add("localhost", "null", "cross-site", "text/plain", "x")
	f.Add("127.0.0.1", "http://127.0.0.1:8080", "same-site", "multipart/form-data; boundary=B", "")
	f.Add("[", "http://[::1", "\x00", "application/json; charset=\xff", "\xff")
	f.Add(strings.Repeat("a", 300), "https://"+strings.Repeat("b", 300), "none", "", "dashboard")
	f.Fuzz(func(t *testing.T, host, origin, site, contentType, client string) {
		c := c.with(t)
		req := httptest.NewRequest("POST", "/v2/projects", strings.NewReader(`{"metadata":{"name":"fz"}}`))
		req.Host = host
		for k, v := range map[string]string{"Origin": origin, "Sec-Fetch-Site": site, "Content-Type": contentType, ClientHeader: client} {
			if v != "" {
				req.Header.Set(k, v)
			}
		}
		r := c.serve(req)
		if r.code == 201 {
			c.do("DELETE", "/projects/fz", nil).must(t, 204)
			return
		}
		if r.code >= 400 {
			r.message(t)
		}
		c.do("GET", "/projects/fz", nil).must(t, 404)
	})
}
