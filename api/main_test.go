package api

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/temco/temco/internal/core/appctx"
	"github.com/temco/temco/internal/core/seal"
	"github.com/temco/temco/internal/core/store"
	"github.com/temco/temco/internal/dev/devstack"
	"github.com/temco/temco/internal/dev/testenv"
)

// The API tests run against a real FerretDB (MongoDB wire protocol, SQLite backend)
// started once for the package; each test gets its own database.
var (
	ferret *devstack.FerretDB
	dbSeq  atomic.Int64
)

func TestMain(m *testing.M) { testenv.MainWithFerretDB(m, &ferret) }

// client drives the API of one test and fails the test on any 500.
type client struct {
	t     testing.TB
	h     http.Handler
	store *store.Store
	keys  *seal.Keyring
	logs  *bytes.Buffer
	token string // sent as a bearer token unless the request carries its own Authorization
}

// with is the same client failing t.
func (c *client) with(t testing.TB) *client {
	cp := *c
	cp.t = t
	return &cp
}

// as is the same client sending token.
func (c *client) as(token string) *client {
	cp := *c
	cp.token = token
	return &cp
}

func newClient(t testing.TB, configure ...func(*Server)) *client {
	t.Helper()
	ctx := context.Background()
	db := fmt.Sprintf("t%d_%s", dbSeq.Add(1), strings.ToLower(strings.NewReplacer("/", "_").Replace(t.Name())))
	if len(db) > 60 {
		db = db[:60]
	}
	st, mc, err := store.Open(ctx, ferret.URI(), db)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = mc.Database(db).Drop(context.Background())
		_ = mc.Disconnect(context.Background())
	})
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	keys, err := seal.NewKeyring([]string{"test"}, [][]byte{key})
	if err != nil {
		t.Fatal(err)
	}
	contexts, err := appctx.New(ctx, st.Database())
	if err != nil {
		t.Fatal(err)
	}
	logs := &bytes.Buffer{}
	srv := &Server{Store: st, Contexts: contexts, Keys: keys, Log: slog.New(slog.NewJSONHandler(logs, nil)),
		Hosts: []string{testHost}}
	for _, f := range configure {
		f(srv)
	}
	return &client{t: t, h: srv.Handler(), store: st, keys: keys, logs: logs}
}

type response struct {
	code int
	body []byte
	hdr  http.Header
}

func (r response) json(t testing.TB, v any) {
	t.Helper()
	if err := json.Unmarshal(r.body, v); err != nil {
		t.Fatalf("response %q is not JSON: %v", r.body, err)
	}
}

func (r response) message(t testing.TB) string {
	t.Helper()
	var m struct {
		Message string `json:"message"`
	}
	r.json(t, &m)
	if m.Message == "" {
		t.Fatalf("error response without message: %s", r.body)
	}
	return m.Message
}

// testHost is the Host of httptest.NewRequest's requests, which the tests' api serves.
const testHost = "example.com"

// do sends a request as the dashboard does, with ClientHeader; body may be a string,
// []byte or any JSON-encodable value.
func (c *client) do(method, path string, body any, hdr ...string) response {
	c.t.Helper()
	var rd io.Reader
	ct := ""
	switch b := body.(type) {
	case nil:
	case string:
		rd, ct = strings.NewReader(b), "application/json"
	case []byte:
		rd, ct = bytes.NewReader(b), "application/json"
	default:
		data, err := json.Marshal(b)
		if err != nil {
			c.t.Fatal(err)
		}
		rd, ct = bytes.NewReader(data), "application/json"
	}
	req := httptest.NewRequest(method, "/v2"+path, rd)
	req.Header.Set(ClientHeader, "api-test")
	if ct != "" {
		req.Header.Set("Content-Type", ct)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	return c.serve(req)
}

func (c *client) serve(req *http.Request) response {
	c.t.Helper()
	if c.token != "" && req.Header.Get("Authorization") == "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	rec := httptest.NewRecorder()
	c.h.ServeHTTP(rec, req)
	if rec.Code >= 500 {
		c.t.Fatalf("%s %s answered %d: %s\nlogs:\n%s", req.Method, req.URL.Path, rec.Code, rec.Body, c.logs)
	}
	if rec.Code >= 400 && !json.Valid(rec.Body.Bytes()) {
		c.t.Fatalf("%s %s answered %d without a JSON body: %q", req.Method, req.URL.Path, rec.Code, rec.Body)
	}
	return response{code: rec.Code, body: rec.Body.Bytes(), hdr: rec.Header()}
}

// multipart sends metadata (JSON-encoded) and, when file is non-nil, a file part.
func (c *client) multipart(method, path string, metadata any, file []byte) response {
	c.t.Helper()
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	md, err := json.Marshal(metadata)
	if err != nil {
		c.t.Fatal(err)
	}
	_ = mw.WriteField("metadata", string(md))
	if file != nil {
		fw, _ := mw.CreateFormFile("file", "file")
		_, _ = fw.Write(file)
	}
	_ = mw.Close()
	req := httptest.NewRequest(method, "/v2"+path, &buf)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	return c.serve(req)
}

// must asserts the status code and returns the response.
func (r response) must(t testing.TB, code int) response {
	t.Helper()
	if r.code != code {
		t.Fatalf("status %d, want %d: %s", r.code, code, r.body)
	}
	return r
}

func meta(name string) map[string]any {
	return map[string]any{"name": name, "description": "d-" + name}
}

func res(name string, spec any) map[string]any {
	if spec == nil {
		spec = map[string]any{}
	}
	return map[string]any{"metadata": meta(name), "spec": spec}
}
