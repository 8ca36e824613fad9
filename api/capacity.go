package api

import (
	"context"

	"github.com/labstack/echo/v4"

	"github.com/temco/temco/internal/core/capacity"
	"github.com/temco/temco/internal/core/model"
)

// routeCapacity is the collection of a DIG's capacity placement: temco's own resource
// (EMCO has none; after Google's Multi-Cluster Orchestrator), at most one per DIG, naming
// the clusters its workloads may run on and the signals that decide how many they run on
// (internal/core/capacity, docs/autoscaling.md).
const routeCapacity = routeDIG + "/capacity-placements"

// registerCapacity serves capacity placements with the generic handlers. Like a rollout
// strategy it says how the DIG's clusters are chosen over time, not what is deployed: it
// may be created, replaced or deleted in any state of the DIG without withdrawing an
// approval; the autoscaler reads what is stored at each evaluation.
func (s *Server) registerCapacity(g *echo.Group) {
	register(g, s, kind[capacity.Spec]{name: model.KindCapacityPlacement, check: checkCapacityPlacement,
		coll: routeCapacity, item: routeCapacity + "/:capacityPlacement"})
}

func checkCapacityPlacement(ctx context.Context, s *Server, r *request[capacity.Spec]) error {
	if err := r.res.Spec.Validate(); err != nil {
		return badRequest("%v", err)
	}
	for i, w := range r.res.Spec.Workloads {
		app, err := appRef(r.id, "spec.workloads["+itoa(i)+"].app", w.App)
		if err != nil {
			return err
		}
		r.ref(app)
	}
	return onePerDIG(ctx, s, r.parent, r.id, model.KindCapacityPlacement, "capacity placement")
}
