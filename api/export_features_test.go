package api

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/temco/temco/internal/adapters/auth/authtest"
	"github.com/temco/temco/internal/core/appctx"
	"github.com/temco/temco/internal/core/lifecycle"
	"github.com/temco/temco/internal/core/seal"
	"github.com/temco/temco/internal/core/store"
	"github.com/temco/temco/internal/dev/testenv"
)

// FeatureClient drives the api with side features' Extensions, for the tests of their
// routes (features_*_test.go): they are package api_test tests because the features
// import this package, and they use its test client, tree and fakes, exported here.
type FeatureClient struct {
	c   *client
	srv *Server
	ops *operations
}

// Paths and names of the tree NewFeatureClient creates.
const (
	PathP   = pP
	PathCA  = pCA
	PathDIG = pDIG
	DIGName = digName
	// Kubeconfig is a valid kubeconfig (of no reachable cluster).
	Kubeconfig = testKubeconfig
)

// NewFeatureClient serves the api with exts, over a database of the test's, and creates
// the tests' tree (tree): a DIG dig1, Created, without its intents.
func NewFeatureClient(t *testing.T, exts ...Extension) *FeatureClient {
	f := &FeatureClient{ops: &operations{}}
	f.c = newClient(t, func(s *Server) { s.Ops, s.Extensions, f.srv = f.ops, exts, s })
	tree(t, f.c)
	return f
}

// NewFeatureAuthClient serves the api with exts and authentication on (tokens of iss,
// authtest.New(TestIssuer, TestAudience)), without a tree: its requests carry no token
// until As gives them one.
func NewFeatureAuthClient(t *testing.T, iss *authtest.Issuer, exts ...Extension) *FeatureClient {
	f := &FeatureClient{ops: &operations{}}
	f.c = authClient(t, iss, func(s *Server) { s.Ops, s.Extensions, f.srv = f.ops, exts, s })
	return f
}

// Issuer and audience of the tokens NewFeatureAuthClient accepts.
const (
	TestIssuer   = testIssuer
	TestAudience = testAudience
)

// As is the same client sending token.
func (f *FeatureClient) As(token string) *FeatureClient {
	cp := *f
	cp.c = f.c.as(token)
	return &cp
}

// Do sends a request (body: a string, []byte or JSON-encodable value), failing the test
// on a 5xx.
func (f *FeatureClient) Do(method, path string, body any) Response {
	return Response{f.c.do(method, path, body)}
}

// Multipart sends a multipart request: metadata as its "metadata" part, file (if not
// nil) as its "file" part.
func (f *FeatureClient) Multipart(method, path string, metadata any, file []byte) Response {
	return Response{f.c.multipart(method, path, metadata, file)}
}

// Serve sends req as the dashboard does (with ClientHeader), whatever it answers.
func (f *FeatureClient) Serve(req *http.Request) *httptest.ResponseRecorder {
	req.Header.Set(ClientHeader, "api-test")
	rec := httptest.NewRecorder()
	f.c.h.ServeHTTP(rec, req)
	return rec
}

// Record appends state to the history of the target at path, with a context in status.
func (f *FeatureClient) Record(t *testing.T, path, state, ctxID, status string) {
	record(t, f.srv, path, state, ctxID, status)
}

// StateOf is the state history of the target at path.
func (f *FeatureClient) StateOf(t *testing.T, path string) lifecycle.StateInfo {
	return stateOf(t, f.srv, path)
}

// Complete gives the tree's DIG every part an instantiate needs.
func (f *FeatureClient) Complete(t *testing.T) { complete(t, f.c) }

// Store is the api's resource store.
func (f *FeatureClient) Store() *store.Store { return f.srv.Store }

// Keys are the api's keys, which seal what it stores sealed.
func (f *FeatureClient) Keys() *seal.Keyring { return f.srv.Keys }

// Contexts is the api's store of contexts.
func (f *FeatureClient) Contexts() *appctx.Store { return f.srv.Contexts }

// Started are the operations started: "<op> <target>".
func (f *FeatureClient) Started() []string { return f.ops.started }

// Response is an answer of Do.
type Response struct{ r response }

// Must fails the test unless the answer's status is code.
func (r Response) Must(t testing.TB, code int) Response {
	t.Helper()
	r.r.must(t, code)
	return r
}

// Message is an error's message; JSON decodes the body into v; Body is the body.
func (r Response) Message(t testing.TB) string { t.Helper(); return r.r.message(t) }
func (r Response) JSON(t testing.TB, v any)    { t.Helper(); r.r.json(t, v) }
func (r Response) Body() []byte                { return r.r.body }

// Code is the answer's status.
func (r Response) Code() int { return r.r.code }

// Res is a resource's body {metadata, spec}; DIGSpec the tree's DIG's spec; Meta a
// resource's metadata.
func Meta(name string) map[string]any          { return meta(name) }
func Res(name string, spec any) map[string]any { return res(name, spec) }
func DIGSpec() map[string]any                  { return digSpec() }

// complete gives the tree's DIG every part an instantiate needs.
func complete(t *testing.T, c *client) {
	t.Helper()
	c.do("POST", pDIG+"/intents", res("i1", map[string]any{"intent": map[string]string{"genericPlacementIntent": "gpi1"}})).must(t, 201)
	c.multipart("POST", pCA+"/composite-profiles/cprof/profiles", res("prof2", map[string]any{"app": "app2"}), testenv.Profile("replicas: 1\n")).must(t, 201)
	for _, app := range []string{"app1", "app2"} {
		c.do("POST", pGPI+"/app-intents", res(app, appIntentSpec(app))).must(t, 201)
	}
}
