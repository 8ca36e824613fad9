package api

import (
	"context"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/temco/temco/internal/core/appctx"
	"github.com/temco/temco/internal/core/lifecycle"
	"github.com/temco/temco/internal/core/model"
	"github.com/temco/temco/internal/core/rollout"
	"github.com/temco/temco/internal/core/store"
)

// routeRollout is the collection of a DIG's rollout strategy: temco's own resource (EMCO
// has no rollout strategies), at most one per DIG, telling its operations how to roll out
// over its clusters (internal/core/rollout).
const routeRollout = routeDIG + "/rollout-strategies"

// registerRollout serves rollout strategies with the generic handlers. Unlike the DIG's
// intents, a strategy changes how a deployment is rolled out, not what is deployed: it
// may be created, replaced or deleted in any state of the DIG, without withdrawing an
// approval, and the next operation uses what is stored then (a running one keeps the
// plan it started with).
func (s *Server) registerRollout(g *echo.Group) {
	register(g, s, kind[rollout.Spec]{name: model.KindRolloutStrategy, check: checkRolloutStrategy,
		coll: routeRollout, item: routeRollout + "/:rolloutStrategy"})
}

func checkRolloutStrategy(ctx context.Context, s *Server, r *request[rollout.Spec]) error {
	if err := r.res.Spec.Validate(); err != nil {
		return badRequest("%v", err)
	}
	return onePerDIG(ctx, s, r.parent, r.id, model.KindRolloutStrategy, "rollout strategy")
}

// onePerDIG refuses (409, naming it) a resource of kind under dig other than id: temco's
// own DIG resources (rollout strategy, capacity placement) are one per DIG at most.
func onePerDIG(ctx context.Context, s *Server, dig, id, kind, what string) error {
	others, err := s.Store.List(ctx, store.Query{Parent: dig, Kind: kind})
	if err != nil {
		return err
	}
	for _, o := range others {
		if o.ID != id {
			return conflict("%s already has %s: a deployment intent group has one %s at most; replace it (PUT) or delete it first",
				describe(dig), describe(o.ID), what)
		}
	}
	return nil
}

// rolloutClustersShown bounds the clusters a stage lists in the status; its counts are
// always whole.
const rolloutClustersShown = 100

// rolloutStatus is the status answer's view of a staged rollout.
type rolloutStatus struct {
	lifecycle.RolloutStatus
	Stages []rolloutStage `json:"stages"`
}

type rolloutStage struct {
	lifecycle.StageStatus
	// ClusterNames lists the stage's clusters in the order it changes them (the first
	// rolloutClustersShown).
	ClusterNames []string `json:"clusterNames"`
}

// rolloutBody is the optional body of a rollout command: the stage an approval is for.
type rolloutBody struct {
	Stage string `json:"stage,omitempty"`
}

// registerRolloutCommands mounts the commands an operator gives a running staged rollout.
func (s *Server) registerRolloutCommands(g *echo.Group) {
	for _, c := range []struct{ action, summary string }{
		{lifecycle.RolloutApprove, "Approve the stage of a DIG's running rollout that waits for an approval"},
		{lifecycle.RolloutPause, "Pause a DIG's running rollout before its next stage"},
		{lifecycle.RolloutResume, "Resume a paused rollout, or go on past a failed stage that waits for a decision"},
		{lifecycle.RolloutRollback, "Return every cluster a DIG's running rollout has changed and end it failed"},
	} {
		doc := opDoc{method: http.MethodPost, path: routeDIG + "/rollout/" + c.action, summary: c.summary, code: http.StatusOK,
			response: typeOf[rolloutStatus](), noOwner: true}
		if c.action == lifecycle.RolloutApprove {
			doc.body = typeOf[rolloutBody]()
		}
		s.route(g, doc, s.rolloutCommand(c.action))
	}
}

func (s *Server) rolloutCommand(action string) echo.HandlerFunc {
	return func(c echo.Context) error {
		cmd := lifecycle.RolloutCommand{Action: action}
		dig, _, info, err := s.loadTarget(c, digRef, func(lifecycle.Target) error {
			if c.Request().ContentLength == 0 {
				return nil
			}
			var body rolloutBody
			if err := readJSON(c, &body); err != nil {
				return err
			}
			cmd.Stage = body.Stage
			return nil
		})
		if err != nil {
			return err
		}
		ctx := c.Request().Context()
		ctxID := info.ContextID()
		if ctxID == "" {
			return conflict("%s has no running operation: it was never instantiated", dig)
		}
		header, err := s.Contexts.Get(ctx, ctxID)
		if err != nil {
			return err
		}
		st, err := s.Ops.Command(ctx, dig, header.Status, ctxID, cmd)
		if err != nil {
			return operationErr(err)
		}
		view, err := s.rolloutView(ctx, ctxID, &st)
		if err != nil {
			return err
		}
		return c.JSON(http.StatusOK, view)
	}
}

// rolloutOf is the status view of a context's rollout (nil: it has none).
func (s *Server) rolloutOf(ctx context.Context, header *appctx.Context) (*rolloutStatus, error) {
	if header.Rollout == nil {
		return nil, nil
	}
	return s.rolloutView(ctx, header.ID, header.Rollout)
}

func (s *Server) rolloutView(ctx context.Context, ctxID string, r *lifecycle.RolloutStatus) (*rolloutStatus, error) {
	out := &rolloutStatus{RolloutStatus: *r, Stages: make([]rolloutStage, len(r.Stages))}
	for i, st := range r.Stages {
		names, _, err := s.Contexts.StageClusters(ctx, ctxID, st.FirstBatch, st.Batches, rolloutClustersShown)
		if err != nil {
			return nil, err
		}
		out.Stages[i] = rolloutStage{StageStatus: st, ClusterNames: append([]string{}, names...)}
	}
	return out, nil
}
