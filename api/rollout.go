package api

import (
	"context"

	"github.com/labstack/echo/v4"

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
	s.registerPreview(g)
}

func checkRolloutStrategy(ctx context.Context, s *Server, r *request[rollout.Spec]) error {
	if err := r.res.Spec.Validate(); err != nil {
		return badRequest("%v", err)
	}
	others, err := s.Store.List(ctx, store.Query{Parent: r.parent, Kind: model.KindRolloutStrategy})
	if err != nil {
		return err
	}
	for _, o := range others {
		if o.ID != r.id {
			return conflict("%s already has %s: a deployment intent group has one rollout strategy at most; replace it (PUT) or delete it first",
				describe(r.parent), describe(o.ID))
		}
	}
	return nil
}
