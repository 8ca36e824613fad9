package api

import (
	"bytes"
	"context"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/temco/temco/internal/adapters/auth"
	"github.com/temco/temco/internal/adapters/auth/authtest"
	"github.com/temco/temco/internal/adapters/codec"
)

const (
	testIssuer   = "https://issuer.test"
	testAudience = "temco"
)

// authClient is an API with authentication on, trusting iss's key from a PEM file.
func authClient(t *testing.T, iss *authtest.Issuer, more ...func(*Server)) *client {
	t.Helper()
	keyFile := filepath.Join(t.TempDir(), "issuer.pem")
	if err := os.WriteFile(keyFile, iss.PublicKeyPEM(), 0o600); err != nil {
		t.Fatal(err)
	}
	a, err := auth.New(context.Background(), auth.Config{Issuer: testIssuer, Audience: testAudience, PublicKeyFile: keyFile})
	if err != nil {
		t.Fatal(err)
	}
	return newClient(t, append([]func(*Server){func(s *Server) {
		s.Auth = a
		s.Codec = codec.Codec{Keys: s.Keys}
		s.CodecOrigins = []string{"http://ui.test"}
	}}, more...)...)
}

func newIssuer(t *testing.T) *authtest.Issuer {
	t.Helper()
	iss, err := authtest.New(testIssuer, testAudience)
	if err != nil {
		t.Fatal(err)
	}
	return iss
}

func TestAuthenticationRefusesBadTokens(t *testing.T) {
	iss := newIssuer(t)
	c := authClient(t, iss)
	other := newIssuer(t) // same names, another key

	r := c.do("GET", "/projects", nil).must(t, 401)
	if msg := r.message(t); !strings.Contains(msg, "Bearer") {
		t.Errorf("message %q does not say how to authenticate", msg)
	}
	if h := r.hdr.Get("WWW-Authenticate"); !strings.HasPrefix(h, "Bearer") {
		t.Errorf("WWW-Authenticate %q", h)
	}
	past := time.Now().Add(-2 * time.Hour)
	for name, tc := range map[string]struct{ token, want string }{
		"garbage":         {"not-a-jwt", "invalid token"},
		"wrong issuer":    {iss.Token("u", []string{"admin"}, map[string]any{"iss": "https://evil.test"}), "issuer"},
		"wrong audience":  {iss.Token("u", []string{"admin"}, map[string]any{"aud": "other"}), "audience"},
		"expired":         {iss.Token("u", []string{"admin"}, map[string]any{"iat": past.Unix(), "exp": past.Add(time.Hour).Unix()}), "expired"},
		"other key":       {other.Token("u", []string{"admin"}, nil), "invalid token"},
		"unsigned (none)": {"eyJhbGciOiJub25lIn0." + strings.Split(iss.Token("u", []string{"admin"}, nil), ".")[1] + ".", "invalid token"},
	} {
		t.Run(name, func(t *testing.T) {
			r := c.do("GET", "/projects", nil, "Authorization", "Bearer "+tc.token).must(t, 401)
			if msg := r.message(t); !strings.Contains(msg, tc.want) {
				t.Errorf("message %q does not mention %q", msg, tc.want)
			}
			if !strings.Contains(r.hdr.Get("WWW-Authenticate"), "invalid_token") {
				t.Errorf("WWW-Authenticate %q", r.hdr.Get("WWW-Authenticate"))
			}
		})
	}
	c.as(iss.Token("u", []string{"admin"}, nil)).do("GET", "/projects", nil).must(t, 200)
	// Probes and the API reference need no token.
	for _, path := range []string{"/healthz", "/readyz", "/v2/openapi.yaml"} {
		rec := httptest.NewRecorder()
		c.h.ServeHTTP(rec, httptest.NewRequest("GET", path, nil))
		if rec.Code != 200 {
			t.Errorf("GET %s without a token: %d %s", path, rec.Code, rec.Body)
		}
	}
}

func TestAuthenticationWithJWKS(t *testing.T) {
	iss := newIssuer(t)
	jwks := httptest.NewServer(iss.JWKS())
	defer jwks.Close()
	a, err := auth.New(context.Background(), auth.Config{Issuer: testIssuer, Audience: testAudience, JWKSURL: jwks.URL,
		RolesClaim: "realm_access.roles"})
	if err != nil {
		t.Fatal(err)
	}
	p, err := a.Authenticate(context.Background(), iss.Token("alice", nil,
		map[string]any{"realm_access": map[string]any{"roles": []string{"project:p1", "viewer"}}}))
	if err != nil {
		t.Fatal(err)
	}
	if p.Subject != "alice" || p.Admin || !p.CanAccessProject("p1") || p.CanAccessProject("p2") {
		t.Errorf("principal %+v", p)
	}
	if _, err := a.Authenticate(context.Background(), newIssuer(t).Token("mallory", []string{"admin"}, nil)); err == nil {
		t.Error("a token of a key missing from the JWKS was accepted")
	}
}

// Tenant B can neither see nor touch tenant A's project; admin-only routes refuse tenants.
func TestTenantIsolation(t *testing.T) {
	iss := newIssuer(t)
	c := authClient(t, iss)
	admin := c.as(iss.Token("root", []string{"admin"}, nil))
	tree(t, admin) // project p1 and the global resources
	admin.do("POST", "/projects", res("p2", nil)).must(t, 201)
	a := c.as(iss.Token("alice", []string{"project:p1"}, nil))
	b := c.as(iss.Token("bob", nil, map[string]any{"roles": "project:p2 project:p3"})) // a space-separated string works too

	var projects []struct{ Metadata struct{ Name string } }
	b.do("GET", "/projects", nil).must(t, 200).json(t, &projects)
	if len(projects) != 1 || projects[0].Metadata.Name != "p2" {
		t.Errorf("bob lists %+v, want only p2", projects)
	}
	admin.do("GET", "/projects", nil).must(t, 200).json(t, &projects)
	if len(projects) != 2 {
		t.Errorf("admin lists %d projects, want 2", len(projects))
	}

	before := snapshot(t, admin)
	if n := strings.Count(before, "\n"); n < 10 {
		t.Fatalf("snapshot of %d documents: the tree is missing", n)
	}
	for _, r := range []struct {
		method, path string
		body         any
	}{
		{"GET", pP, nil}, {"PUT", pP, res("p1", nil)}, {"DELETE", pP, nil},
		{"GET", pP + "/composite-apps", nil}, {"GET", pCA, nil}, {"DELETE", pCA + "/apps/app1", nil},
		{"POST", pP + "/composite-apps", res("ca2", map[string]any{"compositeAppVersion": "v1"})},
		{"PUT", pDIG, res("dig1", digSpec())}, {"POST", pDIG + "/approve", nil}, {"POST", pDIG + "/instantiate", nil},
		{"POST", pDIG + "/terminate", nil}, {"GET", pDIG + "/status", nil}, {"POST", pP + "/logical-clouds/lc1/instantiate", nil},
	} {
		msg := b.do(r.method, r.path, r.body).must(t, 403).message(t)
		if !strings.Contains(msg, `project "p1" is not granted to "bob"`) {
			t.Errorf("%s %s: message %q", r.method, r.path, msg)
		}
	}
	if after := snapshot(t, admin); after != before {
		t.Error("tenant B's refused requests changed tenant A's project")
	}

	// Alice works in her project, but logical clouds and global resources are the admin's.
	a.do("GET", pCA, nil).must(t, 200)
	a.do("POST", pP+"/composite-apps", res("ca2", map[string]any{"compositeAppVersion": "v1"})).must(t, 201)
	a.do("GET", pP+"/logical-clouds/lc1", nil).must(t, 200)
	for _, r := range []struct {
		method, path string
		body         any
	}{
		{"POST", pP + "/logical-clouds", res("lc2", map[string]any{"level": "0"})},
		{"DELETE", pP + "/logical-clouds/lc1", nil},
		{"POST", pP + "/logical-clouds/lc1/instantiate", nil},
		{"POST", "/projects", res("p9", nil)},
		{"POST", "/cluster-providers", res("cp2", nil)},
		{"DELETE", "/cluster-providers/cp1/clusters/c1", nil},
		{"POST", "/cluster-providers/cp1/clusters/c1/labels", map[string]any{"clusterLabel": "x"}},
		// An import would put references into her project's logical cloud: admin only too.
		{"POST", "/cluster-providers/cp1/cluster-imports", map[string]any{"clusters": []any{map[string]any{
			"metadata": map[string]any{"name": "c9"}, "kubeconfig": testKubeconfig,
			"logicalClouds": []any{map[string]any{"project": "p1", "logicalCloud": "lc1"}}}}}},
		{"POST", "/controllers", res("c2", map[string]any{"type": "action", "priority": 2})},
		{"GET", "/controllers", nil},
		{"GET", "/cluster-providers/cp1/clusters/c1/kv-pairs", nil},
	} {
		msg := a.do(r.method, r.path, r.body).must(t, 403).message(t)
		if !strings.Contains(msg, "admin role") {
			t.Errorf("%s %s: message %q", r.method, r.path, msg)
		}
	}
	for _, path := range []string{"/cluster-providers", "/cluster-providers/cp1/clusters", "/cluster-providers/cp1/clusters/c1/labels"} {
		a.do("GET", path, nil).must(t, 200)
	}
	a.do("GET", "/no-such-thing", nil).must(t, 404)
}

// snapshot is every stored document's id and revision, as one string.
func snapshot(t *testing.T, c *client) string {
	t.Helper()
	cur, err := c.store.Database().Collection("resources").Find(context.Background(), map[string]any{})
	if err != nil {
		t.Fatal(err)
	}
	var docs []map[string]any
	if err := cur.All(context.Background(), &docs); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, d := range docs {
		fmt.Fprintf(&b, "%v %v %v %v\n", d["_id"], d["rev"], d["body"], d["state"])
	}
	return b.String()
}

func TestCodecEndpoint(t *testing.T) {
	iss := newIssuer(t)
	c := authClient(t, iss)
	admin := c.as(iss.Token("root", []string{"admin"}, nil))
	tenant := c.as(iss.Token("alice", []string{"project:p1"}, nil))
	post := func(c *client, path, body string) response {
		req := httptest.NewRequest("POST", path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-Namespace", "default")
		return c.serve(req)
	}
	plain := `{"payloads":[{"metadata":{"encoding":"anNvbi9wbGFpbg=="},"data":"eyJrIjoidiJ9"}]}` // json/plain {"k":"v"}
	enc := post(admin, "/codec/encode", plain).must(t, 200)
	if bytes.Contains(enc.body, []byte("eyJrIjoidiJ9")) || !bytes.Contains(enc.body, []byte("YmluYXJ5L2VuY3J5cHRlZA==")) {
		t.Fatalf("encode answered %s", enc.body)
	}
	dec := post(admin, "/codec/decode", string(enc.body)).must(t, 200)
	if !bytes.Contains(dec.body, []byte("eyJrIjoidiJ9")) {
		t.Fatalf("decode answered %s", dec.body)
	}
	post(admin, "/codec/decode", plain).must(t, 200) // unencrypted payloads pass through
	post(admin, "/codec/decode", "{not json").must(t, 400)
	tampered := strings.Replace(string(enc.body), `"data":"`, `"data":"AA`, 1)
	post(admin, "/codec/decode", tampered).must(t, 400)
	if msg := post(tenant, "/codec/decode", string(enc.body)).must(t, 403).message(t); !strings.Contains(msg, "admin role") {
		t.Errorf("tenant decode: %q", msg)
	}
	post(c, "/codec/decode", string(enc.body)).must(t, 401)

	// The browser's CORS preflight carries no token and must pass for the UI's origin only.
	pre := httptest.NewRequest("OPTIONS", "/codec/decode", nil)
	pre.Header.Set("Origin", "http://ui.test")
	pre.Header.Set("Access-Control-Request-Method", "POST")
	pre.Header.Set("Access-Control-Request-Headers", "content-type,x-namespace,authorization")
	rec := httptest.NewRecorder()
	c.h.ServeHTTP(rec, pre)
	if rec.Code != 204 || rec.Header().Get("Access-Control-Allow-Origin") != "http://ui.test" {
		t.Errorf("preflight: %d %v", rec.Code, rec.Header())
	}
	pre.Header.Set("Origin", "http://evil.test")
	rec = httptest.NewRecorder()
	c.h.ServeHTTP(rec, pre)
	if rec.Header().Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("preflight from another origin allowed: %v", rec.Header())
	}
}
