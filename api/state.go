package api

import (
	"net/http"
	"slices"
	"strings"

	"github.com/labstack/echo/v4"

	temco "github.com/temco/temco/client"
	"github.com/temco/temco/internal/core/lifecycle"
)

// A DIG's state for programs (GET DIG/state, temco's own): what the dashboard shows of it
// above its clusters, read by the same code (overview), in the client module's type, so
// that the api and its callers (temco hub, the client's DIGState) share one definition.

var stateQueryParams = []string{"clusters"}

func (s *Server) registerState(g *echo.Group) {
	s.route(g, opDoc{method: http.MethodGet, path: routeDIG + "/state",
		summary: "A DIG's state: lifecycle state and history, its deployment, running operation, rollout and counts",
		description: "temco's own. clusters=true also counts the DIG's clusters by state, all and by app " +
			"(it reads every cluster's record: for a look at an outcome, not for each poll).",
		code: http.StatusOK, response: typeOf[temco.DIGState](), query: stateQueryParams}, s.digState)
}

func (s *Server) digState(c echo.Context) error {
	var clusters bool
	dig, _, info, err := s.loadTarget(c, digRef, func(lifecycle.Target) (err error) {
		clusters, err = parseStateQuery(c)
		return err
	})
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	out, keys, err := s.overview(ctx, dig, info)
	if err != nil {
		return err
	}
	if clusters && out.Instance != "" {
		all, err := s.placementsByCluster(ctx, out.Instance, keys)
		if err != nil {
			return err
		}
		countStates(out, keys, all, "") // the counts alone: no cluster is kept
	}
	return c.JSON(http.StatusOK, digStateOf(out))
}

func parseStateQuery(c echo.Context) (clusters bool, err error) {
	for k := range c.QueryParams() {
		if !slices.Contains(stateQueryParams, k) {
			return false, badRequest("unknown query parameter %q: use %s", k, strings.Join(stateQueryParams, ", "))
		}
	}
	switch v := c.QueryParam("clusters"); v {
	case "", "false":
		return false, nil
	case "true":
		return true, nil
	default:
		return false, badRequest("clusters=%q is invalid: use true or false", v)
	}
}

// digStateOf is the DIG's state as the dashboard's view of it says.
func digStateOf(v *dashboardView) temco.DIGState {
	out := temco.DIGState{Project: v.Project, CompositeApp: v.CompositeApp, CompositeAppVersion: v.CompositeAppVersion, Name: v.Name,
		State: v.State, History: make([]temco.StateAction, len(v.History)), Revisions: make([]temco.Revision, len(v.Revisions)),
		Revision: v.Revision, ContextID: v.Instance, ContextStatus: v.ContextStatus, Error: v.Error,
		Apps: v.Apps, Objects: v.Objects, Clusters: v.Total, ClusterStates: v.States, AppClusterStates: v.AppStates}
	for i, a := range v.History {
		out.History[i] = temco.StateAction{State: a.State, ContextID: a.Instance, Revision: a.Revision, Time: a.Time}
	}
	for i, r := range v.Revisions {
		out.Revisions[i] = temco.Revision{Revision: r.Revision, ContextID: r.Instance, State: r.State, Time: r.Time}
	}
	if op := v.Operation; op != nil {
		out.Operation = &temco.Operation{WorkflowID: op.WorkflowID, RunID: op.RunID, Op: op.Op, Phase: op.Phase,
			ClustersDone: op.ClustersDone, ClustersTotal: op.ClustersTotal, BatchesDone: op.BatchesDone, BatchesTotal: op.BatchesTotal,
			Stopped: op.Stopped, ProgressError: op.ProgressError}
	}
	if r := v.Rollout; r != nil {
		out.Rollout = &temco.Rollout{Strategy: r.Strategy, State: r.State, Cause: r.Cause, Stages: make([]temco.RolloutStage, len(r.Stages))}
		for i, st := range r.Stages {
			out.Rollout.Stages[i] = temco.RolloutStage{Name: st.Name, State: st.State}
		}
	}
	return out
}
