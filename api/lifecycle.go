package api

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/temco/temco/internal/core/appctx"
	"github.com/temco/temco/internal/core/digstate"
	"github.com/temco/temco/internal/core/lifecycle"
	"github.com/temco/temco/internal/core/model"
	"github.com/temco/temco/internal/core/store"
	"github.com/temco/temco/starter"
)

// Operator runs lifecycle operations (the Temporal starter in production).
type Operator interface {
	Operate(ctx context.Context, target lifecycle.Target, req lifecycle.OpRequest) (lifecycle.OpAccepted, error)
	Stop(ctx context.Context, target lifecycle.Target) (lifecycle.OpAccepted, error)
	// ReadClusters reads the live state of a context's objects (of in.Clusters, or all).
	ReadClusters(ctx context.Context, target lifecycle.Target, in lifecycle.ReadInput) error
	// Progress asks a running operation's workflow how far it is.
	Progress(ctx context.Context, op *lifecycle.RunningOp) (lifecycle.Progress, error)
	// Running describes the operation running on a context with a status (nil: none).
	Running(ctx context.Context, target lifecycle.Target, status, ctxID string) (*lifecycle.RunningOp, error)
	// Migrate asks the target DIG to take over the running deployment of req.Origin.
	Migrate(ctx context.Context, target lifecycle.Target, req lifecycle.MigrateRequest) (lifecycle.OpAccepted, error)
	// Command gives an operator's command to the staged rollout of the operation running
	// on a context with a status.
	Command(ctx context.Context, dig lifecycle.Target, status, ctxID string, cmd lifecycle.RolloutCommand) (lifecycle.RolloutStatus, error)
}

func (s *Server) registerLifecycle(g *echo.Group) {
	op := func(path, summary string) opDoc {
		return opDoc{method: http.MethodPost, path: path, summary: summary, code: http.StatusAccepted, response: typeOf[opAccepted]()}
	}
	s.route(g, opDoc{method: http.MethodPost, path: routeDIG + "/approve", summary: "Approve a DIG", code: http.StatusAccepted}, s.approve)
	for _, k := range lifecycle.Kinds {
		for _, r := range k.Routes {
			ref := routeRef(r)
			for _, e := range r.Endpoints {
				path := r.Path + "/" + e.Segment
				switch e.Op {
				case "":
					s.route(g, opDoc{method: http.MethodGet, path: path, summary: e.Summary, code: http.StatusOK,
						response: typeOf[statusResult](), query: statusQueryParams, liveReads: true}, s.status(ref))
				case lifecycle.OpStop:
					stop := op(path, e.Summary)
					stop.noOwner = true
					s.route(g, stop, s.stop(ref))
				default:
					s.route(g, op(path, e.Summary), s.operate(ref, e.Op))
				}
			}
		}
	}
	rollback := op(routeDIG+"/rollback", "Return a DIG to a stored revision (as a new revision)")
	rollback.body = typeOf[rollbackBody]()
	s.route(g, rollback, s.operate(digRef, lifecycle.OpRollback))
	s.registerMigrate(g)
	s.registerRolloutCommands(g)
	s.route(g, opDoc{method: http.MethodGet, path: "/openapi.yaml", summary: "This document", code: http.StatusOK}, s.serveOpenAPI)
}

// targetFunc reads the target of a lifecycle route from its path.
type targetFunc func(echo.Context) (lifecycle.Target, error)

// routeRef reads the target of one of a kind's routes from the path.
func routeRef(r lifecycle.Route) targetFunc {
	return func(c echo.Context) (lifecycle.Target, error) {
		if _, err := fill(c, r.Path); err != nil {
			return lifecycle.Target{}, err
		}
		return r.Target(c.Param), nil
	}
}

// digRef reads the DIG named by the path.
var digRef = routeRef(lifecycle.DIGs.Routes[0])

func (s *Server) approve(c echo.Context) error {
	dig, err := digRef(c)
	if err != nil {
		return err
	}
	_, err = digstate.Change(c.Request().Context(), s.Store, dig.ID(), func(info lifecycle.StateInfo) ([]lifecycle.Action, error) {
		t, err := lifecycle.DIGs.Machine.Start(dig.String(), lifecycle.OpApprove, info.Current())
		if err != nil {
			return nil, conflict("%v", err)
		}
		if t.To == "" { // already approved
			return nil, nil
		}
		return []lifecycle.Action{{State: t.To}}, nil
	})
	if err != nil {
		return fromStore(err)
	}
	return c.NoContent(http.StatusAccepted)
}

// operate starts an operation after a quick check of the DIG's state; the lifecycle
// workflow checks again, authoritatively, before it records the transition.
func (s *Server) operate(target targetFunc, op string) echo.HandlerFunc {
	return func(c echo.Context) error {
		req := lifecycle.OpRequest{Op: op, Requested: time.Now().UTC().Format(time.RFC3339Nano)}
		var snap string // a rollback naming a snapshot
		dig, _, info, err := s.loadTarget(c, target, func(lifecycle.Target) (err error) {
			if op == lifecycle.OpRollback {
				req.Revision, snap, err = readRevision(c)
			}
			return err
		})
		if err != nil {
			return err
		}
		ctx := c.Request().Context()
		t, err := dig.Kind().Machine.Start(dig.String(), op, info.Current())
		if err != nil {
			resume, rerr := s.resumes(ctx, dig, op, info)
			if rerr != nil {
				return rerr
			}
			if !resume {
				return conflict("%v", err)
			}
			// The same operation asked again for the transition it recorded: the lifecycle
			// workflow runs it for that context, or answers 409 that it runs.
			req.ContextID = info.ContextID()
			return s.startOperation(c, dig, req)
		}
		if t.To == "" { // nothing to do: applying applied network intents (as EMCO's ncm)
			return c.JSON(http.StatusAccepted, lifecycle.OpAccepted{Op: op, ContextID: info.ContextID()})
		}
		if err := s.readyFor(ctx, dig, op); err != nil {
			return err
		}
		if snap != "" {
			if req.Revision, err = s.snapshotRevision(ctx, dig, info, snap); err != nil {
				return err
			}
		}
		if _, ok := info.RevisionContext(req.Revision); op == lifecycle.OpRollback && !ok {
			return badRequest("%s has no revision %d in its current instance (revisions 1 to %d)", dig, req.Revision, info.LatestRevision())
		}
		if op != lifecycle.OpTerminate {
			req.ContextID = lifecycle.NewContextID()
		}
		return s.startOperation(c, dig, req)
	}
}

// startOperation asks the target's lifecycle workflow to run req.
func (s *Server) startOperation(c echo.Context, dig lifecycle.Target, req lifecycle.OpRequest) error {
	acc, err := s.Ops.Operate(c.Request().Context(), dig, req)
	if err != nil {
		return operationErr(err)
	}
	s.Log.Info("operation started", "request_id", c.Response().Header().Get(echo.HeaderXRequestID),
		"target", dig.ID(), "op", req.Op, "workflow_id", acc.WorkflowID, "context", acc.ContextID, "revision", acc.Revision)
	return c.JSON(http.StatusAccepted, acc)
}

// resumes tells whether op, refused by the target's state, is asked again for the
// transition it recorded and never ended (lifecycle.Machine.Resumes).
func (s *Server) resumes(ctx context.Context, t lifecycle.Target, op string, info lifecycle.StateInfo) (bool, error) {
	if info.ContextID() == "" {
		return false, nil
	}
	c, err := s.Contexts.Get(ctx, info.ContextID())
	if errors.Is(err, appctx.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return t.Kind().Machine.Resumes(op, info.Current(), c.Status), nil
}

func (s *Server) stop(target targetFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		t, err := target(c)
		if err != nil {
			return err
		}
		if err := s.mustExist(c.Request().Context(), t.ID()); err != nil {
			return err
		}
		acc, err := s.Ops.Stop(c.Request().Context(), t)
		if err != nil {
			return operationErr(err)
		}
		return c.JSON(http.StatusAccepted, acc)
	}
}

// readRevision reads a rollback body, {"spec": {"revision": "2"}} (a number is fine too)
// or {"spec": {"snapshot": "<id>"}}, whose revision the caller finds (snapshot.go).
func readRevision(c echo.Context) (int64, string, error) {
	var body struct {
		Spec struct {
			Revision json.Number `json:"revision"`
			Snapshot string      `json:"snapshot"`
		} `json:"spec"`
	}
	if err := readJSON(c, &body); err != nil {
		return 0, "", err
	}
	switch {
	case body.Spec.Snapshot != "" && body.Spec.Revision != "":
		return 0, "", badRequest("give spec.revision or spec.snapshot, not both")
	case body.Spec.Snapshot != "":
		return 0, body.Spec.Snapshot, nil
	}
	n, err := strconv.ParseInt(body.Spec.Revision.String(), 10, 64)
	if err != nil || n < 1 {
		return 0, "", badRequest("spec.revision %q is not a revision number (1, 2, ...); or name a snapshot in spec.snapshot", body.Spec.Revision)
	}
	return n, "", nil
}

// operationErr maps refusals to 409, invalid requests to 400 and an unreachable Temporal to 503.
func operationErr(err error) error {
	var r *starter.Refused
	if errors.As(err, &r) {
		return conflict("%s", r.Message)
	}
	var inv *starter.Invalid
	if errors.As(err, &inv) {
		return badRequest("%s", inv.Message)
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return httpErr(http.StatusServiceUnavailable, "the workflow service did not answer in time; the operation may still start: check the DIG's status")
	}
	return err
}

// deletable refuses to delete a DIG or logical cloud d whose objects may still be on
// clusters.
func (s *Server) deletable(ctx context.Context, m *lifecycle.Machine, d *store.Doc) error {
	info, err := digstate.Parse(d)
	if err != nil {
		return err
	}
	t, err := m.Start(describe(d.ID), lifecycle.OpDelete, info.Current())
	if err != nil {
		return conflict("%v", err)
	}
	if t.Unless == "" {
		return nil
	}
	c, err := s.Contexts.Get(ctx, info.ContextID())
	if err != nil {
		return err
	}
	if err := t.Settle(c.Status); err != nil {
		return conflict("%v", err)
	}
	return nil
}

// deleteOperated returns the delete handler of a DIG or logical cloud at route, whose
// lifecycle is m: it refuses while the target may have objects on clusters and takes
// its AppContexts along.
func (s *Server) deleteOperated(route string, m *lifecycle.Machine) echo.HandlerFunc {
	return func(c echo.Context) error { return s.deleteWithContexts(c, route, m) }
}

func (s *Server) deleteWithContexts(c echo.Context, route string, m *lifecycle.Machine) error {
	id, err := fill(c, route)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	// Checked while no operation can record a transition: an instantiate that begins
	// during the delete either comes first (and the delete is refused) or finds it gone.
	var info lifecycle.StateInfo
	agentCluster := ""
	if err := s.Store.DeleteIf(ctx, id, func(ctx context.Context, d *store.Doc) error {
		info, _ = digstate.Parse(d)
		if route == routeCluster && d.Fields[fieldAccess] == model.AccessAgent {
			agentCluster = lifecycle.ClusterKey(c.Param("clusterProvider"), c.Param("cluster"))
		}
		return s.deletable(ctx, m, d)
	}); err != nil {
		return fromStore(err)
	}
	if agentCluster != "" { // its agent's credential opens nothing from now, on every api
		s.agentCache.forget(agentCluster)
		if err := s.agents().Void(context.WithoutCancel(ctx), agentCluster); err != nil {
			s.Log.Warn("void a deleted cluster's agent credential", "cluster", agentCluster, "error", err)
		}
	}
	for _, a := range info.Actions {
		if a.ContextID != "" {
			if err := s.Contexts.DeleteContext(context.WithoutCancel(ctx), a.ContextID); err != nil {
				s.Log.Warn("delete appcontext", "context", a.ContextID, "error", err)
			}
		}
	}
	s.collectArtifacts(context.WithoutCancel(ctx))
	return c.NoContent(http.StatusNoContent)
}

// unapprove records what a change of a DIG or one of its intents does to its state: an
// approved DIG goes back to Created.
func (s *Server) unapprove(ctx context.Context, digID string) error {
	_, err := digstate.Change(ctx, s.Store, digID, func(info lifecycle.StateInfo) ([]lifecycle.Action, error) {
		t, err := lifecycle.DIGs.Machine.Start(describe(digID), lifecycle.OpModify, info.Current())
		if err != nil || t.To == "" {
			return nil, err
		}
		return []lifecycle.Action{{State: t.To}}, nil
	})
	if store.CodeOf(err) == store.ErrNotFound {
		return nil // the DIG itself was deleted
	}
	return err
}
