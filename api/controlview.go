package api

import (
	"errors"
	"net/http"
	"reflect"
	"strconv"

	"github.com/labstack/echo/v4"

	"github.com/temco/temco/contract"
	"github.com/temco/temco/contract/remote"
	"github.com/temco/temco/internal/core/appctx"
	"github.com/temco/temco/internal/core/ctxedit"
	"github.com/temco/temco/internal/core/lifecycle"
	"github.com/temco/temco/internal/core/model"
	"github.com/temco/temco/internal/core/store"
)

// The context as a controller step sees it, for controllers outside temco's process
// (contract/remote): what the built-in ones get from the store directly. Admin-only, as
// every route outside projects is.
const (
	routeContext = "/contexts/:context"
	routeStep    = routeContext + "/steps/:step"
)

func (s *Server) registerControlView(g *echo.Group) {
	get := func(path, summary string, resp reflect.Type, query ...string) opDoc {
		return opDoc{method: http.MethodGet, path: path, summary: summary, code: http.StatusOK, response: resp, query: query}
	}
	s.route(g, get(routeStep+"/apps", "A context's apps as a controller step sees them", typeOf[[]contract.App]()),
		s.stepApps)
	s.route(g, get(routeStep+"/apps/:app/resources", "An app's objects (on one cluster) as a controller step sees them",
		typeOf[[]contract.Resource](), "cluster"), s.stepResources)
	s.route(g, get(routeContext+"/clusters", "The clusters of a provider (with a label), for controllers",
		typeOf[[]contract.Cluster](), "provider", "label"), s.contextClusters)
	s.route(g, opDoc{method: http.MethodPut, path: routeStep + "/edits", summary: "Record a controller step's edits",
		body: typeOf[remote.StepEdits](), code: http.StatusNoContent, noOwner: true}, s.putStepEdits)
}

// loadStep computes the context as the step of the path sees it.
func (s *Server) loadStep(c echo.Context) (*ctxedit.State, int, error) {
	step, err := strconv.Atoi(c.Param("step"))
	if err != nil || step < 0 {
		return nil, 0, badRequest("step %q is not a step number", c.Param("step"))
	}
	st, err := ctxedit.Load(c.Request().Context(), s.Contexts, c.Param("context"), step)
	switch {
	case errors.Is(err, appctx.ErrNotFound):
		return nil, 0, httpErr(http.StatusNotFound, "context %q not found", c.Param("context"))
	case errors.Is(err, ctxedit.ErrNoControllers):
		return nil, 0, conflict("context %q was placed without controllers: it has no controller steps", c.Param("context"))
	case err != nil:
		var e *ctxedit.Error
		if errors.As(err, &e) { // a stored layer no longer applies: the context is broken
			return nil, 0, conflict("context %q: %v", c.Param("context"), err)
		}
		return nil, 0, err
	}
	return st, step, nil
}

func (s *Server) stepApps(c echo.Context) error {
	st, _, err := s.loadStep(c)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, ctxedit.AppsOf(st))
}

func (s *Server) stepResources(c echo.Context) error {
	st, _, err := s.loadStep(c)
	if err != nil {
		return err
	}
	out, err := ctxedit.ResourcesOf(st, c.Param("app"), c.QueryParam("cluster"))
	if err != nil {
		return httpErr(http.StatusNotFound, "%v", err)
	}
	return c.JSON(http.StatusOK, out)
}

func (s *Server) contextClusters(c echo.Context) error {
	provider := c.QueryParam("provider")
	if provider == "" {
		return badRequest("query parameter provider is required")
	}
	if _, err := s.Store.Get(c.Request().Context(), "/cluster-providers/"+provider); err != nil {
		return fromStore(err)
	}
	out, err := ctxedit.StoreClusters(s.Store)(c.Request().Context(), provider, c.QueryParam("label"))
	if err != nil {
		return err
	}
	if out == nil {
		out = []contract.Cluster{}
	}
	return c.JSON(http.StatusOK, out)
}

// putStepEdits checks a step's edits as the built-in runner does (against the context as
// the step sees it, with the type the controller is registered with) and stores them as
// the step's layer.
func (s *Server) putStepEdits(c echo.Context) error {
	var body remote.StepEdits
	if err := readJSON(c, &body); err != nil {
		return err
	}
	if body.Controller == "" {
		return badRequest("controller is required: the name the controller is registered under")
	}
	ctx := c.Request().Context()
	reg := lifecycle.RegistrationID(body.Controller, body.Parent)
	if err := model.ValidateName("parent", body.Parent); body.Parent != "" && err != nil {
		return badRequest("%v", err)
	}
	d, err := s.Store.Get(ctx, reg)
	if store.CodeOf(err) == store.ErrNotFound {
		return badRequest("controller %q is not registered (%s)", body.Controller, reg)
	}
	if err != nil {
		return fromStore(err)
	}
	sp, err := model.Decode[model.ControllerSpec](d.Body)
	if err != nil {
		return err
	}
	st, step, err := s.loadStep(c)
	if err != nil {
		return err
	}
	if err := st.Apply(body.Controller, sp.Spec.Type, body.Edits); err != nil {
		var e *ctxedit.Error
		if errors.As(err, &e) {
			return badRequest("%v", err)
		}
		return err
	}
	err = s.Contexts.PutLayer(ctx, &appctx.Layer{Context: c.Param("context"), Step: step, Attempt: body.Attempt,
		Controller: body.Controller, Parent: body.Parent, Intent: body.Intent, Type: sp.Spec.Type, Edits: body.Edits})
	if errors.Is(err, appctx.ErrStaleAttempt) {
		return conflict("%v (attempt %d)", err, body.Attempt)
	}
	if err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}
