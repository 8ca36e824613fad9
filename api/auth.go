package api

import (
	"context"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	temco "github.com/temco/temco/client"
	"github.com/temco/temco/dashboard"
	"github.com/temco/temco/internal/adapters/auth"
	"github.com/temco/temco/internal/core/agent"
	"github.com/temco/temco/internal/core/model"
)

const principalKey = "principal"

// publicPaths answer without a token: probes, metrics and the API's own reference.
var publicPaths = map[string]bool{"/healthz": true, "/readyz": true, "/metrics": true, "/v2/openapi.yaml": true}

// isPublic reports whether route answers without a token: publicPaths, and the
// dashboard's static files with the redirect to them.
func isPublic(route string) bool {
	return publicPaths[route] || strings.HasPrefix(route, dashboard.Path) || route == strings.TrimSuffix(dashboard.Path, "/")
}

// HeaderActAs narrows a request to one project's authority: "project:<name>". temco hub
// sends it with every request it makes for an object of a namespace bound to a project,
// so that the API applies exactly that tenant's rules to what the object declares,
// whatever the hub's own token may do (docs/hub.md, "Tenancy").
const HeaderActAs = temco.HeaderActAs

// authenticate requires a valid bearer token on every other route, narrows the caller to
// the project HeaderActAs names, and applies the authorization rules of authorize.
// Without an Authenticator every caller is an admin; narrowed, a tenant all the same.
// An agent's credential (agents.go) is checked whether authentication is on or off: it
// names the cluster the agent may speak for, and nothing else. The join route takes a
// join token, which its handler checks.
func (s *Server) authenticate(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if isPublic(c.Path()) {
			return next(c)
		}
		raw, sent := bearer(c)
		var p *auth.Principal
		switch {
		case c.Path() == "/v2"+routeAgentJoin:
			if !strings.HasPrefix(raw, agent.JoinPrefix) {
				c.Response().Header().Set(echo.HeaderWWWAuthenticate, `Bearer realm="temco"`)
				return httpErr(http.StatusUnauthorized, "authentication required: send Authorization: Bearer <the cluster's join token>")
			}
			return next(c)
		case agent.IsCredential(raw):
			var err error
			if p, err = s.agentPrincipal(c.Request().Context(), raw); err != nil {
				c.Response().Header().Set(echo.HeaderWWWAuthenticate, `Bearer realm="temco", error="invalid_token"`)
				return err
			}
		case s.Auth != nil:
			if !sent {
				c.Response().Header().Set(echo.HeaderWWWAuthenticate, `Bearer realm="temco"`)
				return httpErr(http.StatusUnauthorized, "authentication required: send Authorization: Bearer <token>")
			}
			var err error
			if p, err = s.Auth.Authenticate(c.Request().Context(), raw); err != nil {
				c.Response().Header().Set(echo.HeaderWWWAuthenticate, `Bearer realm="temco", error="invalid_token"`)
				return httpErr(http.StatusUnauthorized, "%v", err)
			}
		}
		p, err := actAs(c, p)
		if err != nil {
			return err
		}
		if p == nil { // authentication off, nobody narrowed: an admin
			return next(c)
		}
		c.Set(principalKey, p)
		c.SetRequest(c.Request().WithContext(context.WithValue(c.Request().Context(), principalCtxKey{}, p)))
		if err := authorize(c, p); err != nil {
			return err
		}
		return next(c)
	}
}

// bearer is the request's bearer token, and whether one was sent.
func bearer(c echo.Context) (string, bool) {
	raw, ok := strings.CutPrefix(c.Request().Header.Get(echo.HeaderAuthorization), "Bearer ")
	raw = strings.TrimSpace(raw)
	return raw, ok && raw != ""
}

// actAs narrows p (nil: authentication is off, an admin) to the project HeaderActAs
// names; without the header p is unchanged.
func actAs(c echo.Context, p *auth.Principal) (*auth.Principal, error) {
	values := c.Request().Header.Values(HeaderActAs)
	switch {
	case len(values) == 0:
		return p, nil
	case len(values) > 1:
		return nil, badRequest("%s is sent %d times: send it once", HeaderActAs, len(values))
	}
	project, ok := strings.CutPrefix(values[0], auth.ProjectRolePrefix)
	if !ok {
		return nil, badRequest("%s %.64q is invalid: it is %s<project>", HeaderActAs, values[0], auth.ProjectRolePrefix)
	}
	if err := model.ValidateName(HeaderActAs+" project", project); err != nil {
		return nil, badRequest("%v", err)
	}
	if p == nil {
		p = auth.Anonymous()
	}
	if p.Agent != "" {
		return nil, httpErr(http.StatusForbidden, "%s: an agent's credential acts for its cluster alone", HeaderActAs)
	}
	narrowed, ok := p.AsProject(project)
	if !ok {
		return nil, httpErr(http.StatusForbidden, "%s: project %q is not granted to %q", HeaderActAs, project, p.Subject)
	}
	return narrowed, nil
}

// authorize is the whole access policy, by route (the dashboard's static files need no
// token: they hold no data, and the page sends the token with each API call):
//   - an admin may do everything;
//   - a tenant may list projects, diagnostics and the fleet and its clusters' grid (it sees only its own) and read and
//     change everything under a project it is granted, except writing logical clouds: a
//     cloud's level and permissions decide what credentials temco issues on clusters, so
//     only admins set them;
//   - a tenant may read cluster providers, clusters and their labels (placement names them);
//   - an external intent controller (the controller role) may use the contexts' controller
//     views, /v2/contexts/... (read a step's apps, objects and clusters; record its edits);
//   - an agent (its cluster's credential) may use /v2/agent/..., for its own cluster, and
//     nothing else; nobody else may (the handlers check it again: callingAgent);
//   - everything else (registering providers, clusters, controllers; the codec) is admin-only.
//
// Unknown routes pass through to their 404.
func authorize(c echo.Context, p *auth.Principal) error {
	route, method := c.Path(), c.Request().Method
	agentRoute := strings.HasPrefix(route, "/v2"+routeAgent+"/")
	switch {
	case p.Agent != "" && agentRoute:
		return nil
	case p.Agent != "":
		return httpErr(http.StatusForbidden, "%s %s is refused to an agent: its credential reaches /v2/agent/... only", method, route)
	case agentRoute:
		return httpErr(http.StatusForbidden, "%s %s requires an agent's credential", method, route)
	case p.Admin:
		return nil
	}
	read := method == http.MethodGet || method == http.MethodHead
	switch {
	case p.Controller && strings.HasPrefix(route, "/v2"+routeContext):
		return nil // the controller views (controlview.go)
	case p.Controller && !p.Tenant() && route != "/v2/session":
		return httpErr(http.StatusForbidden, "%s %s requires the admin role (a controller's token reaches /v2/contexts/... only)", method, route)
	case route == "/v2/session" || (route == "/v2/projects" || route == "/v2"+routeDiagnostics || route == "/v2"+routeFleet ||
		route == "/v2"+routeFleetClusters) && read:
		return nil // a tenant lists only its projects, and only their diagnostics and DIGs (the grid: the clusters it may read, with its DIGs' states)
	case strings.HasPrefix(route, "/v2/projects/:project"):
		project := c.Param("project")
		if !p.CanAccessProject(project) {
			return httpErr(http.StatusForbidden, "project %q is not granted to %q", project, p.Subject)
		}
		if strings.HasPrefix(route, "/v2/projects/:project/logical-clouds") && !read {
			return httpErr(http.StatusForbidden, "changing logical clouds requires the admin role")
		}
		return nil
	case read && (route == "/v2/cluster-providers" || route == "/v2/cluster-providers/:clusterProvider" ||
		strings.HasPrefix(route, "/v2"+routeClusters) && !strings.Contains(route, "/kv-pairs") && !strings.Contains(route, "/agent")):
		return nil
	case route == "" || route == "/*": // no route matched
		return nil
	}
	return httpErr(http.StatusForbidden, "%s %s requires the admin role", method, route)
}

type principalCtxKey struct{}

// CallerIsAdmin reports whether the caller of the request ctx belongs to may do
// everything: an admin, or anyone when authentication is off. For checks that depend on
// who asks (what a tenant may start or sign).
func CallerIsAdmin(ctx context.Context) bool {
	p, ok := ctx.Value(principalCtxKey{}).(*auth.Principal)
	return !ok || p.Admin
}

// principal is the authenticated caller, or nil when authentication is off.
func principal(c echo.Context) *auth.Principal {
	p, _ := c.Get(principalKey).(*auth.Principal)
	return p
}
