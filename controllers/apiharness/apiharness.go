// Package apiharness serves built-in controllers' REST resources through temco's API over
// a real FerretDB database: the scaffolding of the controllers' API tests.
package apiharness

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/temco/temco/api"
	"github.com/temco/temco/controllers"
	"github.com/temco/temco/internal/core/appctx"
	"github.com/temco/temco/internal/core/seal"
	"github.com/temco/temco/internal/core/store"
	"github.com/temco/temco/internal/dev/devstack"
	"github.com/temco/temco/internal/dev/testenv"
)

// DIG is the DIG TreeWithDIG creates.
const DIG = "/projects/p/composite-apps/ca/v1/deployment-intent-groups/dig"

// Server is the API with the given controllers' resources, on a database of its own.
type Server struct {
	T        *testing.T
	Handler  http.Handler
	Store    *store.Store
	Contexts *appctx.Store
	Keys     *seal.Keyring // seals what checks store with SetSealed
}

// ferret is the FerretDB Main starts for a package's tests.
var ferret *devstack.FerretDB

// Main is the TestMain of a package of API tests: it runs them over a FerretDB started for
// them, which Serve and ServeDIG use, and exits with their code.
func Main(m *testing.M) { testenv.MainWithFerretDB(m, &ferret) }

// Serve is New over the FerretDB Main started.
func Serve(t *testing.T, builtins ...controllers.Builtin) *Server {
	t.Helper()
	return New(t, ferret, builtins)
}

// ServeDIG is Serve with TreeWithDIG: the controllers' resources, and a DIG to put them in.
func ServeDIG(t *testing.T, builtins ...controllers.Builtin) *Server {
	t.Helper()
	s := Serve(t, builtins...)
	s.TreeWithDIG()
	return s
}

// New serves the controllers' resources (and extra kinds, e.g. ncm's) over a fresh
// database named after the test.
func New(t *testing.T, f *devstack.FerretDB, builtins []controllers.Builtin, kinds ...api.ResourceKind) *Server {
	t.Helper()
	db := testenv.Database(t, f, strings.ToLower(t.Name()))
	st, err := store.New(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	keys, err := seal.NewKeyring([]string{"test"}, [][]byte{bytes.Repeat([]byte{7}, 32)})
	if err != nil {
		t.Fatal(err)
	}
	contexts, err := appctx.New(context.Background(), db, appctx.WithKeys(keys))
	if err != nil {
		t.Fatal(err)
	}
	srv := &api.Server{Store: st, Contexts: contexts, Keys: keys, Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Controllers: controllers.API(builtins, controllers.APIDeps{}), Kinds: kinds,
		Hosts: []string{"example.com"}} // httptest.NewRequest's Host
	return &Server{T: t, Handler: srv.Handler(), Store: st, Contexts: contexts, Keys: keys}
}

// TreeWithDIG creates project p, composite app ca v1 and its DIG dig.
func (s *Server) TreeWithDIG() {
	s.T.Helper()
	s.Want("POST", "/projects", Body("p", nil), 201)
	s.Want("POST", "/projects/p/composite-apps", Body("ca", map[string]any{"compositeAppVersion": "v1"}), 201)
	s.Want("POST", "/projects/p/composite-apps/ca/v1/deployment-intent-groups",
		Body("dig", map[string]any{"compositeProfile": "cp", "version": "r1", "logicalCloud": "lc"}), 201)
}

// Want sends a JSON request and checks its status; it returns the body.
func (s *Server) Want(method, path string, v any, code int) string {
	s.T.Helper()
	var rd io.Reader
	if v != nil {
		data, _ := json.Marshal(v)
		rd = bytes.NewReader(data)
	}
	req := httptest.NewRequest(method, "/v2"+path, rd)
	req.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	s.Handler.ServeHTTP(rec, req)
	if rec.Code != code {
		s.T.Fatalf("%s %s: status %d, want %d: %s", method, path, rec.Code, code, rec.Body)
	}
	return rec.Body.String()
}

// Refused sends a request that must be answered 400 with a message saying msg.
func (s *Server) Refused(method, path string, v any, msg string) {
	s.T.Helper()
	var answer struct{ Message string }
	if err := json.Unmarshal([]byte(s.Want(method, path, v, 400)), &answer); err != nil {
		s.T.Fatal(err)
	}
	if !strings.Contains(answer.Message, msg) {
		s.T.Errorf("%s %s: message %q does not say %q", method, path, answer.Message, msg)
	}
}

// Body is a resource's body: {metadata: {name}, spec}.
func Body(name string, spec any) map[string]any {
	return map[string]any{"metadata": map[string]any{"name": name}, "spec": spec}
}
