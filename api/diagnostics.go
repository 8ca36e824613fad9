package api

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/temco/temco/internal/core/diagnostics"
	"github.com/temco/temco/internal/core/digstate"
	"github.com/temco/temco/internal/core/lifecycle"
	"github.com/temco/temco/internal/core/model"
	"github.com/temco/temco/internal/core/store"
)

// Diagnostics (temco's own, issue 44): every declared resource — created over REST or by
// temco hub — with where it was declared, whether it was accepted and what temco knows is
// wrong with it. Stored resources are accepted; the hub reports each object's outcome
// (PUT .../declarations), so that one the API refused, which has nothing in the store,
// shows too. The list reads the store and the contexts' headers only: no cluster, no
// Temporal.

const (
	routeDiagnostics  = "/diagnostics"
	routeDeclarations = routeDiagnostics + "/declarations"
	// maxDeclarationBody bounds a report's body: its fields are bounded (the message to
	// 4 KiB), even written with JSON's longest escapes.
	maxDeclarationBody = 64 << 10
)

var diagnosticsQueryParams = []string{"project", "source", "accepted"}

// diagnosticsAnswer is GET /diagnostics: one page of entries, and the counts of all.
type diagnosticsAnswer struct {
	Resources []diagnostics.Entry `json:"resources"`
	// Summary counts every entry of the project (?project=) or of all the caller may see,
	// whatever ?source, ?accepted and the page: its fields are those filters' counts.
	Summary diagnostics.Summary `json:"summary"`
}

// declaredKinds are the top-level resources a declaration makes, by the hub's names.
var declaredKinds = map[string]string{
	model.KindClusterProvider: "ClusterProvider", model.KindCluster: "Cluster", model.KindProject: "Project",
	model.KindLogicalCloud: "LogicalCloud", model.KindCompositeApp: "CompositeApp", model.KindDIG: "DeploymentIntentGroup",
}

// failedStatuses are the context statuses of a failed operation.
var failedStatuses = []string{lifecycle.StatusInstantiateFailed, lifecycle.StatusUpdateFailed, lifecycle.StatusTerminateFailed}

func (s *Server) registerDiagnostics(g *echo.Group) {
	s.route(g, listDoc(opDoc{method: http.MethodGet, path: routeDiagnostics, code: http.StatusOK,
		summary: "Every declared resource: its source (REST or temco hub), whether it was accepted, its errors",
		description: "temco's own. Cluster providers, clusters, projects, logical clouds, composite apps (per version) and DIGs, " +
			"each accepted, with the error of its last operation when that failed; plus every hub object the API refused " +
			"(accepted false, its refusal in errors). Sorted by path, then object. Filters: project, source (rest or hub), " +
			"accepted (true or false). A tenant sees only its projects' entries. summary counts every entry of the project, " +
			"or of all the caller may see, whatever source, accepted and the page.",
		query: diagnosticsQueryParams, response: typeOf[diagnosticsAnswer]()}), s.diagnostics)
	s.route(g, opDoc{method: http.MethodPut, path: routeDeclarations, code: http.StatusNoContent,
		summary: "temco hub's report of one object: the resource it declares and whether the API accepted it",
		description: "temco's own; admin only. Replaces the object's last report. X-Temco-Owner must be \"hub:\" + object " +
			"(400 without it, 409 for another). The message (the API's refusal) is at most 4096 bytes.",
		body: typeOf[diagnostics.Declaration](), noOwner: true, ownerRequired: true}, s.putDeclaration)
	s.route(g, opDoc{method: http.MethodDelete, path: routeDeclarations, code: http.StatusNoContent,
		summary:     "Remove temco hub's report of an object (it was deleted)",
		description: "temco's own; admin only. 204 also when there is none. X-Temco-Owner must be \"hub:\" + object.",
		query:       []string{"object"}, noOwner: true, ownerRequired: true}, s.deleteDeclaration)
}

func (s *Server) declarations() *diagnostics.Store { return diagnostics.Open(s.Store.Database()) }

func (s *Server) putDeclaration(c echo.Context) error {
	c.Request().Body = http.MaxBytesReader(c.Response(), c.Request().Body, maxDeclarationBody)
	var d diagnostics.Declaration
	if err := readJSON(c, &d); err != nil {
		return err
	}
	if err := d.Validate(); err != nil {
		return badRequest("declaration: %v", err)
	}
	if err := reportedByOwner(c, d.Owner()); err != nil {
		return err
	}
	if d.Time.IsZero() {
		d.Time = time.Now().UTC()
	}
	if err := s.declarations().Put(c.Request().Context(), d); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

func (s *Server) deleteDeclaration(c echo.Context) error {
	object := c.QueryParam("object")
	if object == "" {
		return badRequest("object= is required: the declared object, Kind/namespace/name or Kind/name")
	}
	if err := diagnostics.ValidObject(object); err != nil {
		return badRequest("%v", err)
	}
	if err := reportedByOwner(c, diagnostics.OwnerPrefix+object); err != nil {
		return err
	}
	if err := s.declarations().Delete(c.Request().Context(), object); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

// diagnosticsQuery is GET /diagnostics's filters.
type diagnosticsQuery struct {
	project string
	filter  diagnostics.Filter
}

func parseDiagnosticsQuery(c echo.Context) (diagnosticsQuery, error) {
	var q diagnosticsQuery
	for k := range c.QueryParams() {
		if !slices.Contains(diagnosticsQueryParams, k) && !slices.Contains(listQueryParams, k) {
			return q, badRequest("unknown query parameter %q: use %s", k, strings.Join(append(slices.Clone(diagnosticsQueryParams), listQueryParams...), ", "))
		}
	}
	if q.project = c.QueryParam("project"); q.project != "" {
		if err := model.ValidateName("project filter", q.project); err != nil {
			return q, badRequest("%v", err)
		}
	}
	switch v := c.QueryParam("source"); v {
	case "", diagnostics.SourceREST, diagnostics.SourceHub:
		q.filter.Source = v
	default:
		return q, badRequest("source=%q is invalid: use rest or hub", v)
	}
	switch v := c.QueryParam("accepted"); v {
	case "":
	case "true", "false":
		accepted := v == "true"
		q.filter.Accepted = &accepted
	default:
		return q, badRequest("accepted=%q is invalid: use true or false", v)
	}
	return q, nil
}

func (s *Server) diagnostics(c echo.Context) error {
	q, err := parseDiagnosticsQuery(c)
	if err != nil {
		return err
	}
	page, err := parseListPage(c)
	if err != nil {
		return err
	}
	// What the caller may see: an admin everything, a tenant its projects' entries;
	// ?project= narrows either to one project (nothing cluster-scoped).
	var projects []string // nil: all
	clusters := true
	p := principal(c)
	if p != nil && !p.Admin {
		projects, clusters = append([]string{}, p.Projects()...), false // none granted: none
	}
	if q.project != "" {
		if p != nil && !p.CanAccessProject(q.project) {
			return httpErr(http.StatusForbidden, "project %q is not granted to %q", q.project, p.Subject)
		}
		projects, clusters = []string{q.project}, false
	}
	ctx := c.Request().Context()
	stored, err := s.storedEntries(ctx, projects, clusters)
	if err != nil {
		return err
	}
	reports, err := s.declarations().List(ctx, projects)
	if err != nil {
		return err
	}
	all := diagnostics.Merge(stored, reports)
	items, more := diagnostics.Page(q.filter.Select(all), page.after, page.limit)
	if more {
		linkNext(c, items[len(items)-1].Key())
	}
	return c.JSON(http.StatusOK, diagnosticsAnswer{Resources: items, Summary: diagnostics.Summarize(all)})
}

// storedEntries lists the declared resources the store holds: of projects (nil: all of
// them) and, when clusters is set, the cluster providers and their clusters.
func (s *Server) storedEntries(ctx context.Context, projects []string, clusters bool) ([]diagnostics.Entry, error) {
	var docs []*store.Doc
	if clusters {
		providers, err := s.Store.List(ctx, store.Query{Kind: model.KindClusterProvider})
		if err != nil {
			return nil, err
		}
		docs = append(docs, providers...)
		for _, p := range providers {
			cs, err := s.Store.List(ctx, store.Query{Parent: p.ID, Kind: model.KindCluster})
			if err != nil {
				return nil, err
			}
			docs = append(docs, cs...)
		}
	}
	ps, inside, err := s.inProjects(ctx, projects, model.KindLogicalCloud, model.KindCompositeApp, model.KindDIG)
	if err != nil {
		return nil, err
	}
	docs = append(append(docs, ps...), inside...)
	return s.entriesOf(ctx, docs)
}

// entriesOf describes stored resources, each with the error of its last operation when
// that failed (DIGs and logical clouds: their current context's status).
func (s *Server) entriesOf(ctx context.Context, docs []*store.Doc) ([]diagnostics.Entry, error) {
	out := make([]diagnostics.Entry, len(docs))
	contextOf := map[int]string{}
	var ids []string
	for i, d := range docs {
		e := diagnostics.Entry{Kind: declaredKinds[d.Kind], Path: "/v2" + d.ID, Name: d.Name, Source: diagnostics.SourceREST,
			Accepted: true, Errors: []string{}}
		if rest, ok := strings.CutPrefix(d.ID, "/projects/"); ok {
			e.Project, _, _ = strings.Cut(rest, "/")
		}
		if d.Kind == model.KindCompositeApp {
			e.Version = d.ID[strings.LastIndex(d.ID, "/")+1:]
		}
		if d.Owner != "" {
			e.Source, e.Owner = diagnostics.SourceHub, d.Owner
		}
		if d.Kind == model.KindDIG || d.Kind == model.KindLogicalCloud {
			info, err := digstate.Parse(d)
			if err != nil {
				e.Errors = append(e.Errors, err.Error())
			} else if id := info.ContextID(); id != "" {
				contextOf[i] = id
				ids = append(ids, id)
			}
		}
		out[i] = e
	}
	outcomes, err := s.Contexts.Outcomes(ctx, ids)
	if err != nil {
		return nil, err
	}
	for i, id := range contextOf {
		o, ok := outcomes[id]
		if !ok || !slices.Contains(failedStatuses, o.Status) {
			continue
		}
		msg := o.Status
		if o.Error != "" {
			msg += ": " + o.Error
		}
		out[i].Errors = append(out[i].Errors, msg)
	}
	return out, nil
}
