package api

import (
	"bytes"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/temco/temco/internal/core/model"
	"github.com/temco/temco/internal/core/store"
)

// A JSON body is accepted as JSON only: what a browser form or `curl -d` sends (and a page
// of another origin may send without a CORS preflight) is refused before the handler.
func TestJSONRoutesTakeJSONContentTypesOnly(t *testing.T) {
	c := newClient(t)
	for i, tc := range []struct {
		contentType string // "-": none
		code        int
	}{
		{"application/json", 201},
		{"application/json; charset=utf-8", 201},
		{"Application/JSON", 201},
		{"application/merge-patch+json", 201},
		{"-", 415}, // a body without a type is not taken for JSON: text/plain's, to a browser
		{"text/plain", 415},
		{"text/plain; charset=utf-8", 415},
		{"application/x-www-form-urlencoded", 415},
		{"multipart/form-data; boundary=B", 415},
		{"application/xml", 415},
		{"not a media type", 415},
	} {
		t.Run(tc.contentType, func(t *testing.T) {
			name := fmt.Sprintf("p%d", i)
			body := `{"metadata":{"name":"` + name + `"}}`
			req := httptest.NewRequest("POST", "/v2/projects", strings.NewReader(body))
			if tc.contentType != "-" {
				req.Header.Set("Content-Type", tc.contentType)
			}
			r := c.with(t).serve(req).must(t, tc.code)
			if tc.code != 415 {
				return
			}
			if m := r.message(t); !strings.Contains(m, "Content-Type: application/json") {
				t.Errorf("message %q does not name the content type expected", m)
			}
			c.with(t).do("GET", "/projects/"+name, nil).must(t, 404)
		})
	}
	// The same on a replace.
	c.do("PUT", "/projects/p0", `{"metadata":{"name":"p0"}}`, "Content-Type", "text/plain").must(t, 415)
}

// A request that changes something without a JSON body (an action, a DELETE) carries a
// JSON Content-Type or X-Temco-Client, which no cross-site form or no-cors fetch can send;
// reads need neither.
func TestBodilessChangesNeedTheClientHeaderOrJSON(t *testing.T) {
	c := newClient(t)
	c.do("POST", "/projects", res("p1", nil)).must(t, 201)
	for _, tc := range []struct {
		method, contentType, client string // "": not sent
		code                        int
	}{
		{"GET", "", "", 200},
		{"GET", "application/x-www-form-urlencoded", "", 200},
		{"POST", "", "", 415},
		{"POST", "text/plain", "", 415}, // an empty text/plain form
		{"POST", "application/x-www-form-urlencoded", "", 415},
		{"POST", "multipart/form-data; boundary=B", "", 415},
		{"POST", "application/json", "", 400}, // past the rule: the handler's "empty body"
		{"POST", "", "dashboard", 400},
		{"POST", "text/plain", "dashboard", 400},
		{"PUT", "", "", 415},
		{"PATCH", "", "", 415},
		{"DELETE", "", "", 415},
		{"DELETE", "text/plain", "", 415},
		{"DELETE", "application/json", "", 204},
		{"DELETE", "", "temco", 204},
	} {
		t.Run(tc.method+" "+tc.contentType+" "+tc.client, func(t *testing.T) {
			path := "/v2/projects/p1"
			if tc.method == "POST" {
				path = "/v2/projects"
			}
			req := httptest.NewRequest(tc.method, path, nil)
			if tc.contentType != "" {
				req.Header.Set("Content-Type", tc.contentType)
			}
			if tc.client != "" {
				req.Header.Set(ClientHeader, tc.client)
			}
			r := c.with(t).serve(req).must(t, tc.code)
			if tc.code == 415 {
				if m := r.message(t); !strings.Contains(m, "Content-Type: application/json or X-Temco-Client") {
					t.Errorf("message %q does not say what to send", m)
				}
			}
			if tc.code == 204 {
				c.with(t).do("POST", "/projects", res("p1", nil)).must(t, 201)
			}
		})
	}
	// A DELETE refused deleted nothing.
	c.do("GET", "/projects/p1", nil).must(t, 200)
}

// Uploads take multipart/form-data only, and say so.
func TestMultipartRoutesTakeMultipartOnly(t *testing.T) {
	c := newClient(t)
	c.do("POST", "/cluster-providers", res("cp1", nil)).must(t, 201)
	for _, ct := range []string{"text/plain", "application/x-www-form-urlencoded", "application/json"} {
		msg := c.do("POST", "/cluster-providers/cp1/clusters", res("c1", nil), "Content-Type", ct).must(t, 415).message(t)
		if !strings.Contains(msg, "multipart/form-data") {
			t.Errorf("%s: message %q does not name multipart/form-data", ct, msg)
		}
	}
	c.multipart("POST", "/cluster-providers/cp1/clusters", res("c1", nil), []byte(testKubeconfig)).must(t, 201)
}

// Free text is bounded as EMCO's schemas bound it; a refusal names the field and the
// limit, and stores nothing, on a JSON create, a replace and an upload's metadata.
func TestMetadataAndKVLengthLimits(t *testing.T) {
	c := newClient(t)
	tree(t, c)
	long := func(n int) string { return strings.Repeat("x", n) }
	withMeta := func(name string, md map[string]any, spec any) map[string]any {
		r := res(name, spec)
		for k, v := range md {
			r["metadata"].(map[string]any)[k] = v
		}
		return r
	}
	for _, tc := range []struct {
		name, method, path string
		body               map[string]any
		want               string
		multipart          bool
	}{
		{"description", "POST", "/projects", withMeta("p2", map[string]any{"description": long(1025)}, nil), "metadata.description is 1025 characters long: the limit is 1024", false},
		{"userData1", "POST", pCA + "/composite-profiles", withMeta("cp2", map[string]any{"userData1": long(513)}, nil), "metadata.userData1 is 513 characters long: the limit is 512", false},
		{"userData2 on a replace", "PUT", "/projects/p1", withMeta("p1", map[string]any{"userData2": long(513)}, nil), "metadata.userData2 is 513 characters long: the limit is 512", false},
		{"an upload's metadata", "POST", pCA + "/apps", withMeta("app3", map[string]any{"description": long(1025)}, nil), "metadata.description", true},
		{"cluster kv value", "POST", pCL + "/kv-pairs", res("kv1", map[string]any{"kv": []any{map[string]any{"gateway": long(129)}}}), "spec.kv[0].gateway is 129 characters long: the limit is 128", false},
		{"cluster kv key", "POST", pCL + "/kv-pairs", res("kv1", map[string]any{"kv": []any{map[string]any{long(129): "v"}}}), "spec.kv[0] key", false},
		{"logical cloud kv value", "POST", pP + "/logical-clouds/lc1/kv-pairs", res("kv1", map[string]any{"kv": []any{map[string]any{"k": long(129)}}}), "the limit is 128", false},
		{"sync object value", "POST", "/cluster-providers/cp1/cluster-sync-objects", res("so1", map[string]any{"kv": []any{map[string]any{"gitToken": long(129)}}}), "spec.kv[0].gitToken", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := c.with(t)
			var r response
			if tc.multipart {
				r = c.multipart(tc.method, tc.path, tc.body, testChart)
			} else {
				r = c.do(tc.method, tc.path, tc.body)
			}
			if m := r.must(t, 400).message(t); !strings.Contains(m, tc.want) {
				t.Errorf("message %q, want one saying %q", m, tc.want)
			}
			name := tc.body["metadata"].(map[string]any)["name"].(string)
			item := tc.path + "/" + name
			if tc.method == "PUT" {
				item = tc.path
				var got struct{ Metadata map[string]string }
				c.do("GET", item, nil).must(t, 200).json(t, &got)
				if got.Metadata["userData2"] != "" {
					t.Errorf("the refused replace was stored: %v", got.Metadata)
				}
				return
			}
			c.do("GET", item, nil).must(t, 404)
		})
	}
	// At the limits, everything is accepted.
	c.do("POST", "/projects", withMeta("p3", map[string]any{"description": long(1024), "userData1": long(512), "userData2": long(512)}, nil)).must(t, 201)
	c.do("POST", pCL+"/kv-pairs", res("kv2", map[string]any{"kv": []any{map[string]any{long(128): long(128)}}})).must(t, 201)
}

// Uploads and waits for a workflow's end (an action documenting EMCO's waitForResult,
// as workflowmgr's status) may outlast the server's ReadTimeout and WriteTimeout; other
// requests may not.
func TestLongRequestsOutliveTheServerTimeouts(t *testing.T) {
	const timeout, slow = 200 * time.Millisecond, 700 * time.Millisecond
	waits := OwnKind[model.Empty]{KindDef: KindDef[model.Empty]{Name: "wait", Path: "/waits", Param: "wait"},
		Actions: []Action{{Method: http.MethodGet, Path: "/status", Query: []string{"waitForResult"},
			Handle: func(c echo.Context, _ *store.Doc) error {
				time.Sleep(slow)
				return c.String(http.StatusOK, "done")
			}}}}
	c := newClient(t, func(s *Server) { s.Kinds = []ResourceKind{waits.Mount()} })
	c.do("POST", "/waits", res("w", nil)).must(t, 201)
	c.do("POST", "/cluster-providers", res("cp1", nil)).must(t, 201)
	srv := httptest.NewUnstartedServer(c.h)
	srv.Config.ReadTimeout, srv.Config.WriteTimeout = timeout, timeout
	srv.Start()
	defer srv.Close()

	// slowly sends the first part of body, waits, then the rest.
	slowly := func(body []byte) io.Reader {
		pr, pw := io.Pipe()
		go func() {
			_, _ = pw.Write(body[:len(body)/2])
			time.Sleep(slow)
			_, _ = pw.Write(body[len(body)/2:])
			_ = pw.Close()
		}()
		return pr
	}
	upload := func(name string) (io.Reader, string) {
		var buf bytes.Buffer
		mw := multipart.NewWriter(&buf)
		_ = mw.WriteField("metadata", `{"metadata":{"name":"`+name+`"}}`)
		fw, _ := mw.CreateFormFile("file", "kubeconfig")
		_, _ = fw.Write([]byte(testKubeconfig))
		_ = mw.Close()
		return slowly(buf.Bytes()), mw.FormDataContentType()
	}
	// send answers the status, or 0 when the server gave up on the request.
	send := func(method, path, contentType string, body io.Reader) int {
		req, _ := http.NewRequest(method, srv.URL+"/v2"+path, body)
		if contentType != "" {
			req.Header.Set("Content-Type", contentType)
		}
		resp, err := srv.Client().Do(req)
		if err != nil {
			return 0
		}
		defer resp.Body.Close()
		if _, err := io.ReadAll(resp.Body); err != nil {
			return 0
		}
		return resp.StatusCode
	}
	for _, tc := range []struct {
		name string
		want int
		code func() int
	}{
		{"wait for the result", 200, func() int { return send("GET", "/waits/w/status?waitForResult=true", "", nil) }},
		{"status without waiting", 0, func() int { return send("GET", "/waits/w/status", "", nil) }},
		{"slow upload", 201, func() int {
			body, ct := upload("c1")
			return send("POST", "/cluster-providers/cp1/clusters", ct, body)
		}},
		{"slow JSON body", 0, func() int {
			return send("POST", "/projects", "application/json", slowly([]byte(`{"metadata":{"name":"p1"}}`)))
		}},
	} {
		// A request the server gives up on gets no answer, or a refusal when the handler
		// saw its body cut short first (which comes first depends on the machine's load).
		if got := tc.code(); got != tc.want && (tc.want != 0 || got < 400) {
			t.Errorf("%s: answered %d, want %d (0: no answer)", tc.name, got, tc.want)
		}
	}
}
