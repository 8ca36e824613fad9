package workflowmgr

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"reflect"
	"strings"

	"github.com/labstack/echo/v4"
	"go.temporal.io/api/serviceerror"

	"github.com/temco/temco/api"
	"github.com/temco/temco/internal/adapters/egress"
	"github.com/temco/temco/internal/core/lifecycle"
	"github.com/temco/temco/internal/core/model"
	"github.com/temco/temco/internal/core/store"
)

// Kind is the stored kind of a workflow intent.
const Kind = "temporal-workflow-intent"

// Kinds are workflowmgr's REST resources with EMCO's paths: workflow intents under a DIG
// and their start, status and cancel routes, served with t.
func Kinds(t *Temporal) []api.ResourceKind {
	h := handlers{t: t}
	return []api.ResourceKind{api.OwnKind[Spec]{
		KindDef: api.KindDef[Spec]{Name: Kind, Path: api.RouteDIG + "/temporal-workflow-intents", Param: "workflowIntent",
			Check: h.check},
		Actions: []api.Action{
			{Method: http.MethodPost, Path: "/start", Summary: "Start the workflow of a workflow intent",
				Code: http.StatusNoContent, Handle: h.start},
			StatusAction(t, "workflow intent"), CancelAction(t, "workflow intent"),
		},
	}.Mount()}
}

// StatusAction is the status route of an intent whose body has EMCO's spec.temporal
// (workflow intents, tac's hook intents), with what for its summary.
func StatusAction(t *Temporal, what string) api.Action {
	return api.Action{Method: http.MethodGet, Path: "/status", Summary: "Status of the workflow of a " + what,
		Code: http.StatusOK, Response: reflect.TypeFor[Status](), Handle: handlers{t: t}.status,
		Query: []string{"temporalServer", "workflowID", "runID", "waitForResult", "runDescribeWfExec", "getWfHistory", "queryType", "queryParams"}}
}

// CancelAction is the cancel route of an intent, as StatusAction.
func CancelAction(t *Temporal, what string) api.Action {
	return api.Action{Method: http.MethodPost, Path: "/cancel", Summary: "Cancel or terminate the workflow of a " + what,
		Code: http.StatusNoContent, Body: reflect.TypeFor[CancelRequest](), Handle: handlers{t: t}.cancel}
}

func (h handlers) check(ctx context.Context, r *api.Request[Spec]) error {
	spec := &r.Resource().Spec
	if err := spec.Validate(); err != nil {
		return api.BadRequest("%v", err)
	}
	return h.t.checkStart(ctx, spec, ScopeOf(r.ID()), false)
}

type handlers struct{ t *Temporal }

// start answers 204 once the workflow is started, as EMCO does; temco's own starts also
// name the run in the Location header's query (status?workflowID=...&runID=...).
func (h handlers) start(c echo.Context, d *store.Doc) error {
	spec, err := specOf(d)
	if err != nil {
		return err
	}
	ctx, scope := c.Request().Context(), ScopeOf(d.ID)
	if err := h.t.checkStart(ctx, spec, scope, false); err != nil { // the rules may have changed since
		return err
	}
	run, err := h.t.start(ctx, spec, scope, intentWorkflowID(spec, scope, d))
	if err != nil {
		return h.fail(err, "start the workflow of "+d.Name)
	}
	if run.RunID != "" {
		q := url.Values{"workflowID": {run.WorkflowID}, "runID": {run.RunID}}
		c.Response().Header().Set("Location", strings.TrimSuffix(c.Request().URL.Path, "/start")+"/status?"+q.Encode())
	}
	return c.NoContent(http.StatusNoContent)
}

// status reads a workflow of the intent's DIG: the intent's own when the query names
// none.
func (h handlers) status(c echo.Context, d *store.Doc) error {
	q, err := ParseStatusQuery(c.QueryParams())
	if err != nil {
		return api.BadRequest("%v", err)
	}
	spec, err := specOf(d)
	if err != nil {
		return err
	}
	scope := ScopeOf(d.ID)
	own := intentWorkflowID(spec, scope, d)
	if q.WorkflowID == "" {
		q.WorkflowID = own
	}
	q.WorkflowID = scope.ID(q.WorkflowID)
	// temco's sealed payloads are opened only for a Relocate intent's own runs.
	builtin := workflowType(spec.Temporal) == lifecycle.WorkflowRelocate && q.WorkflowID == own && q.TemporalServer == ""
	st, err := h.t.status(c.Request().Context(), q, builtin)
	if err != nil {
		return h.fail(err, "read the status of workflow "+q.WorkflowID)
	}
	return c.JSON(http.StatusOK, st)
}

func (h handlers) cancel(c echo.Context, d *store.Doc) error {
	req, err := DecodeCancel(c.Request().Body)
	if err != nil {
		return api.BadRequest("%v", err)
	}
	spec, err := specOf(d)
	if err != nil {
		return err
	}
	scope := ScopeOf(d.ID)
	if req.Spec.WorkflowID == "" { // the request's id overrides the intent's, as in EMCO
		req.Spec.WorkflowID = intentWorkflowID(spec, scope, d)
	}
	req.Spec.WorkflowID = scope.ID(req.Spec.WorkflowID)
	verb := "cancel"
	if req.Spec.Terminate {
		verb = "terminate"
	}
	if err := h.t.cancel(c.Request().Context(), req.Spec); err != nil {
		return h.fail(err, verb+" workflow "+req.Spec.WorkflowID)
	}
	return c.NoContent(http.StatusNoContent)
}

// intentWorkflowID is the workflow id intent d (of scope) starts its runs with: tac's
// hook intents share these routes.
func intentWorkflowID(s *Spec, scope Scope, d *store.Doc) string {
	if s.Temporal != nil && s.Temporal.StartOptions.ID != "" {
		return scope.ID(s.Temporal.StartOptions.ID)
	}
	if d.Kind != Kind {
		return scope.Default(KindHook, d.Name)
	}
	return scope.Default("", d.Name)
}

func specOf(d *store.Doc) (*Spec, error) {
	r, err := model.Decode[Spec](d.Body)
	if err != nil {
		return nil, err
	}
	if r.Spec.Temporal == nil || r.Spec.WorkflowClient == nil {
		return nil, api.Conflict("workflow intent %s has no spec.temporal or spec.workflowClient", d.Name)
	}
	return &r.Spec, nil
}

// fail turns what Temporal or a workflow client answered into the API's errors: the
// caller's mistakes as 4xx with Temporal's message; an unreachable temco Temporal stays
// as it is (503).
func (h handlers) fail(err error, what string) error {
	var (
		notFound  *serviceerror.NotFound
		started   *serviceerror.WorkflowExecutionAlreadyStarted
		invalid   *serviceerror.InvalidArgument
		failedPre *serviceerror.FailedPrecondition
		queryFail *serviceerror.QueryFailed
		wfClient  *clientError
		noResult  *queryError
		field     *FieldError
		refused   *egress.Refused
		down      *egress.Unreachable
		unread    *unreadable
	)
	switch {
	case errors.As(err, &field) && field.Forbidden:
		return api.Forbidden("%v", field)
	case errors.As(err, &field):
		return api.BadRequest("%v", field)
	case errors.As(err, &refused):
		return api.Forbidden("%s: %v", what, refused)
	case errors.As(err, &unread):
		return api.Conflict("%s: %v", what, unread)
	case errors.As(err, &down):
		return echo.NewHTTPError(http.StatusBadGateway, what+": "+down.Error())
	case errors.As(err, &notFound):
		return api.NotFound("%s: %v", what, notFound.Message)
	case errors.As(err, &started):
		return api.Conflict("%s: workflow already started: %v", what, started.Message)
	case errors.As(err, &invalid):
		return api.BadRequest("%s: %v", what, invalid.Message)
	case errors.As(err, &failedPre):
		return api.Conflict("%s: %v", what, failedPre.Message)
	case errors.As(err, &queryFail):
		return api.BadRequest("%s: %v", what, queryFail.Message)
	case errors.As(err, &noResult):
		return api.BadRequest("%s: %v", what, noResult.msg)
	case errors.As(err, &wfClient):
		return echo.NewHTTPError(http.StatusBadGateway, what+": "+err.Error())
	}
	return err
}
