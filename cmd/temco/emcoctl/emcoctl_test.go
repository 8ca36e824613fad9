package emcoctl

import (
	"bytes"
	"context"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// seen is a request the fake API received.
type seen struct {
	method, path              string // path with its ?query
	contentType, accept, auth string
	body                      string // the JSON body
	parts                     []part // a multipart body's parts, in order
}

type part struct{ name, filename, content string }

// fakeAPI records every request in order; answer decides the reply (nil: 201 to POST,
// 200 with a Terminated status to status polls, 200 otherwise), and a request to drop
// gets no answer at all: the connection closes. Like temco's api, it refuses a change
// without X-Temco-Client or a JSON Content-Type (415).
type fakeAPI struct {
	url    string
	answer func(method, path string) (int, string)
	drop   string
	mu     sync.Mutex
	seen   []seen
}

func newFakeAPI(t *testing.T) *fakeAPI {
	t.Helper()
	f := &fakeAPI{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s := seen{method: r.Method, path: r.URL.Path, contentType: r.Header.Get("Content-Type"),
			accept: r.Header.Get("Accept"), auth: r.Header.Get("Authorization")}
		if r.URL.RawQuery != "" {
			s.path += "?" + r.URL.RawQuery
		}
		if mt, params, _ := mime.ParseMediaType(s.contentType); mt == "multipart/form-data" {
			mr := multipart.NewReader(r.Body, params["boundary"])
			for p, err := mr.NextPart(); err == nil; p, err = mr.NextPart() {
				data, _ := io.ReadAll(p)
				s.parts = append(s.parts, part{p.FormName(), p.FileName(), string(data)})
			}
		} else {
			data, _ := io.ReadAll(r.Body)
			s.body = string(data)
		}
		f.mu.Lock()
		f.seen = append(f.seen, s)
		f.mu.Unlock()
		if s.method+" "+s.path == f.drop {
			conn, _, _ := w.(http.Hijacker).Hijack()
			_ = conn.Close()
			return
		}
		code, body := f.reply(r.Method, s.path)
		if r.Method != http.MethodGet && r.Header.Get("X-Temco-Client") == "" && s.contentType != "application/json" {
			code, body = http.StatusUnsupportedMediaType, `{"message":"X-Temco-Client is missing"}`
		}
		w.WriteHeader(code)
		_, _ = io.WriteString(w, body)
	}))
	t.Cleanup(srv.Close)
	f.url = srv.URL
	return f
}

func (f *fakeAPI) reply(method, path string) (int, string) {
	if f.answer != nil {
		return f.answer(method, path)
	}
	switch {
	case strings.HasSuffix(path, "/status?status=deployed&output=summary"):
		return http.StatusOK, `{"deployedStatus":"Terminated"}`
	case method == http.MethodPost:
		return http.StatusCreated, ""
	}
	return http.StatusOK, ""
}

// received returns the requests so far.
func (f *fakeAPI) received() []seen {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]seen(nil), f.seen...)
}

// requests lists what the API received as "METHOD path".
func (f *fakeAPI) requests() []string {
	var out []string
	for _, s := range f.received() {
		out = append(out, s.method+" "+s.path)
	}
	return out
}

func (f *fakeAPI) runner(out *bytes.Buffer) *Runner {
	return &Runner{API: f.url, Out: out, HTTP: http.DefaultClient, Timeout: 10 * time.Second}
}

// load writes a resource file (and the files it names) into a new folder and loads it.
func load(t *testing.T, content string, files map[string]string) []*Document {
	t.Helper()
	dir := t.TempDir()
	for name, data := range files {
		write(t, dir, name, data)
	}
	docs, err := Load([]string{write(t, dir, "resources.yaml", content)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return docs
}

func equal(t *testing.T, what string, got, want []string) {
	t.Helper()
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("%s:\n%s\nwant:\n%s", what, strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// lines splits the output into its lines.
func lines(out *bytes.Buffer) []string {
	return strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
}

const session = `# SPDX-License-Identifier: Apache-2.0

---
resourceContext: {anchor: projects}
metadata: {name: p, description: demo}
---
resourceContext: {anchor: cluster-providers/cp/clusters}
metadata: {name: c1}
file: kubeconfig
---
resourceContext: {anchor: cluster-providers/cp/clusters/c1/labels}
clusterLabel: edge
---
resourceContext: {anchor: projects/p/composite-apps}
metadata: {name: ca}
spec: {compositeAppVersion: v1}
---
resourceContext: {anchor: ` + dig + `/approve}
---
resourceContext: {anchor: ` + dig + `/instantiate}
---
`

func TestApplyPostsEveryDocumentInOrder(t *testing.T) {
	api := newFakeAPI(t)
	docs := load(t, session, map[string]string{"kubeconfig": "kind: Config\n"})
	var out bytes.Buffer
	r := api.runner(&out)
	r.Token = "t0ken"
	if err := r.Apply(context.Background(), docs); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	equal(t, "requests", api.requests(), []string{
		"POST /v2/projects", "POST /v2/cluster-providers/cp/clusters", "POST /v2/cluster-providers/cp/clusters/c1/labels",
		"POST /v2/projects/p/composite-apps", "POST /v2/" + dig + "/approve", "POST /v2/" + dig + "/instantiate",
	})
	var bodies []string
	for _, s := range api.received() {
		if s.auth != "Bearer t0ken" {
			t.Errorf("%s %s sent Authorization %q", s.method, s.path, s.auth)
		}
		if s.parts != nil {
			bodies = append(bodies, s.parts[0].name+"="+s.parts[0].content)
		} else {
			bodies = append(bodies, s.contentType+" "+s.body)
		}
	}
	equal(t, "bodies", bodies, []string{
		`application/json {"metadata":{"name":"p","description":"demo"}}`,
		`metadata={"metadata":{"name":"c1"}}`,
		`application/json {"metadata":{"name":""},"clusterLabel":"edge"}`,
		`application/json {"metadata":{"name":"ca"},"spec":{"compositeAppVersion":"v1"}}`,
		`application/json {"metadata":{"name":""}}`,
		`application/json {"metadata":{"name":""}}`,
	})
	equal(t, "output", lines(&out), []string{
		"1 projects: POST /v2/projects 201",
		"2 cluster-providers/cp/clusters: POST /v2/cluster-providers/cp/clusters 201",
		"3 cluster-providers/cp/clusters/c1/labels: POST /v2/cluster-providers/cp/clusters/c1/labels 201",
		"4 projects/p/composite-apps: POST /v2/projects/p/composite-apps 201",
		"5 " + dig + "/approve: POST /v2/" + dig + "/approve 201",
		"6 " + dig + "/instantiate: POST /v2/" + dig + "/instantiate 201",
	})
}

func TestFilesAreSentAsMultipartParts(t *testing.T) {
	// conf/game.yaml exists only relative to the working directory, ui.yaml only beside
	// the resource file: both are found.
	wd := t.TempDir()
	t.Chdir(wd)
	if err := os.Mkdir(filepath.Join(wd, "conf"), 0o700); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(wd, "conf"), "game.yaml", "game\n")
	beside := map[string]string{"kubeconfig": "kind: Config\n", "ui.yaml": "ui\n"}
	const head = "resourceContext: {anchor: projects/p/composite-apps/ca/v1/deployment-intent-groups/d/generic-k8s-intents/g/resources/r/customizations}\nmetadata: {name: cust}\n"
	for _, tc := range []struct {
		name  string
		doc   string
		parts []part
	}{
		{"file: one part named file, its filename the base name", head + "file: kubeconfig\n",
			[]part{{"metadata", "", `{"metadata":{"name":"cust"}}`}, {"file", "kubeconfig", "kind: Config\n"}}},
		{"files: one part named files per entry, in order", head + "files: [conf/game.yaml, ui.yaml]\n",
			[]part{{"metadata", "", `{"metadata":{"name":"cust"}}`}, {"files", "game.yaml", "game\n"}, {"files", "ui.yaml", "ui\n"}}},
		{"file and files: file wins", head + "file: ui.yaml\nfiles: [conf/game.yaml]\n",
			[]part{{"metadata", "", `{"metadata":{"name":"cust"}}`}, {"file", "ui.yaml", "ui\n"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			api := newFakeAPI(t)
			docs := load(t, tc.doc, beside)
			var out bytes.Buffer
			for _, run := range []func(*Runner, context.Context, []*Document) error{(*Runner).Apply, (*Runner).Update} {
				if err := run(api.runner(&out), context.Background(), docs); err != nil {
					t.Fatalf("%v\n%s", err, out.String())
				}
			}
			for _, s := range api.received() {
				if mt, _, _ := mime.ParseMediaType(s.contentType); mt != "multipart/form-data" {
					t.Errorf("%s content type %q", s.method, s.contentType)
				}
				if len(s.parts) != len(tc.parts) {
					t.Fatalf("%s parts %v, want %v", s.method, s.parts, tc.parts)
				}
				for i := range s.parts {
					if s.parts[i] != tc.parts[i] {
						t.Errorf("%s part %d: %+v, want %+v", s.method, i+1, s.parts[i], tc.parts[i])
					}
				}
			}
		})
	}
}

func TestUpdatePutsResourcesAndSaysWhichActionsItSkips(t *testing.T) {
	api := newFakeAPI(t)
	docs := load(t, session, map[string]string{"kubeconfig": "kind: Config\n"})
	var out bytes.Buffer
	if err := api.runner(&out).Update(context.Background(), docs); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	equal(t, "requests", api.requests(), []string{
		"PUT /v2/projects/p", "PUT /v2/cluster-providers/cp/clusters/c1", "PUT /v2/cluster-providers/cp/clusters/c1/labels/edge",
		"PUT /v2/projects/p/composite-apps/ca/v1",
	})
	if got := lines(&out); len(got) != 6 ||
		got[4] != "5 "+dig+"/approve: skipped (approve is an action; update replaces resources only)" ||
		!strings.HasPrefix(got[5], "6 "+dig+"/instantiate: skipped (") {
		t.Errorf("want a line per document, the actions' saying they were skipped:\n%s", out.String())
	}
}

func TestDeleteWalksBackwardsTerminatingWhatWasInstantiated(t *testing.T) {
	api := newFakeAPI(t)
	docs := load(t, session+`resourceContext: {anchor: cluster-providers/cp/clusters/c1/apply}
`, map[string]string{"kubeconfig": "kind: Config\n"})
	var out bytes.Buffer
	if err := api.runner(&out).Delete(context.Background(), docs); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	equal(t, "requests", api.requests(), []string{
		"POST /v2/cluster-providers/cp/clusters/c1/terminate",
		"GET /v2/cluster-providers/cp/clusters/c1/status?status=deployed&output=summary",
		"POST /v2/" + dig + "/terminate",
		"GET /v2/" + dig + "/status?status=deployed&output=summary", // awaited before anything else goes
		"DELETE /v2/projects/p/composite-apps/ca/v1",
		"DELETE /v2/cluster-providers/cp/clusters/c1/labels/edge",
		"DELETE /v2/cluster-providers/cp/clusters/c1",
		"DELETE /v2/projects/p",
	})
	if s := api.received()[2]; s.contentType != "application/json" || s.body != "" {
		t.Errorf("terminate sent %q %q, want an empty JSON request", s.contentType, s.body)
	}
	if got := lines(&out); len(got) != 7 || !strings.HasPrefix(got[0], "7 ") || !strings.HasPrefix(got[2], "5 "+dig+"/approve: skipped") ||
		got[6] != "1 projects: DELETE /v2/projects/p 200" {
		t.Errorf("want a line per document, last first:\n%s", out.String())
	}
}

func TestGetPrintsEachResourceAndStatusButNoOtherAction(t *testing.T) {
	api := newFakeAPI(t)
	api.answer = func(method, path string) (int, string) {
		if strings.HasSuffix(path, "/labels/edge") {
			return http.StatusNotFound, `{"message":"no such label"}`
		}
		return http.StatusOK, "{\"path\":\"" + path + "\"}\n"
	}
	docs := load(t, `resourceContext: {anchor: projects}
metadata: {name: p}
---
resourceContext: {anchor: cluster-providers/cp/clusters/c1/labels}
clusterLabel: edge
---
resourceContext: {anchor: `+dig+`/instantiate}
---
resourceContext:
  anchor: `+dig+`/status?status=deployed
`, nil)
	var out bytes.Buffer
	err := api.runner(&out).Get(context.Background(), docs)
	if err == nil || err.Error() != "1 of 4 documents failed" {
		t.Errorf("error %v, want the failed label counted", err)
	}
	for _, s := range api.received() {
		if s.accept != "application/json" || s.contentType != "" || s.body != "" {
			t.Errorf("GET %s: Accept %q, Content-Type %q, body %q", s.path, s.accept, s.contentType, s.body)
		}
	}
	equal(t, "output", lines(&out), []string{
		"1 projects: GET /v2/projects/p 200",
		`{"path":"/v2/projects/p"}`,
		"2 cluster-providers/cp/clusters/c1/labels: GET /v2/cluster-providers/cp/clusters/c1/labels/edge 404 no such label",
		"3 " + dig + "/instantiate: skipped (instantiate is an action; get reads resources and status only)",
		"4 " + dig + "/status?status=deployed: GET /v2/" + dig + "/status?status=deployed 200",
		`{"path":"/v2/` + dig + `/status?status=deployed"}`,
	})
}

func TestARefusalFailsItsDocumentAndStopsTheRunOnlyWithStop(t *testing.T) {
	for _, tc := range []struct {
		stop     bool
		requests int
		err      string
	}{
		{false, 6, "2 of 6 documents failed"},
		{true, 2, "stopped at document 2 (cluster-providers/cp/clusters), which failed"},
	} {
		api := newFakeAPI(t)
		api.answer = func(method, path string) (int, string) {
			switch path {
			case "/v2/cluster-providers/cp/clusters":
				return http.StatusConflict, `{"message":"cluster \"c1\" already exists"}`
			case "/v2/projects/p/composite-apps":
				return http.StatusInternalServerError, "plain text from EMCO\n"
			}
			return http.StatusCreated, ""
		}
		var out bytes.Buffer
		r := api.runner(&out)
		r.Stop = tc.stop
		err := r.Apply(context.Background(), load(t, session, map[string]string{"kubeconfig": "x"}))
		if err == nil || err.Error() != tc.err {
			t.Errorf("stop %v: error %v, want %q", tc.stop, err, tc.err)
		}
		if got := len(api.received()); got != tc.requests {
			t.Errorf("stop %v: %d requests, want %d", tc.stop, got, tc.requests)
		}
		if got := lines(&out)[1]; got != `2 cluster-providers/cp/clusters: POST /v2/cluster-providers/cp/clusters 409 cluster "c1" already exists` {
			t.Errorf("stop %v: line %q", tc.stop, got)
		}
		if !tc.stop && lines(&out)[3] != "4 projects/p/composite-apps: POST /v2/projects/p/composite-apps 500 plain text from EMCO" {
			t.Errorf("a plain-text refusal: line %q", lines(&out)[3])
		}
	}
}

func TestNoAnswerAlwaysStopsTheRun(t *testing.T) {
	for _, tc := range []struct {
		name  string
		files map[string]string
		drop  string
		sent  []string
		line  string
	}{
		{"the connection drops", map[string]string{"kubeconfig": "x"}, "POST /v2/cluster-providers/cp/clusters",
			[]string{"POST /v2/projects", "POST /v2/cluster-providers/cp/clusters"},
			"2 cluster-providers/cp/clusters: POST /v2/cluster-providers/cp/clusters error: "},
		{"a file cannot be read", nil, "",
			[]string{"POST /v2/projects"},
			"2 cluster-providers/cp/clusters: POST /v2/cluster-providers/cp/clusters error: open kubeconfig: "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			api := newFakeAPI(t)
			api.drop = tc.drop
			var out bytes.Buffer
			err := api.runner(&out).Apply(context.Background(), load(t, session, tc.files)) // Stop is false
			if err == nil || !strings.HasPrefix(err.Error(), "stopped at document 2 (cluster-providers/cp/clusters): ") {
				t.Errorf("error %v", err)
			}
			equal(t, "requests", api.requests(), tc.sent)
			if got := lines(&out); len(got) != 2 || !strings.HasPrefix(got[1], tc.line) {
				t.Errorf("output:\n%s\nwant its last line to start %q", out.String(), tc.line)
			}
		})
	}
}

func TestWaitTimePausesAfterEach202(t *testing.T) {
	api := newFakeAPI(t)
	api.answer = func(method, path string) (int, string) {
		if strings.HasSuffix(path, "/approve") || strings.HasSuffix(path, "/instantiate") {
			return http.StatusAccepted, ""
		}
		return http.StatusCreated, ""
	}
	var out bytes.Buffer
	r := api.runner(&out)
	r.WaitTime = 3 * time.Second
	var pauses []string // the request each pause followed
	r.pause = func(d time.Duration) {
		sent := api.requests()
		pauses = append(pauses, d.String()+" after "+sent[len(sent)-1])
	}
	docs := load(t, session, map[string]string{"kubeconfig": "x"})
	if err := r.Apply(context.Background(), append(docs, docs[0])); err != nil {
		t.Fatal(err)
	}
	equal(t, "pauses", pauses, []string{
		"3s after POST /v2/" + dig + "/approve",     // its 202 delays instantiate
		"3s after POST /v2/" + dig + "/instantiate", // and its 202 the last document
	})
}

func TestAnAwaitedOperationThatFailsFailsItsDocument(t *testing.T) {
	api := newFakeAPI(t)
	api.answer = func(method, path string) (int, string) {
		if strings.HasSuffix(path, "/status?status=deployed&output=summary") {
			return http.StatusOK, `{"deployedStatus":"InstantiateFailed","error":"cluster c1 unreachable"}`
		}
		return http.StatusAccepted, ""
	}
	docs := load(t, "resourceContext: {anchor: projects/p/logical-clouds/lc/instantiate}\n", nil)
	var out bytes.Buffer
	err := api.runner(&out).Apply(context.Background(), docs)
	if err == nil || err.Error() != "1 of 1 documents failed" {
		t.Errorf("error %v", err)
	}
	if want := "1 projects/p/logical-clouds/lc/instantiate: POST /v2/projects/p/logical-clouds/lc/instantiate 202 " +
		"projects/p/logical-clouds/lc ended InstantiateFailed: cluster c1 unreachable"; lines(&out)[0] != want {
		t.Errorf("line %q\nwant %q", lines(&out)[0], want)
	}
}
