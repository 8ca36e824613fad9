package api

import (
	"bytes"
	"fmt"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/temco/temco/internal/adapters/codec"
)

// crossSiteRequest is one kind of request a page or a client may send, by method and
// content type, and what the api answers it when the rules let it through.
type crossSiteRequest struct {
	name     string
	typeOK   bool // it carries what bodyRules wants of a change
	passed   int  // the handler's answer
	creates  bool // it creates project <case name>, or cluster <case name> (upload)
	build    func(name string) *http.Request
	isUpload bool
}

func jsonProject(name string) string { return `{"metadata":{"name":"` + name + `"}}` }

var crossSiteRequests = []crossSiteRequest{
	{name: "GET", typeOK: true, passed: 200, build: func(string) *http.Request {
		return httptest.NewRequest("GET", "/v2/projects", nil)
	}},
	{name: "POST JSON", typeOK: true, passed: 201, creates: true, build: func(n string) *http.Request {
		r := httptest.NewRequest("POST", "/v2/projects", strings.NewReader(jsonProject(n)))
		r.Header.Set("Content-Type", "application/json")
		return r
	}},
	{name: "POST bodiless with X-Temco-Client", typeOK: true, passed: 400, build: func(string) *http.Request {
		r := httptest.NewRequest("POST", "/v2/projects", nil) // past the rules: the handler's "empty body"
		r.Header.Set(ClientHeader, "dashboard")
		return r
	}},
	{name: "POST bodiless (a no-cors fetch)", passed: 400, build: func(string) *http.Request {
		return httptest.NewRequest("POST", "/v2/projects", nil)
	}},
	{name: "POST urlencoded form", creates: true, build: func(n string) *http.Request {
		r := httptest.NewRequest("POST", "/v2/projects", strings.NewReader("metadata="+jsonProject(n)))
		r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		return r
	}},
	{name: "POST text/plain form of JSON", creates: true, build: func(n string) *http.Request {
		r := httptest.NewRequest("POST", "/v2/projects", strings.NewReader(jsonProject(n)))
		r.Header.Set("Content-Type", "text/plain")
		return r
	}},
	{name: "POST multipart upload", typeOK: true, passed: 201, creates: true, isUpload: true, build: func(n string) *http.Request {
		var buf bytes.Buffer
		mw := multipart.NewWriter(&buf)
		_ = mw.WriteField("metadata", jsonProject(n))
		fw, _ := mw.CreateFormFile("file", "kubeconfig")
		_, _ = fw.Write([]byte(testKubeconfig))
		_ = mw.Close()
		r := httptest.NewRequest("POST", "/v2/cluster-providers/cp1/clusters", &buf)
		r.Header.Set("Content-Type", mw.FormDataContentType())
		return r
	}},
	{name: "DELETE", passed: 404, build: func(string) *http.Request {
		return httptest.NewRequest("DELETE", "/v2/projects/gone", nil)
	}},
	{name: "DELETE with X-Temco-Client", typeOK: true, passed: 404, build: func(string) *http.Request {
		r := httptest.NewRequest("DELETE", "/v2/projects/gone", nil)
		r.Header.Set(ClientHeader, "temco")
		return r
	}},
}

// crossSiteSender is who sends a request, by the headers a browser adds (none: a client
// that is no browser); ok says whether the api takes its request of method to host.
type crossSiteSender struct {
	name    string
	headers func(host string) map[string]string
	ok      func(method string) bool
}

func always(string) bool { return true }
func never(string) bool  { return false }

var crossSiteSenders = []crossSiteSender{
	{"no browser (curl, temco)", func(string) map[string]string { return nil }, always},
	{"the api's own page", func(h string) map[string]string {
		return map[string]string{"Sec-Fetch-Site": "same-origin", "Origin": "http://" + h}
	}, always},
	{"the api's own page, a browser without Sec-Fetch-*", func(h string) map[string]string { return map[string]string{"Origin": "http://" + h} }, always},
	{"an address typed by the user", func(string) map[string]string { return map[string]string{"Sec-Fetch-Site": "none"} }, always},
	{"an allowed origin", func(string) map[string]string {
		return map[string]string{"Sec-Fetch-Site": "cross-site", "Origin": "https://UI.example.com:443"}
	}, always},
	{"another port of the same host", func(string) map[string]string {
		return map[string]string{"Sec-Fetch-Site": "same-site", "Origin": "http://127.0.0.1:8080"}
	}, never},
	{"the allowed origin's host over http", func(string) map[string]string {
		return map[string]string{"Sec-Fetch-Site": "cross-site", "Origin": "http://ui.example.com"}
	}, never},
	{"a sandboxed page (Origin null)", func(string) map[string]string {
		return map[string]string{"Sec-Fetch-Site": "cross-site", "Origin": "null"}
	}, never},
	{"the codec's origin, off /codec", func(string) map[string]string {
		return map[string]string{"Sec-Fetch-Site": "cross-site", "Origin": "http://temporal-ui.test"}
	}, never},
	{"another site's image or no-cors fetch", func(string) map[string]string {
		return map[string]string{"Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "no-cors", "Sec-Fetch-Dest": "image"}
	}, never},
	{"another site's frame", func(string) map[string]string {
		return map[string]string{"Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "navigate", "Sec-Fetch-Dest": "iframe"}
	}, never},
	{"a link followed from another site", func(string) map[string]string {
		return map[string]string{"Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "navigate", "Sec-Fetch-Dest": "document"}
	}, func(m string) bool { return m == "GET" }},
}

// The hosts requests are sent to, and whether the api serves them.
var crossSiteHosts = []struct {
	host   string
	served bool
}{
	{"127.0.0.1:9015", true},
	{"[::1]:9015", true},
	{"localhost:9015", true},
	{"Temco-API.temco.svc:9015", true},  // of Hosts
	{"temco.attacker.test:9015", false}, // a name rebound to the api's address
	{"127.0.0.1.nip.io:9015", false},
}

// Every request, from every sender, to every host: a Host the api does not serve is a
// 421, a page of another origin a 403, a change without a JSON type or X-Temco-Client a
// 415, each with a message saying what to send, and a refused request changes nothing;
// the rest reach their handler. With authentication off and on.
func TestCrossSiteRequestMatrix(t *testing.T) {
	configure := func(s *Server) {
		s.Hosts = []string{"temco-api.temco.svc", testHost}
		s.AllowedOrigins = []string{"https://ui.example.com"}
		s.Codec, s.CodecOrigins = codec.Codec{Keys: s.Keys}, []string{"http://temporal-ui.test"}
	}
	iss := newIssuer(t)
	for _, mode := range []struct {
		name string
		c    *client
	}{
		{"authentication off", newClient(t, configure)},
		{"authentication on", authClient(t, iss, configure).as(iss.Token("root", []string{"admin"}, nil))},
	} {
		c := mode.c.with(t)
		c.do("POST", "/cluster-providers", res("cp1", nil)).must(t, 201)
		n := 0
		for _, rq := range crossSiteRequests {
			for _, from := range crossSiteSenders {
				for _, to := range crossSiteHosts {
					n++
					name := fmt.Sprintf("x%d", n)
					t.Run(fmt.Sprintf("%s/%s/%s from %s to %s", mode.name, name, rq.name, from.name, to.host), func(t *testing.T) {
						req := rq.build(name)
						req.Host = to.host
						for k, v := range from.headers(to.host) {
							req.Header.Set(k, v)
						}
						want, says := rq.passed, ""
						switch {
						case !to.served:
							want, says = http.StatusMisdirectedRequest, "TEMCO_API_HOSTS"
						case !from.ok(req.Method):
							want, says = http.StatusForbidden, "TEMCO_API_ALLOWED_ORIGINS"
						case !rq.typeOK:
							want, says = http.StatusUnsupportedMediaType, "Content-Type: application/json"
						}
						r := c.with(t).serve(req).must(t, want)
						if says != "" {
							if m := r.message(t); !strings.Contains(m, says) {
								t.Errorf("message %q does not say %q", m, says)
							}
						}
						if !rq.creates {
							return
						}
						path := "/projects/" + name
						if rq.isUpload {
							path = "/cluster-providers/cp1/clusters/" + name
						}
						c.with(t).do("GET", path, nil).must(t, map[bool]int{true: 200, false: 404}[want == rq.passed])
					})
				}
			}
		}
	}
}

// Names and addresses the api serves, whatever their case, port or brackets.
func TestServedHosts(t *testing.T) {
	names := map[string]bool{"temco.example.com": true}
	for host, want := range map[string]bool{
		"":                            true, // HTTP/1.0: no browser
		"10.1.2.3":                    true,
		"10.1.2.3:9015":               true,
		"[fe80::1%25eth0]:9015":       true, // an address, zone and all
		"[2001:db8::1]:443":           true,
		"localhost":                   true,
		"LOCALHOST.:9015":             true,
		"temco.example.com":           true,
		"Temco.Example.Com.:8443":     true,
		"evil.temco.example.com":      false,
		"temco.example.com.evil.test": false,
		"localhost.evil.test":         false,
		"10.1.2.3.nip.io":             false,
	} {
		if got := servedHost(host, names); got != want {
			t.Errorf("servedHost(%q) = %t, want %t", host, got, want)
		}
	}
	c := newClient(t, func(s *Server) { s.Hosts = []string{AnyHost} })
	req := httptest.NewRequest("GET", "/v2/projects", nil)
	req.Host = "anything.test"
	c.serve(req).must(t, 200)
}

// The settings take origins and host names as browsers send them and refuse the rest
// with a message saying what to write.
func TestOriginAndHostSettings(t *testing.T) {
	got, err := ParseOrigins([]string{"https://UI.example.com:443/", " http://127.0.0.1:8233", "", "http://[::1]:80"})
	if err != nil || strings.Join(got, ",") != "https://ui.example.com,http://127.0.0.1:8233,http://[::1]" {
		t.Errorf("ParseOrigins = %q, %v", got, err)
	}
	for _, bad := range []string{"*", "https://*.example.com", "ui.example.com", "null", "https://ui.example.com/path", "ftp://ui", "https://u:p@ui"} {
		if _, err := ParseOrigins([]string{bad}); err == nil || !strings.Contains(err.Error(), "scheme://host[:port]") {
			t.Errorf("ParseOrigins(%q): %v", bad, err)
		}
	}
	hosts, err := ParseHosts([]string{"Temco.Example.com.", " temco-api ", "", "*", "10.0.0.1", "[fd00::1]"})
	if err != nil || strings.Join(hosts, ",") != "temco.example.com,temco-api,*,10.0.0.1,[fd00::1]" {
		t.Errorf("ParseHosts = %q, %v", hosts, err)
	}
	for _, bad := range []string{"temco.example.com:443", "https://temco.example.com", "*.example.com", "."} {
		if _, err := ParseHosts([]string{bad}); err == nil || !strings.Contains(err.Error(), "write the name alone") {
			t.Errorf("ParseHosts(%q): %v", bad, err)
		}
	}
}

// /codec answers CORS to the origins named only: none by default, where Echo's CORS
// would answer "*".
func TestCodecCORSDefaultsToNone(t *testing.T) {
	for _, tc := range []struct {
		name    string
		origins []string
		allowed string // the origin whose preflight is granted, "" for none
	}{
		{"unset", nil, ""},
		{"the UI origin", []string{"http://ui.test"}, "http://ui.test"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newClient(t, func(s *Server) { s.Codec, s.CodecOrigins = codec.Codec{Keys: s.Keys}, tc.origins })
			for _, origin := range []string{"http://ui.test", "http://evil.test"} {
				pre := httptest.NewRequest("OPTIONS", "/codec/decode", nil)
				pre.Header.Set("Origin", origin)
				pre.Header.Set("Sec-Fetch-Site", "cross-site")
				pre.Header.Set("Access-Control-Request-Method", "POST")
				rec := httptest.NewRecorder()
				c.h.ServeHTTP(rec, pre)
				want := map[bool]string{true: origin}[origin == tc.allowed]
				if got := rec.Header().Get("Access-Control-Allow-Origin"); got != want {
					t.Errorf("preflight from %s: Access-Control-Allow-Origin %q, want %q", origin, got, want)
				}
				req := httptest.NewRequest("POST", "/codec/decode", strings.NewReader(`{"payloads":[]}`))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Origin", origin)
				req.Header.Set("Sec-Fetch-Site", "cross-site")
				code := map[bool]int{true: 200, false: 403}[origin == tc.allowed]
				r := c.serve(req).must(t, code)
				if got := r.hdr.Get("Access-Control-Allow-Origin"); got != want {
					t.Errorf("decode from %s: Access-Control-Allow-Origin %q, want %q", origin, got, want)
				}
			}
		})
	}
}
