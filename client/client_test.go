package client

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// seen is one request the test server received.
type seen struct {
	method, path, query string
	header              http.Header
	body                string
	parts               []part // a multipart request's
}

type part struct{ field, file, data string }

// server answers every request with code and body, and records it.
type server struct {
	mu   sync.Mutex
	seen []seen
	code int
	body string
}

func newServer(t *testing.T, code int, body string) (*server, *Client) {
	s := &server{code: code, body: body}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q := seen{method: r.Method, path: r.URL.Path, query: r.URL.RawQuery, header: r.Header.Clone()}
		if mt, params, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mt == "multipart/form-data" {
			mr := multipart.NewReader(r.Body, params["boundary"])
			for p, err := mr.NextPart(); err == nil; p, err = mr.NextPart() {
				data, _ := io.ReadAll(p)
				q.parts = append(q.parts, part{p.FormName(), p.FileName(), string(data)})
			}
		} else {
			data, _ := io.ReadAll(r.Body)
			q.body = string(data)
		}
		s.mu.Lock()
		s.seen = append(s.seen, q)
		code, body := s.code, s.body
		s.mu.Unlock()
		w.WriteHeader(code)
		_, _ = io.WriteString(w, body)
	}))
	t.Cleanup(srv.Close)
	return s, &Client{Base: srv.URL + "/", Token: "t0ken", Name: "test", HTTP: srv.Client()}
}

func (s *server) last(t *testing.T) seen {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.seen) == 0 {
		t.Fatal("no request received")
	}
	return s.seen[len(s.seen)-1]
}

var ctx = context.Background()

// Every request goes below /v2 with the token; a GET asks for JSON and names no client,
// any other names it, and a change with no body says JSON (temco's api takes neither
// kind without one of them); the project acted as goes when set, the owner when set on a
// request that writes.
func TestRequestsCarryTemcosHeaders(t *testing.T) {
	cases := []struct {
		name                      string
		c                         func(*Client) *Client
		req                       Request
		accept, client, ctype     string
		owner, actAs, body, query string
	}{
		{name: "GET", c: func(c *Client) *Client { return c.OwnedBy("hub:Project/p1") }, req: Request{Method: "GET", Path: "/projects/p1?limit=1"},
			accept: "application/json", query: "limit=1"},
		{name: "bodiless POST", c: func(c *Client) *Client { return c }, req: Request{Method: "POST", Path: "/projects/p1/x/approve"},
			client: "test", ctype: "application/json"},
		{name: "JSON PUT", c: func(c *Client) *Client { return c.OwnedBy("hub:Project/p1") },
			req:    Request{Method: "PUT", Path: "/projects/p1", Body: map[string]any{"metadata": map[string]string{"name": "p1"}}},
			client: "test", ctype: "application/json", owner: "hub:Project/p1", body: `{"metadata":{"name":"p1"}}`},
		{name: "DELETE acting as a project", c: func(c *Client) *Client { return c.ActingAs("p1").OwnedBy("hub:X/y") },
			req:    Request{Method: "DELETE", Path: "projects/p1/composite-apps/ca/v1"},
			client: "test", ctype: "application/json", owner: "hub:X/y", actAs: "project:p1"},
		{name: "raw JSON goes as it is", c: func(c *Client) *Client { return c },
			req:    Request{Method: "POST", Path: "/projects", Body: json.RawMessage("{\"metadata\":  {\"name\":\"p\"}}\n")},
			client: "test", ctype: "application/json", body: "{\"metadata\":  {\"name\":\"p\"}}\n"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, c := newServer(t, http.StatusOK, "")
			if _, err := tc.c(c).Send(ctx, tc.req); err != nil {
				t.Fatal(err)
			}
			got := s.last(t)
			want := "/v2/" + strings.TrimPrefix(strings.SplitN(tc.req.Path, "?", 2)[0], "/")
			h := got.header
			for _, c := range []struct{ name, got, want string }{
				{"method", got.method, tc.req.Method}, {"path", got.path, want}, {"query", got.query, tc.query},
				{"Authorization", h.Get("Authorization"), "Bearer t0ken"}, {"Accept", h.Get("Accept"), tc.accept},
				{HeaderClient, h.Get(HeaderClient), tc.client}, {"Content-Type", h.Get("Content-Type"), tc.ctype},
				{HeaderOwner, h.Get(HeaderOwner), tc.owner}, {HeaderActAs, h.Get(HeaderActAs), tc.actAs}, {"body", got.body, tc.body},
			} {
				if c.got != c.want {
					t.Errorf("%s = %q, want %q", c.name, c.got, c.want)
				}
			}
		})
	}
}

// ActingAs and OwnedBy narrow a copy: the client they came from sends neither header.
func TestNarrowingCopiesTheClient(t *testing.T) {
	s, c := newServer(t, http.StatusOK, "")
	_ = c.ActingAs("p1").OwnedBy("hub:a")
	if _, err := c.Send(ctx, Request{Method: "POST", Path: "/x"}); err != nil {
		t.Fatal(err)
	}
	if h := s.last(t).header; h.Get(HeaderActAs) != "" || h.Get(HeaderOwner) != "" {
		t.Errorf("the original client sent %s %q, %s %q", HeaderActAs, h.Get(HeaderActAs), HeaderOwner, h.Get(HeaderOwner))
	}
}

// A request with files is the form uploads take: the metadata field first, then each
// file as its part, "file" named "file" unless said otherwise.
func TestFilesMakeAMultipartRequest(t *testing.T) {
	s, c := newServer(t, http.StatusCreated, "")
	err := c.Create(ctx, "/projects/p1/composite-apps/ca/v1/apps", map[string]any{"metadata": map[string]string{"name": "web"}},
		File{Data: []byte("chart")}, File{Part: "files", Name: "b.yaml", Data: []byte("b")})
	if err != nil {
		t.Fatal(err)
	}
	got := s.last(t)
	want := []part{{"metadata", "", `{"metadata":{"name":"web"}}`}, {"file", "file", "chart"}, {"files", "b.yaml", "b"}}
	if len(got.parts) != len(want) {
		t.Fatalf("parts %+v, want %+v", got.parts, want)
	}
	for i := range want {
		if got.parts[i] != want[i] {
			t.Errorf("part %d = %+v, want %+v", i, got.parts[i], want[i])
		}
	}
	if got.header.Get(HeaderClient) != "test" {
		t.Errorf("%s = %q", HeaderClient, got.header.Get(HeaderClient))
	}
	if _, err := c.Send(ctx, Request{Method: "POST", Path: "/x", Body: map[string]any{}, Multipart: true}); err != nil {
		t.Fatal(err)
	}
	if got := s.last(t); len(got.parts) != 1 || got.parts[0] != (part{"metadata", "", "{}"}) {
		t.Errorf("a form without files: parts %+v, want the metadata alone", got.parts)
	}
}

// A 4xx is a refusal with the API's message; a 5xx an *Error that is no refusal; a GET's
// 404 is "not there"; no answer at all is neither.
func TestAnswersOtherThan2xx(t *testing.T) {
	cases := []struct {
		name, body string
		code       int
		refusal    bool
		message    string
	}{
		{"409 with the API's message", `{"message":"dig is Instantiated: approve needs one of [Created]"}`, 409, true, "dig is Instantiated: approve needs one of [Created]"},
		{"400 in plain text", "bad request\n", 400, true, "bad request"},
		{"500", `{"message":"store unreachable"}`, 500, false, "store unreachable"},
		{"502 from a proxy, cut", strings.Repeat("x", 600), 502, false, strings.Repeat("x", 512) + "..."},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, c := newServer(t, tc.code, tc.body)
			_, err := c.Operate(ctx, "/projects/p/composite-apps/ca/v1/deployment-intent-groups/d", OpApprove, nil)
			var e *Error
			if !errors.As(err, &e) || e.Code != tc.code || e.Message != tc.message {
				t.Fatalf("err = %#v, want an *Error %d %q", err, tc.code, tc.message)
			}
			if r, ok := IsRefusal(err); ok != tc.refusal || ok && r != e {
				t.Errorf("IsRefusal = %v, want %v", ok, tc.refusal)
			}
			if want := "POST /v2/projects/p/composite-apps/ca/v1/deployment-intent-groups/d/approve: "; !strings.HasPrefix(err.Error(), want) {
				t.Errorf("Error() = %q, want it to start %q", err, want)
			}
		})
	}
	t.Run("404 on a GET", func(t *testing.T) {
		_, c := newServer(t, http.StatusNotFound, `{"message":"not found"}`)
		var v map[string]any
		found, err := c.Get(ctx, "/projects/nope", &v)
		if found || err != nil {
			t.Errorf("Get = %v, %v; want false, nil", found, err)
		}
		if err := c.Delete(ctx, "/projects/nope"); !IsNotFound(err) {
			t.Errorf("Delete = %v, want a 404", err)
		}
	})
	t.Run("no answer", func(t *testing.T) {
		c := &Client{Base: "http://127.0.0.1:1"}
		_, err := c.Get(ctx, "/projects", nil)
		if _, ok := IsRefusal(err); err == nil || ok || IsNotFound(err) {
			t.Errorf("err = %v, want a transport error", err)
		}
	})
	t.Run("Send returns any answer", func(t *testing.T) {
		_, c := newServer(t, http.StatusConflict, `{"message":"busy"}`+"\n")
		r, err := c.Send(ctx, Request{Method: "GET", Path: "/x"})
		if err != nil || r.OK() || r.Code != 409 || r.Message != "busy" || string(r.Body) != `{"message":"busy"}`+"\n" {
			t.Errorf("Send = %+v, %v", r, err)
		}
	})
}

// The typed reads decode what the API answers.
func TestTypedReads(t *testing.T) {
	t.Run("DIG state, with cluster counts", func(t *testing.T) {
		s, c := newServer(t, http.StatusOK, `{"state":"Instantiated","revision":2,"contextId":"c2","contextStatus":"Updating",
			"operation":{"workflowId":"w","op":"update"},"rollout":{"state":"Running","stages":[{"name":"canary","state":"Succeeded"},{"name":"rest","state":"Baking"}]},
			"apps":["web"],"objects":{"Applied":3},"clusters":2,"clusterStates":{"Applied":2},"appClusterStates":{"web":{"Applied":2}}}`)
		st, err := c.DIGState(ctx, "/projects/p/composite-apps/ca/v1/deployment-intent-groups/d", DIGStateOptions{Clusters: true})
		if err != nil {
			t.Fatal(err)
		}
		if q := s.last(t); q.path != "/v2/projects/p/composite-apps/ca/v1/deployment-intent-groups/d/state" || q.query != "clusters=true" {
			t.Errorf("asked %s?%s", q.path, q.query)
		}
		if st.State != "Instantiated" || st.Revision != 2 || st.ContextID != "c2" || !st.Running() || st.Failed() ||
			st.Operation.Op != "update" || st.Rollout.Stage() != "rest: Baking" || st.ClusterStates["Applied"] != 2 || st.AppClusterStates["web"]["Applied"] != 2 {
			t.Errorf("state %+v", st)
		}
	})
	t.Run("status", func(t *testing.T) {
		s, c := newServer(t, http.StatusOK, `{"states":{"actions":[{"state":"Created"},{"state":"Instantiated"}]},"deployedStatus":"InstantiateFailed","error":"boom"}`)
		st, err := c.Status(ctx, "/projects/p/logical-clouds/lc")
		if err != nil {
			t.Fatal(err)
		}
		if q := s.last(t); q.path != "/v2/projects/p/logical-clouds/lc/status" || q.query != "status=deployed&output=summary" {
			t.Errorf("asked %s?%s", q.path, q.query)
		}
		if st.State() != "Instantiated" || st.Running() || !st.Failed() || st.Error != "boom" {
			t.Errorf("status %+v", st)
		}
		if (Status{}).State() != StateCreated {
			t.Error("a status with no history is not Created")
		}
	})
	t.Run("snapshot diff", func(t *testing.T) {
		s, c := newServer(t, http.StatusOK, `{"from":"a","to":"b/c","changes":[{"resource":"r","path":"spec.x","op":"changed","from":1,"to":2}]}`)
		d, err := c.SnapshotDiff(ctx, "/dig", "a", "b/c")
		if err != nil {
			t.Fatal(err)
		}
		if q := s.last(t); q.header.Get("Accept") != "application/json" {
			t.Errorf("asked without Accept: %+v", q)
		}
		if len(d.Changes) != 1 || d.Changes[0].Op != ChangeChanged || d.To != "b/c" {
			t.Errorf("diff %+v", d)
		}
	})
	t.Run("an answer temco does not give", func(t *testing.T) {
		_, c := newServer(t, http.StatusOK, `<html>`)
		if _, err := c.Snapshots(ctx, "/dig", 1); err == nil || !strings.Contains(err.Error(), "not what temco answers") {
			t.Errorf("err = %v", err)
		}
	})
}

func TestRolloutStage(t *testing.T) {
	cases := []struct {
		r    *Rollout
		want string
	}{
		{nil, ""},
		{&Rollout{State: "Succeeded", Stages: []RolloutStage{{"a", "Succeeded"}, {"b", "Skipped"}}}, "Succeeded"},
		{&Rollout{State: "Running", Stages: []RolloutStage{{"a", "Succeeded"}, {"b", "WaitingForApproval"}, {"c", "Pending"}}}, "b: WaitingForApproval"},
		{&Rollout{State: "Running", Stages: []RolloutStage{{"a", "Pending"}}}, "Running"},
	}
	for _, tc := range cases {
		if got := tc.r.Stage(); got != tc.want {
			t.Errorf("%+v: Stage() = %q, want %q", tc.r, got, tc.want)
		}
	}
}
