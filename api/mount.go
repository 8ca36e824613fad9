package api

import (
	"context"
	"log/slog"
	"net/http"
	"reflect"
	"strings"

	"github.com/labstack/echo/v4"
	"golang.org/x/sync/errgroup"

	"github.com/temco/temco/internal/core/appctx"
	"github.com/temco/temco/internal/core/lifecycle"
	"github.com/temco/temco/internal/core/model"
	"github.com/temco/temco/internal/core/seal"
	"github.com/temco/temco/internal/core/store"
)

// The kit through which a side feature (features/<name>) adds its part to the api. Its
// routes.go builds an Extension whose Mount, called once as the Handler is built,
// registers the feature's routes (Mount.Route, documented in the OpenAPI document as
// temco's own are) and its hooks on the DIG: a check of its part of a DIG's spec, what
// follows a DIG's create, replace and delete, and a section of a DIG's status. Its
// handlers read the request with the Mount's helpers and answer with the errors below.
//
// An Extension is built and mounted for every feature, switched off or not: a feature
// switched off mounts its routes still, and they answer that it is off (503), so that the
// routes and the OpenAPI document are the same whatever is switched off.

// Extension is what a side feature adds to the api.
type Extension struct {
	// Name is the feature's (features.Feature.Name).
	Name string
	// Mount registers its routes and DIG hooks.
	Mount func(m *Mount)
}

// Mount is an Extension's handle on the api while it mounts.
type Mount struct {
	s *Server
	g *echo.Group
}

// Doc documents a route: the exported form of opDoc, whose comments say what each
// field means.
type Doc struct {
	Method, Path, Summary, Description string
	Body                               reflect.Type // JSON request body (nil: none)
	BodyOptional, Multipart, Bulk      bool
	Code                               int          // success status
	Response                           reflect.Type // success body (nil: none)
	Query                              []string
	Pages, LiveReads, Creates          bool
	NoOwner, OwnerRequired             bool
	// List: a list answered with Mount.List, taking limit and continue, paged.
	List bool
}

func (d Doc) op() opDoc {
	if d.List {
		d.List = false
		return listDoc(d.op())
	}
	return opDoc{method: d.Method, path: d.Path, summary: d.Summary, description: d.Description,
		body: d.Body, bodyOptional: d.BodyOptional, multipart: d.Multipart, bulk: d.Bulk, code: d.Code,
		response: d.Response, query: d.Query, pages: d.Pages, liveReads: d.LiveReads, creates: d.Creates,
		noOwner: d.NoOwner, ownerRequired: d.OwnerRequired}
}

// Route registers h below /v2 at d's method and path, with the api's authorization,
// ownership and body rules, and documents it.
func (m *Mount) Route(d Doc, h echo.HandlerFunc) { m.s.route(m.g, d.op(), h) }

// CheckDIG adds a validation of a DIG's spec, run on its every create and replace
// (after the names, before the image pinning's), answering its error (BadRequest).
func (m *Mount) CheckDIG(check func(spec *model.DIGSpec) error) {
	m.s.hooks.checkDIG = append(m.s.hooks.checkDIG, check)
}

// DIGChanged adds what follows a DIG's successful create or replace; its error (an
// Unavailable the caller may retry) is the request's answer, the DIG stored.
func (m *Mount) DIGChanged(changed func(ctx context.Context, digID string) error) {
	m.s.hooks.digChanged = append(m.s.hooks.digChanged, changed)
}

// DIGDeleted adds what follows a DIG's delete (ctx outlives the request); it logs its
// errors itself.
func (m *Mount) DIGDeleted(deleted func(ctx context.Context, digID string)) {
	m.s.hooks.digDeleted = append(m.s.hooks.digDeleted, deleted)
}

// DIGStatus adds the section name of a DIG's status (of its context ctxID, q.DIG the
// DIG's id): read answers it, nil for none; doc is its type, for the OpenAPI document.
// The answers keep their fields' order: a section has its place in each answer that shows
// it, a field typed any whose JSON name is name, in a DIG's status (statusResult) and the
// dashboard's view of a DIG (dashboardView), read only for those that have it (the drift
// section is in the status alone, the autoscaler's in both). A name neither has panics:
// where a new section goes in the answers is the api's to say, by that field.
func (m *Mount) DIGStatus(name string, doc reflect.Type, read func(ctx context.Context, ctxID string, q StatusQuery) (any, error)) {
	sec := statusSection{name: name, doc: doc, read: read,
		status: sectionField[statusResult](name), dashboard: sectionField[dashboardView](name)}
	if sec.status == nil && sec.dashboard == nil {
		panic("api: a DIG's status has no section " + name + ": add a field typed any of that JSON name to statusResult or dashboardView")
	}
	m.s.hooks.status = append(m.s.hooks.status, sec)
}

// Kind mounts a resource kind (KindDef) with the generic handlers: create, list, get,
// replace, delete, documented.
func (m *Mount) Kind(k ResourceKind) { k.mount(m.g, m.s) }

// PathID is the store id the request's path names along route (its parameters filled,
// 400 for an invalid name), e.g. route lifecycle.RouteDIG.
func (m *Mount) PathID(c echo.Context, route string) (string, error) { return fill(c, route) }

// Get reads the resource the request's path names along route (404 when none).
func (m *Mount) Get(c echo.Context, route string) (*store.Doc, error) {
	id, err := fill(c, route)
	if err != nil {
		return nil, err
	}
	d, err := m.s.Store.Get(c.Request().Context(), id)
	if err != nil {
		return nil, fromStore(err)
	}
	return d, nil
}

// List answers a page of the resources q selects, as the api's lists answer (limit and
// continue, sorted by name), named as items of the collection at route.
func (m *Mount) List(c echo.Context, route string, q store.Query) error {
	page, err := parseListPage(c)
	if err != nil {
		return err
	}
	coll, err := fill(c, route)
	if err != nil {
		return err
	}
	keys := collKeys(coll)
	docs, err := m.s.Store.List(c.Request().Context(), page.query(q, keys))
	if err != nil {
		return err
	}
	return listAnswer(c, page, docs, keys)
}

// Upsert stores the resource id of kind, named name, with body: created (owned by the
// request's owner) when none is stored, else its body replaced (its state kept). secret
// is what it keeps sealed, from what is stored (nil on create); a write lost to another
// is tried again. Store errors are answered as the resource routes answer them.
func (m *Mount) Upsert(ctx context.Context, id, kind, name, body string, secret func(stored []byte) ([]byte, error)) error {
	for attempt := 1; ; attempt++ {
		old, err := m.s.Store.Get(ctx, id)
		if err != nil && store.CodeOf(err) != store.ErrNotFound {
			return fromStore(err)
		}
		if err == nil {
			old.Body = body
			if old.Secret, err = secret(old.Secret); err != nil {
				return err
			}
			err = m.s.Store.Update(ctx, old)
		} else {
			d := &store.Doc{ID: id, Scope: scopeOf(id), Kind: kind, Name: name, Body: body, Owner: ownerOf(ctx)}
			if d.Secret, err = secret(nil); err != nil {
				return err
			}
			err = m.s.Store.Create(ctx, d)
		}
		if lostTo(err, http.StatusOK) && attempt < maxReplaceAttempts {
			continue
		}
		if err != nil {
			return fromStore(err)
		}
		return nil
	}
}

// Shown is a stored resource's body as the api answers it (with its owner, if any).
func Shown(d *store.Doc) []byte { return shown(d) }

// MustExist refuses (404) a resource id that is not stored.
func (m *Mount) MustExist(ctx context.Context, id string) error { return m.s.mustExist(ctx, id) }

// WakeAfterChange wakes the workflow of resource id after its change (a Changed hook):
// wake starts it (start) when the resource exists, what naming it in the answer (503) if
// it could not be; a resource gone leaves it to end, the error logged.
func (m *Mount) WakeAfterChange(ctx context.Context, id, what string, wake func(ctx context.Context, start bool) error) error {
	return wakeAfterChange(ctx, m.s, id, what, wake)
}

// Store, Contexts, Keys, Ops and Log are the api's.
func (m *Mount) Store() *store.Store     { return m.s.Store }
func (m *Mount) Contexts() *appctx.Store { return m.s.Contexts }
func (m *Mount) Keys() *seal.Keyring     { return m.s.Keys }
func (m *Mount) Ops() Operator           { return m.s.Ops }
func (m *Mount) Log() *slog.Logger       { return m.s.Log }

// LoadDIG reads the DIG the request's path names, then its body with readBody (nil:
// none), then its document and state history (404 for a DIG that does not exist).
func (m *Mount) LoadDIG(c echo.Context, readBody func(lifecycle.Target) error) (lifecycle.Target, lifecycle.StateInfo, error) {
	var checks []func(lifecycle.Target) error
	if readBody != nil {
		checks = append(checks, readBody)
	}
	dig, _, info, err := m.s.loadTarget(c, digRef, checks...)
	return dig, info, err
}

// ReadyFor refuses (409) an operation op of dig whose parts are missing or invalid, as
// the operation's route does.
func (m *Mount) ReadyFor(ctx context.Context, dig lifecycle.Target, op string) error {
	return m.s.readyFor(ctx, dig, op)
}

// ReadJSON decodes the request's JSON body into v, answering 400 (or 413, 415) as the
// api's routes do.
func ReadJSON(c echo.Context, v any) error { return readJSON(c, v) }

// Unavailable is 503 with the message: what the caller may retry, or a feature switched off.
func Unavailable(format string, args ...any) error {
	return httpErr(http.StatusServiceUnavailable, format, args...)
}

// OperationErr answers a starter's error as the lifecycle routes do: a refusal 409, an
// invalid request 400, Temporal not answering in time 503.
func OperationErr(err error) error { return operationErr(err) }

// FromStore answers a store error as the resource routes do (404, 409).
func FromStore(err error) error { return fromStore(err) }

// Describe names a resource of the store by its id, as the api's messages do.
func Describe(id string) string { return describe(id) }

// StatusQuery is what a status request asks of a DIG status's sections: the DIG's store
// id, and the apps and clusters (provider+cluster) it shows (none: all; the dashboard's
// view asks for all).
type StatusQuery struct {
	DIG            string
	Apps, Clusters []string
}

// hooks are the Extensions' hooks on the DIG, set as the Handler mounts them.
type hooks struct {
	checkDIG   []func(*model.DIGSpec) error
	digChanged []func(context.Context, string) error
	digDeleted []func(context.Context, string)
	status     []statusSection
}

type statusSection struct {
	name string
	doc  reflect.Type
	read func(context.Context, string, StatusQuery) (any, error)
	// status and dashboard are the section's field in statusResult and dashboardView
	// (nil: that answer has none).
	status, dashboard []int
}

// sectionField is the index of the field of V typed any whose JSON name is name (nil:
// none).
func sectionField[V any](name string) []int {
	for _, f := range reflect.VisibleFields(reflect.TypeFor[V]()) {
		tag, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if tag == name && f.Type == reflect.TypeFor[any]() {
			return f.Index
		}
	}
	return nil
}

// setSection sets the field at index of *out to v, when v is a section (a nil pointer is
// none: it stays nil, left out or null as the field's tag says).
func setSection(out any, index []int, v any) {
	if v == nil {
		return
	}
	if rv := reflect.ValueOf(v); rv.Kind() == reflect.Pointer && rv.IsNil() {
		return
	}
	reflect.ValueOf(out).Elem().FieldByIndex(index).Set(reflect.ValueOf(v))
}

// mountExtensions mounts every Extension.
func (s *Server) mountExtensions(g *echo.Group) {
	s.hooks = hooks{}
	for _, x := range s.Extensions {
		if x.Mount != nil {
			x.Mount(&Mount{s: s, g: g})
		}
	}
}

// wakeAfterChange wakes the workflow of resource id after a change: started when the
// resource exists (what names it in the answer if it cannot be), left to end when not.
func wakeAfterChange(ctx context.Context, s *Server, id, what string, wake func(ctx context.Context, start bool) error) error {
	exists, err := s.Store.Exists(ctx, id)
	if err != nil {
		return err
	}
	if err := wake(ctx, exists); err != nil {
		s.Log.Warn("wake "+what, "resource", id, "error", err)
		if exists {
			return httpErr(http.StatusServiceUnavailable, "%s is stored, but its %s could not be started (%v): send the request again", describe(id), what, err)
		}
	}
	return nil
}

// checkDIGExtensions runs the Extensions' checks of a DIG's spec.
func (s *Server) checkDIGExtensions(sp *model.DIGSpec) error {
	for _, check := range s.hooks.checkDIG {
		if err := check(sp); err != nil {
			return err
		}
	}
	return nil
}

// withDIGHooks runs a DIG's change hook, then the Extensions'.
func withDIGHooks(changed func(context.Context, *Server, string) error) func(context.Context, *Server, string) error {
	return func(ctx context.Context, s *Server, id string) error {
		if err := changed(ctx, s, id); err != nil {
			return err
		}
		for _, h := range s.hooks.digChanged {
			if err := h(ctx, id); err != nil {
				return err
			}
		}
		return nil
	}
}

// deleteDIG is the DIG's delete, then the Extensions' hooks.
func (s *Server) deleteDIG(del echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if err := del(c); err != nil || c.Response().Status != http.StatusNoContent {
			return err
		}
		id, err := fill(c, routeDIG)
		if err != nil {
			return nil
		}
		for _, h := range s.hooks.digDeleted {
			h(context.WithoutCancel(c.Request().Context()), id)
		}
		return nil
	}
}

// statusSections fills the Extensions' sections of a DIG's status.
func (s *Server) statusSections(ctx context.Context, out *statusResult, digID, ctxID string, q statusQuery) error {
	for _, sec := range s.hooks.status {
		if sec.status == nil {
			continue
		}
		v, err := sec.read(ctx, ctxID, StatusQuery{DIG: digID, Apps: q.apps, Clusters: q.clusters})
		if err != nil {
			return err
		}
		setSection(out, sec.status, v)
	}
	return nil
}

// dashboardSections fills the Extensions' sections of the dashboard's view of a DIG, each
// in its goroutine of g.
func (s *Server) dashboardSections(ctx context.Context, g *errgroup.Group, out *dashboardView, digID, ctxID string) {
	for _, sec := range s.hooks.status {
		if sec.dashboard == nil {
			continue
		}
		g.Go(func() error {
			v, err := sec.read(ctx, ctxID, StatusQuery{DIG: digID})
			if err == nil {
				setSection(out, sec.dashboard, v)
			}
			return err
		})
	}
}
