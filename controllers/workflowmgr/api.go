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
	"github.com/temco/temco/internal/model"
	"github.com/temco/temco/internal/store"
)

// Kind is the stored kind of a workflow intent.
const Kind = "temporal-workflow-intent"

// Kinds are workflowmgr's REST resources with EMCO's paths: workflow intents under a DIG
// and their start, status and cancel routes, served with t.
func Kinds(t *Temporal) []api.ResourceKind {
	h := handlers{t: t}
	return []api.ResourceKind{api.OwnKind[Spec]{
		KindDef: api.KindDef[Spec]{Name: Kind, Path: api.RouteDIG + "/temporal-workflow-intents", Param: "workflowIntent",
			Check: check},
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

func check(_ context.Context, r *api.Request[Spec]) error {
	if err := r.Resource().Spec.Validate(); err != nil {
		return api.BadRequest("%v", err)
	}
	return nil
}

type handlers struct{ t *Temporal }

// start answers 204 once the workflow is started, as EMCO does; temco's own starts also
// name the run in the Location header's query (status?workflowID=...&runID=...).
func (h handlers) start(c echo.Context, d *store.Doc) error {
	spec, err := specOf(d)
	if err != nil {
		return err
	}
	run, err := h.t.start(c.Request().Context(), spec, DefaultWorkflowID(d.ID))
	if err != nil {
		return h.fail(err, "start the workflow of "+d.Name)
	}
	if run.RunID != "" {
		q := url.Values{"workflowID": {run.WorkflowID}, "runID": {run.RunID}}
		c.Response().Header().Set("Location", strings.TrimSuffix(c.Request().URL.Path, "/start")+"/status?"+q.Encode())
	}
	return c.NoContent(http.StatusNoContent)
}

func (h handlers) status(c echo.Context, d *store.Doc) error {
	q, err := ParseStatusQuery(c.QueryParams())
	if err != nil {
		return api.BadRequest("%v", err)
	}
	if q.WorkflowID == "" {
		if q.WorkflowID, err = workflowIDOf(d); err != nil {
			return err
		}
	}
	st, err := h.t.status(c.Request().Context(), q)
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
	if req.Spec.WorkflowID == "" { // the request's id overrides the intent's, as in EMCO
		if req.Spec.WorkflowID, err = workflowIDOf(d); err != nil {
			return err
		}
	}
	verb := "cancel"
	if req.Spec.Terminate {
		verb = "terminate"
	}
	if err := h.t.cancel(c.Request().Context(), req.Spec); err != nil {
		return h.fail(err, verb+" workflow "+req.Spec.WorkflowID)
	}
	return c.NoContent(http.StatusNoContent)
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

// workflowIDOf is the workflow id the intent starts its runs with.
func workflowIDOf(d *store.Doc) (string, error) {
	s, err := specOf(d)
	if err != nil {
		return "", err
	}
	if id := s.Temporal.StartOptions.ID; id != "" {
		return id, nil
	}
	return DefaultWorkflowID(d.ID), nil
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
		remote    *remoteError
		wfClient  *clientError
		noResult  *queryError
	)
	switch {
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
	case errors.As(err, &remote), errors.As(err, &wfClient):
		return echo.NewHTTPError(http.StatusBadGateway, what+": "+err.Error())
	}
	return err
}
