package hub

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"path"
	"slices"
	"strings"
	"sync"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"

	temco "github.com/temco/temco/client"
)

// apiCall is one request the fake API received.
type apiCall struct {
	Method, Path, Query, Owner string
	ActAs                      string         // the project authority it carries
	Body                       map[string]any // the JSON body, or a multipart request's metadata part
	File                       []byte         // a multipart request's file part
	Multipart                  bool
}

func (c apiCall) String() string { return c.Method + " " + c.Path }

// answer is a canned reply to one "METHOD /path" (path without /v2).
type answer struct {
	code int
	body string
}

// fakeAPI stands in for temco's REST API: resources by path (without /v2) as the API
// shows them ({"owner": ..., "metadata": ..., "spec": ...}), collections listed from
// them, owners enforced as api/owner.go does, lifecycle operations answered 202.
type fakeAPI struct {
	t       *testing.T
	mu      sync.Mutex
	items   map[string]map[string]any
	status  map[string]map[string]any // a lifecycle target's path → its GET …/status answer
	answers map[string]answer
	calls   []apiCall
	srv     *httptest.Server
}

func newFakeAPI(t *testing.T) *fakeAPI {
	f := &fakeAPI{t: t, items: map[string]map[string]any{}, status: map[string]map[string]any{}, answers: map[string]answer{}}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

// client calls the fake API.
func (f *fakeAPI) client() *temco.Client { return &temco.Client{Base: f.srv.URL, HTTP: f.srv.Client()} }

// tree writes to the fake API as owner.
func (f *fakeAPI) tree(owner string) *tree { return (&Reconciler{API: f.client()}).tree(owner) }

// seed stores a resource as the API would show it; owner "" is REST's.
func (f *fakeAPI) seed(p, owner string, body map[string]any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.items[p] = withOwner(body, owner)
}

func (f *fakeAPI) item(p string) (map[string]any, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	it, ok := f.items[p]
	return it, ok
}

func (f *fakeAPI) answer(method, p string, code int, body string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if code == 0 { // no canned answer any more
		delete(f.answers, method+" "+p)
		return
	}
	f.answers[method+" "+p] = answer{code, body}
}

func (f *fakeAPI) setStatus(p string, s map[string]any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.status[p] = s
}

// setState sets a DIG's GET …/state answer, as with clusters=true: without it, the
// answer leaves out the clusters by state, as the API's does.
func (f *fakeAPI) setState(p string, s map[string]any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.status[p+" state"] = s
}

// all is every request received; writes those that are not GETs, diagnostics aside
// (reports).
func (f *fakeAPI) all() []apiCall {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.calls)
}

func (f *fakeAPI) writes() []apiCall {
	var out []apiCall
	for _, c := range f.all() {
		if c.Method != http.MethodGet && !strings.HasPrefix(c.Path, "/diagnostics/") {
			out = append(out, c)
		}
	}
	return out
}

func (f *fakeAPI) reset() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = nil
}

// names are calls as "METHOD /path", for comparing sequences.
func names(calls []apiCall) []string {
	out := make([]string, len(calls))
	for i, c := range calls {
		out[i] = c.String()
	}
	return out
}

func withOwner(body map[string]any, owner string) map[string]any {
	it := maps.Clone(body)
	if it == nil {
		it = map[string]any{}
	}
	delete(it, "owner")
	if owner != "" {
		it["owner"] = owner
	}
	return it
}

var operations = []string{"approve", "instantiate", "terminate", "update", "rollback", "stop"}

func (f *fakeAPI) serve(w http.ResponseWriter, r *http.Request) {
	p := strings.TrimPrefix(r.URL.EscapedPath(), "/v2")
	c := apiCall{Method: r.Method, Path: p, Query: r.URL.RawQuery, Owner: r.Header.Get(temco.HeaderOwner), ActAs: r.Header.Get(temco.HeaderActAs)}
	if strings.HasPrefix(r.Header.Get("Content-Type"), "multipart/form-data") {
		c.Multipart = true
		if err := r.ParseMultipartForm(32 << 20); err != nil {
			f.t.Errorf("%s %s: multipart: %v", r.Method, p, err)
		}
		if err := json.Unmarshal([]byte(r.FormValue("metadata")), &c.Body); err != nil {
			f.t.Errorf("%s %s: metadata part: %v", r.Method, p, err)
		}
		if file, _, err := r.FormFile("file"); err == nil {
			c.File, _ = io.ReadAll(file)
		}
	} else if b, _ := io.ReadAll(r.Body); len(b) > 0 {
		if err := json.Unmarshal(b, &c.Body); err != nil {
			f.t.Errorf("%s %s: body: %v", r.Method, p, err)
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, c)
	reply := func(code int, v any) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		if v != nil {
			_ = json.NewEncoder(w).Encode(v)
		}
	}
	refuse := func(code int, format string, args ...any) {
		reply(code, map[string]any{"message": fmt.Sprintf(format, args...)})
	}
	if strings.HasPrefix(p, "/diagnostics/") { // reports: taken
		w.WriteHeader(http.StatusNoContent)
		return
	}
	if a, ok := f.answers[r.Method+" "+p]; ok {
		w.WriteHeader(a.code)
		_, _ = io.WriteString(w, a.body)
		return
	}
	cur, exists := f.items[p]
	switch r.Method {
	case http.MethodGet:
		if target, ok := strings.CutSuffix(p, "/state"); ok {
			if s, ok := f.status[target+" state"]; ok {
				if r.URL.Query().Get("clusters") != "true" {
					s = maps.Clone(s)
					delete(s, "clusterStates")
					delete(s, "appClusterStates")
				}
				reply(http.StatusOK, s)
				return
			}
		}
		if target, ok := strings.CutSuffix(p, "/status"); ok {
			if s, ok := f.status[target]; ok {
				reply(http.StatusOK, s)
				return
			}
		}
		if exists {
			reply(http.StatusOK, cur)
			return
		}
		list := []map[string]any{}
		for _, k := range slices.Sorted(maps.Keys(f.items)) {
			if path.Dir(k) == p {
				list = append(list, f.items[k])
			}
		}
		if len(list) == 0 {
			refuse(http.StatusNotFound, "%s not found", p)
			return
		}
		reply(http.StatusOK, list)
	case http.MethodPost:
		if _, ok := f.items[path.Dir(p)]; ok && slices.Contains(operations, path.Base(p)) {
			reply(http.StatusAccepted, map[string]any{"workflowId": "wf-" + path.Base(p)})
			return
		}
		md, _ := c.Body["metadata"].(map[string]any)
		name, _ := md["name"].(string)
		if name == "" {
			name, _ = c.Body["clusterLabel"].(string) // a cluster label has no metadata
		}
		item := p + "/" + name
		if spec, _ := c.Body["spec"].(map[string]any); strings.HasSuffix(p, "/composite-apps") && spec["compositeAppVersion"] != nil {
			item += "/" + spec["compositeAppVersion"].(string)
		}
		if _, ok := f.items[item]; ok {
			refuse(http.StatusConflict, "%s exists", item)
			return
		}
		f.items[item] = withOwner(c.Body, c.Owner)
		reply(http.StatusCreated, f.items[item])
	case http.MethodPut:
		if strings.Contains(p, "/labels/") {
			refuse(http.StatusMethodNotAllowed, "method not allowed") // the API has no PUT for a label
			return
		}
		if !exists {
			refuse(http.StatusNotFound, "%s not found", p)
			return
		}
		if o, _ := cur["owner"].(string); o != c.Owner {
			refuse(http.StatusConflict, "%s is owned by %q", p, o)
			return
		}
		f.items[p] = withOwner(c.Body, c.Owner)
		reply(http.StatusOK, f.items[p])
	case http.MethodDelete:
		if !exists {
			refuse(http.StatusNotFound, "%s not found", p)
			return
		}
		if o, _ := cur["owner"].(string); o != c.Owner {
			refuse(http.StatusConflict, "%s is owned by %q", p, o)
			return
		}
		delete(f.items, p)
		w.WriteHeader(http.StatusNoContent)
	default:
		refuse(http.StatusMethodNotAllowed, "method not allowed")
	}
}

// fakeEvents records the Events the reconciler emits, as "reason: note".
type fakeEvents struct {
	mu  sync.Mutex
	got []string
}

func (e *fakeEvents) Eventf(_ runtime.Object, _ runtime.Object, _, reason, _, note string, args ...any) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.got = append(e.got, reason+": "+fmt.Sprintf(note, args...))
}

func (e *fakeEvents) events() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.got)
}

// wantCalls fails t (fatally: later checks index the calls) unless calls are want, in order.
func wantCalls(t *testing.T, calls []apiCall, want ...string) {
	t.Helper()
	if got := names(calls); !slices.Equal(got, want) {
		t.Fatalf("calls:\n got  %q\n want %q", got, want)
	}
}

// reports are the diagnostics requests received.
func (f *fakeAPI) reports() []apiCall {
	var out []apiCall
	for _, c := range f.all() {
		if strings.HasPrefix(c.Path, "/diagnostics/") {
			out = append(out, c)
		}
	}
	return out
}
