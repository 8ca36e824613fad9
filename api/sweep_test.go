package api_test

// The route sweep reads every route from the router of the API as cmd/temco serves it
// (temco's own routes, the side features', the built-in controllers' and the other
// services' kinds) and requires the refusals the access policy promises: the API's JSON
// error, nothing of another project in it, nothing changed in the store. A new route is
// swept without a change here. It is a package api_test test because the controllers and
// the features import package api.

import (
	"bytes"
	"cmp"
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/labstack/echo/v4"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/temco/temco/api"
	"github.com/temco/temco/controllers"
	"github.com/temco/temco/controllers/cacerts"
	"github.com/temco/temco/controllers/ncm"
	"github.com/temco/temco/controllers/registry"
	"github.com/temco/temco/controllers/workflowmgr"
	feature "github.com/temco/temco/features"
	features "github.com/temco/temco/features/registry"
	"github.com/temco/temco/internal/adapters/auth"
	"github.com/temco/temco/internal/adapters/auth/authtest"
	"github.com/temco/temco/internal/adapters/codec"
	"github.com/temco/temco/internal/adapters/metrics"
	"github.com/temco/temco/internal/core/appctx"
	"github.com/temco/temco/internal/core/seal"
	"github.com/temco/temco/internal/core/store"
	"github.com/temco/temco/internal/dev/testenv"
)

// tenantReads are the routes outside projects a tenant may read: placement names cluster
// providers, clusters and their labels. They are listed one by one, so a new route below
// /v2/cluster-providers is expected to be admin-only until it is added here too.
var tenantReads = map[string]bool{
	"/v2/cluster-providers":                                                                       true,
	"/v2/cluster-providers/:clusterProvider":                                                      true,
	"/v2/cluster-providers/:clusterProvider/clusters":                                             true,
	"/v2/cluster-providers/:clusterProvider/clusters/:cluster":                                    true,
	"/v2/cluster-providers/:clusterProvider/clusters/:cluster/labels":                             true,
	"/v2/cluster-providers/:clusterProvider/clusters/:cluster/labels/:label":                      true,
	"/v2/cluster-providers/:clusterProvider/clusters/:cluster/networks":                           true,
	"/v2/cluster-providers/:clusterProvider/clusters/:cluster/networks/:network":                  true,
	"/v2/cluster-providers/:clusterProvider/clusters/:cluster/provider-networks":                  true,
	"/v2/cluster-providers/:clusterProvider/clusters/:cluster/provider-networks/:providerNetwork": true,
	"/v2/cluster-providers/:clusterProvider/clusters/:cluster/status":                             true,
	"/v2/cluster-providers/:clusterProvider/clusters/:cluster/dashboard":                          true, // its projects' DIGs alone
	"/v2/fleet/clusters": true, // every cluster it may read above, with its projects' DIGs' states alone
}

// tenantMay is a tenant's access policy, stated apart from authorize so that the sweep
// catches a route authorize grants by mistake: its session, the project list, the
// diagnostics and the fleet (a tenant sees only its projects in each), every route of a project granted
// to it except writes of logical clouds, and tenantReads.
func tenantMay(method, route string) bool {
	read := method == http.MethodGet || method == http.MethodHead
	switch {
	case route == "/v2/session", (route == "/v2/projects" || route == "/v2/diagnostics" || route == "/v2/fleet") && read:
		return true // lists a tenant sees its own projects' part of
	case strings.HasPrefix(route, "/v2/projects/:project/logical-clouds"):
		return read
	case route == "/v2/projects/:project", strings.HasPrefix(route, "/v2/projects/:project/"):
		return true
	}
	return read && tenantReads[route]
}

// agentRoute tells the routes only an agent's credential reaches (the join takes a join
// token): every other caller is refused them with a message of their own.
func agentRoute(route string) bool { return strings.HasPrefix(route, "/v2/agent/") }

// agentRoutes are the routes only an agent's credential reaches, the join aside.
var agentRoutes = []string{"/v2/agent/work", "/v2/agent/revisions/:context", "/v2/agent/revisions/:context/statuses",
	"/v2/agent/revisions/:context/live", "/v2/agent/revisions/:context/drift", "/v2/agent/work/:instance/report"}

// seeded names the resources seed creates, by path parameter; other parameters are
// filled with their own name.
var seeded = map[string]string{"compositeApp": "ca", "version": "v1", "deploymentIntentGroup": "dig",
	"logicalCloud": "lc", "clusterProvider": "cp", "cluster": "c1", "kvPair": "kv", "controller": "ctl"}

// fillPath names route's path parameters: :project is project, the rest seeded names.
func fillPath(route, project string) string {
	parts := strings.Split(route, "/")
	for i, p := range parts {
		switch {
		case p == ":project":
			parts[i] = project
		case p == "*":
			parts[i] = "index.html"
		case strings.HasPrefix(p, ":"):
			parts[i] = cmp.Or(seeded[p[1:]], p[1:])
		}
	}
	return strings.Join(parts, "/")
}

// sweepBody is the body of every write the sweep sends: a well-formed resource, so that a
// refusal is the authorization's and not the body parser's.
var sweepBody = map[string]any{"metadata": map[string]any{"name": "sweep", "description": "sweep"}, "spec": map[string]any{}}

// sweepServer is the API as cmd/temco wires it, with authentication, the codec and
// metrics on, over a database of its own.
type sweepServer struct {
	t      *testing.T
	h      http.Handler
	routes []*echo.Route
	db     *mongo.Database
	header http.Header // sent with every request (X-Temco-Act-As)
}

// newSweepServer: iss nil is the API without authentication (the local stack's).
func newSweepServer(t *testing.T, iss *authtest.Issuer) *sweepServer {
	t.Helper()
	ctx := context.Background()
	var authn *auth.Authenticator
	if iss != nil {
		keyFile := filepath.Join(t.TempDir(), "issuer.pem")
		if err := os.WriteFile(keyFile, iss.PublicKeyPEM(), 0o600); err != nil {
			t.Fatal(err)
		}
		var err error
		if authn, err = auth.New(ctx, auth.Config{Issuer: "https://issuer.test", Audience: "temco", PublicKeyFile: keyFile}); err != nil {
			t.Fatal(err)
		}
	}
	db := testenv.Database(t, api.SharedFerret(), "sweep")
	st, err := store.New(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	contexts, err := appctx.New(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	keys, err := seal.NewKeyring([]string{"test"}, [][]byte{bytes.Repeat([]byte{7}, 32)})
	if err != nil {
		t.Fatal(err)
	}
	// No Temporal client: a refused request never reaches a handler, and one that does
	// fails the sweep anyway.
	workflows := &workflowmgr.Temporal{}
	srv := &api.Server{Store: st, Contexts: contexts, Keys: keys, Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Auth: authn, Registry: metrics.NewRegistry(), Codec: codec.Codec{Keys: keys}, Hosts: []string{"example.com"}, // httptest.NewRequest's
		Controllers: controllers.API(registry.All, controllers.APIDeps{Workflows: workflows}),
		Kinds:       slices.Concat(ncm.Kinds, cacerts.Kinds, workflowmgr.Kinds(workflows))}
	for _, f := range features.All { // every feature's routes, as switched off: no Temporal
		if f.API != nil {
			srv.Extensions = append(srv.Extensions, f.API(feature.Mounting{}))
		}
	}
	e := srv.Handler()
	routes := e.Routes()
	sort.Slice(routes, func(i, j int) bool {
		return routes[i].Path+" "+routes[i].Method < routes[j].Path+" "+routes[j].Method
	})
	return &sweepServer{t: t, h: e, routes: routes, db: db}
}

// do sends a request; body, when not nil, is sent as JSON.
func (s *sweepServer) do(method, path, token string, body any) *httptest.ResponseRecorder {
	var rd io.Reader
	if body != nil {
		data, err := json.Marshal(body)
		if err != nil {
			s.t.Fatal(err)
		}
		rd = bytes.NewReader(data)
	}
	req := httptest.NewRequest(method, path, rd)
	if body != nil {
		req.Header.Set(echo.HeaderContentType, echo.MIMEApplicationJSON)
	}
	if token != "" {
		req.Header.Set(echo.HeaderAuthorization, "Bearer "+token)
	}
	for k, v := range s.header {
		req.Header[k] = v
	}
	rec := httptest.NewRecorder()
	s.h.ServeHTTP(rec, req)
	return rec
}

// want sends a request that must answer code.
func (s *sweepServer) want(method, path, token string, body any, code int) {
	s.t.Helper()
	if rec := s.do(method, path, token, body); rec.Code != code {
		s.t.Fatalf("%s %s: status %d, want %d: %s", method, path, rec.Code, code, rec.Body)
	}
}

// seed creates projects pa and pb, and gives pb's resources, and the global ones a tenant
// may not read, content carrying marker.
func (s *sweepServer) seed(admin, marker string) {
	s.t.Helper()
	res := func(name string, spec map[string]any) map[string]any {
		if spec == nil {
			spec = map[string]any{}
		}
		return map[string]any{"metadata": map[string]any{"name": name, "description": marker}, "spec": spec}
	}
	s.want("POST", "/v2/projects", admin, res("pa", nil), 201)
	s.want("POST", "/v2/projects", admin, res("pb", nil), 201)
	s.want("POST", "/v2/projects/pb/composite-apps", admin, res("ca", map[string]any{"compositeAppVersion": "v1"}), 201)
	s.want("POST", "/v2/projects/pb/composite-apps/ca/v1/deployment-intent-groups", admin, res("dig", map[string]any{"compositeProfile": "cprof", "version": "r1", "logicalCloud": "lc"}), 201)
	s.want("POST", "/v2/projects/pb/logical-clouds", admin, res("lc", map[string]any{"level": "0"}), 201)
	s.want("POST", "/v2/cluster-providers", admin, res("cp", nil), 201)
	s.seedCluster(admin, res("c1", nil), []byte(api.TestKubeconfig))
	s.want("POST", "/v2/cluster-providers/cp/clusters/c1/kv-pairs", admin, res("kv", map[string]any{"kv": []any{map[string]any{"secret": marker}}}), 201)
	s.want("POST", "/v2/controllers", admin, res("ctl", map[string]any{"type": "action", "priority": 1}), 201)
}

// seedCluster registers a cluster of provider cp, as emcoctl does: metadata and, unless
// nil, a kubeconfig.
func (s *sweepServer) seedCluster(admin string, metadata map[string]any, kubeconfig []byte) {
	s.t.Helper()
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	md, _ := json.Marshal(metadata)
	_ = mw.WriteField("metadata", string(md))
	if kubeconfig != nil {
		fw, _ := mw.CreateFormFile("file", "kubeconfig")
		_, _ = fw.Write(kubeconfig)
	}
	_ = mw.Close()
	req := httptest.NewRequest("POST", "/v2/cluster-providers/cp/clusters", &buf)
	req.Header.Set(echo.HeaderContentType, mw.FormDataContentType())
	req.Header.Set(echo.HeaderAuthorization, "Bearer "+admin)
	rec := httptest.NewRecorder()
	s.h.ServeHTTP(rec, req)
	if rec.Code != 201 {
		s.t.Fatalf("register cluster: %d %s", rec.Code, rec.Body)
	}
}

// seedAgent registers cluster edge of provider cp in agent mode and joins its agent: the
// agent's credential.
func (s *sweepServer) seedAgent(admin string) string {
	s.t.Helper()
	s.seedCluster(admin, map[string]any{"metadata": map[string]any{"name": "edge"}, "spec": map[string]any{"access": "agent"}}, nil)
	var tok, cred struct{ Token, Credential string }
	for _, step := range []struct {
		path, token string
		out         any
	}{{"/v2/cluster-providers/cp/clusters/edge/agent-token", admin, &tok}, {"/v2/agent/join", "", &cred}} {
		if step.token == "" {
			step.token = tok.Token
		}
		rec := s.do("POST", step.path, step.token, map[string]any{})
		if rec.Code >= 300 || json.Unmarshal(rec.Body.Bytes(), step.out) != nil {
			s.t.Fatalf("POST %s: %d %s", step.path, rec.Code, rec.Body)
		}
	}
	if cred.Credential == "" {
		s.t.Fatal("the join gave no credential")
	}
	return cred.Credential
}

// documents is every document of every collection, as one string.
func (s *sweepServer) documents() string {
	s.t.Helper()
	ctx := context.Background()
	names, err := s.db.ListCollectionNames(ctx, bson.D{})
	if err != nil {
		s.t.Fatal(err)
	}
	sort.Strings(names)
	var b strings.Builder
	for _, name := range names {
		cur, err := s.db.Collection(name).Find(ctx, bson.D{}, options.Find().SetSort(bson.D{{Key: "_id", Value: 1}}))
		if err != nil {
			s.t.Fatal(err)
		}
		var docs []bson.Raw
		if err := cur.All(ctx, &docs); err != nil {
			s.t.Fatal(err)
		}
		fmt.Fprintf(&b, "%s: %d documents\n", name, len(docs))
		for _, d := range docs {
			b.WriteString(d.String() + "\n")
		}
	}
	return b.String()
}

// refusal checks that rec is the API's JSON error {"message"} with code, its message says
// want, and nothing in it carries marker.
func refusal(rec *httptest.ResponseRecorder, code int, want, marker string) error {
	body := rec.Body.String()
	if strings.Contains(body, marker) || strings.Contains(fmt.Sprint(rec.Header()), marker) {
		return fmt.Errorf("answered %d with seeded content: %s", rec.Code, body)
	}
	if rec.Code != code {
		return fmt.Errorf("status %d, want %d: %s", rec.Code, code, body)
	}
	var e map[string]any
	if err := json.Unmarshal(rec.Body.Bytes(), &e); err != nil {
		return fmt.Errorf("body %q is not a JSON object: %v", body, err)
	}
	msg, _ := e["message"].(string)
	if len(e) != 1 || !strings.Contains(msg, want) {
		return fmt.Errorf("body %s is not an error saying %q", body, want)
	}
	return nil
}

// sweep sends every route sweeps selects, :project filled with project, and requires
// each to be refused with code and message, revealing nothing of marker; it answers how
// many it sent.
func (s *sweepServer) sweep(t *testing.T, sweeps func(method, route string) bool, token, project string, code int, message, marker string) int {
	t.Helper()
	swept := 0
	for _, r := range s.routes {
		if !sweeps(r.Method, r.Path) {
			continue
		}
		swept++
		var body any
		if r.Method == http.MethodPost || r.Method == http.MethodPut || r.Method == http.MethodPatch {
			body = sweepBody
		}
		path := fillPath(r.Path, project)
		if err := refusal(s.do(r.Method, path, token, body), code, message, marker); err != nil {
			t.Errorf("%s %s (route %s): %v", r.Method, path, r.Path, err)
		}
	}
	return swept
}

// Every route refuses a caller without a token, a tenant of another project and a tenant
// on admin-only routes, with the API's JSON error, revealing and changing nothing.
func TestSweepEveryRouteRefusesWhomThePolicyRefuses(t *testing.T) {
	iss, err := authtest.New("https://issuer.test", "temco")
	if err != nil {
		t.Fatal(err)
	}
	s := newSweepServer(t, iss)
	if len(s.routes) < 100 {
		t.Fatalf("the route table holds %d routes: the enumeration is broken", len(s.routes))
	}
	for route := range tenantReads {
		if !slices.ContainsFunc(s.routes, func(r *echo.Route) bool { return r.Path == route }) {
			t.Errorf("tenantReads names %s, which is no route", route)
		}
	}
	// The agents' routes, each swept below as agent-only (they are atLeast's count): a
	// route left out of the table, or moved out of /v2/agent/, shows here.
	for _, route := range agentRoutes {
		if !agentRoute(route) || !slices.ContainsFunc(s.routes, func(r *echo.Route) bool { return r.Path == route }) {
			t.Errorf("%s is not an agent's route of the table", route)
		}
	}
	admin := iss.Token("root", []string{"admin"}, nil)
	alice := iss.Token("alice", []string{"project:pa"}, nil)
	ctl := iss.Token("ext-controller", []string{"controller"}, nil)
	marker := "sweep-marker-" + rand.Text()
	s.seed(admin, marker)
	if rec := s.do("GET", "/v2/projects/pb", admin, nil); !strings.Contains(rec.Body.String(), marker) {
		t.Fatalf("project pb does not show the marker, so a leak of it would go unseen: %d %s", rec.Code, rec.Body)
	}
	edge := s.seedAgent(admin)
	before := s.documents()

	for _, tc := range []struct {
		name           string
		token, project string // project names :project
		sweeps         func(method, route string) bool
		code           int
		message        string
		atLeast        int // fewer swept routes means the enumeration is broken
	}{
		{"no token is refused", "", "pb",
			func(_, route string) bool { return !api.IsPublicRoute(route) },
			401, "authentication required", 200},
		{"a tenant of another project is refused", alice, "pb",
			func(_, route string) bool { return strings.Contains(route, "/:project") },
			403, `project "pb" is not granted to "alice"`, 150},
		{"a tenant is refused admin-only routes", alice, "pa",
			func(method, route string) bool {
				return !api.IsPublicRoute(route) && !tenantMay(method, route) && !agentRoute(route)
			},
			403, "requires the admin role", 50},
		{"an agent is refused all but the agents' routes", edge, "pb",
			func(_, route string) bool { return !api.IsPublicRoute(route) && !agentRoute(route) },
			403, "refused to an agent", 250},
		{"an admin is refused the agents' routes", admin, "pb",
			func(_, route string) bool { return agentRoute(route) && route != "/v2/agent/join" },
			403, "requires an agent's credential", len(agentRoutes)},
		{"a tenant is refused the agents' routes", alice, "pa",
			func(_, route string) bool { return agentRoute(route) && route != "/v2/agent/join" },
			403, "requires an agent's credential", len(agentRoutes)},
		{"a controller is refused the agents' routes", ctl, "pb",
			func(_, route string) bool { return agentRoute(route) && route != "/v2/agent/join" },
			403, "requires an agent's credential", len(agentRoutes)},
		{"a JWT is refused the join", admin, "pb",
			func(_, route string) bool { return route == "/v2/agent/join" },
			401, "join token", 1},
		{"a controller is refused all but the contexts' controller views", ctl, "pb",
			func(_, route string) bool {
				return !api.IsPublicRoute(route) && !strings.HasPrefix(route, "/v2/contexts/") && route != "/v2/session" && !agentRoute(route)
			},
			403, "requires the admin role", 250},
	} {
		t.Run(tc.name, func(t *testing.T) {
			swept := s.sweep(t, tc.sweeps, tc.token, tc.project, tc.code, tc.message, marker)
			t.Logf("swept %d of %d routes", swept, len(s.routes))
			if swept < tc.atLeast {
				t.Errorf("swept %d routes, expected at least %d: the route enumeration is broken", swept, tc.atLeast)
			}
		})
	}

	t.Run("a controller reaches the contexts' controller views", func(t *testing.T) {
		if rec := s.do("GET", "/v2/contexts/nosuch/steps/0/apps", ctl, nil); rec.Code != http.StatusNotFound {
			t.Errorf("a controller's view of a missing context: %d %s, want 404", rec.Code, rec.Body)
		}
		if err := refusal(s.do("GET", "/v2/contexts/nosuch/steps/0/apps", alice, nil), 403, "requires the admin role", marker); err != nil {
			t.Errorf("a tenant's: %v", err)
		}
	})

	t.Run("public routes answer without a token", func(t *testing.T) {
		swept := 0
		for _, r := range s.routes {
			if !api.IsPublicRoute(r.Path) {
				continue
			}
			swept++
			path := fillPath(r.Path, "pb")
			rec := s.do(r.Method, path, "", nil)
			if rec.Code >= 400 || strings.Contains(rec.Body.String(), marker) {
				t.Errorf("%s %s without a token: %d %.200s", r.Method, path, rec.Code, rec.Body)
			}
		}
		t.Logf("swept %d public routes", swept)
		if swept < 4 {
			t.Errorf("swept %d public routes: the probes, metrics, API reference and dashboard are missing", swept)
		}
	})

	if after := s.documents(); after != before {
		t.Errorf("the refused requests changed the store:\nbefore:\n%s\nafter:\n%s", before, after)
	}
}

// temco hub acts for a namespace's project with its own token, an admin's (or with none,
// where authentication is off), narrowed by X-Temco-Act-As: every route then refuses it
// exactly as it refuses a tenant of that project, revealing and changing nothing; a
// tenant cannot narrow itself to a project it lacks.
func TestSweepActingAsAProjectIsThatProjectsTenant(t *testing.T) {
	iss, err := authtest.New("https://issuer.test", "temco")
	if err != nil {
		t.Fatal(err)
	}
	admin := iss.Token("temco-hub", []string{"admin"}, nil)
	for _, c := range []struct {
		name, token, subject string
		iss                  *authtest.Issuer
	}{
		{"an admin's token", admin, "temco-hub as project:pa", iss},
		{"authentication off", "", "project:pa", nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := newSweepServer(t, c.iss)
			marker := "sweep-marker-" + rand.Text()
			s.seed(admin, marker)
			before := s.documents()
			s.header = http.Header{api.HeaderActAs: {"project:pa"}}
			for _, tc := range []struct {
				name    string
				project string
				sweeps  func(method, route string) bool
				message string
				atLeast int
			}{
				{"another project's routes", "pb", func(_, route string) bool { return strings.Contains(route, "/:project") },
					fmt.Sprintf(`project "pb" is not granted to %q`, c.subject), 150},
				{"admin-only routes", "pa", func(method, route string) bool {
					return !api.IsPublicRoute(route) && !tenantMay(method, route) && !agentRoute(route)
				}, "requires the admin role", 50},
				{"the agents' routes", "pa", func(_, route string) bool { return agentRoute(route) && route != "/v2/agent/join" },
					"requires an agent's credential", len(agentRoutes)},
			} {
				if swept := s.sweep(t, tc.sweeps, c.token, tc.project, http.StatusForbidden, tc.message, marker); swept < tc.atLeast {
					t.Errorf("%s: swept %d routes, expected at least %d", tc.name, swept, tc.atLeast)
				}
			}
			if rec := s.do("GET", "/v2/projects/pa", c.token, nil); rec.Code != http.StatusOK {
				t.Errorf("the project it acts as: %d %s", rec.Code, rec.Body)
			}
			if after := s.documents(); after != before {
				t.Errorf("the refused requests changed the store:\nbefore:\n%s\nafter:\n%s", before, after)
			}
		})
	}
	t.Run("a tenant narrows itself only to its own project", func(t *testing.T) {
		s := newSweepServer(t, iss)
		alice := iss.Token("alice", []string{"project:pa"}, nil)
		s.header = http.Header{api.HeaderActAs: {"project:pb"}}
		if err := refusal(s.do("GET", "/v2/projects", alice, nil), 403, `X-Temco-Act-As: project "pb" is not granted to "alice"`, "\x00"); err != nil {
			t.Error(err)
		}
		for _, bad := range [][]string{{"pa"}, {"project:"}, {"project:../pb"}, {"project:pa", "project:pa"}} {
			s.header = http.Header{api.HeaderActAs: bad}
			if err := refusal(s.do("GET", "/v2/projects", alice, nil), 400, "X-Temco-Act-As", "\x00"); err != nil {
				t.Errorf("%q: %v", bad, err)
			}
		}
	})
}
