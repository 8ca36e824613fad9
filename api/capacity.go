package api

import (
	"context"
	"encoding/json"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/temco/temco/internal/core/capacity"
	"github.com/temco/temco/internal/core/lifecycle"
	"github.com/temco/temco/internal/core/model"
	"github.com/temco/temco/internal/core/store"
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
	item := routeCapacity + "/:capacityPlacement"
	register(g, s, kind[capacity.Spec]{name: model.KindCapacityPlacement, check: checkCapacityPlacement,
		coll: routeCapacity, item: item, changed: wakeAutoscaler})
	s.route(g, opDoc{method: http.MethodGet, path: item + "/status", code: http.StatusOK, response: typeOf[autoscalerStatus](),
		summary: "The autoscaler of a DIG's capacity placement: each cluster's state, the signals it read, its decisions"},
		s.autoscalerStatus)
	for _, sig := range []struct{ name, summary string }{
		{lifecycle.SignalPause, "Pause the autoscaler of a DIG's capacity placement: no evaluation until it is resumed"},
		{lifecycle.SignalResume, "Resume a paused autoscaler: it evaluates at once"},
	} {
		s.route(g, opDoc{method: http.MethodPost, path: item + "/" + sig.name, code: http.StatusAccepted, summary: sig.summary},
			s.signalAutoscaler(sig.name))
	}
}

// Autoscalers run the autoscalers of DIGs with a capacity placement (the autoscale feature's Starter, features/autoscale).
type Autoscalers interface {
	// WakeAutoscaler has the DIG's autoscaler evaluate now, started if start and none runs.
	WakeAutoscaler(ctx context.Context, dig lifecycle.Target, start bool) error
	// SignalAutoscaler pauses or resumes it (*starter.Refused: none runs).
	SignalAutoscaler(ctx context.Context, dig lifecycle.Target, signal string) error
}

// wakeAutoscaler starts the DIG's autoscaler when its capacity placement is stored, and
// has it evaluate the change now (a deleted placement ends it).
func wakeAutoscaler(ctx context.Context, s *Server, id string) error {
	if s.Autoscalers == nil {
		return nil
	}
	return wakeAfterChange(ctx, s, id, "autoscaler", func(ctx context.Context, start bool) error {
		return s.Autoscalers.WakeAutoscaler(ctx, lifecycle.DIGOfID(id), start)
	})
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

// autoscalerStatus is where a DIG's autoscaler stands (GET .../capacity-placements/{name}/status).
type autoscalerStatus struct {
	Name string `json:"name"`
	lifecycle.AutoscaleState
}

func (s *Server) autoscalerStatus(c echo.Context) error {
	id, err := fill(c, routeCapacity+"/:capacityPlacement")
	if err != nil {
		return err
	}
	d, err := s.Store.Get(c.Request().Context(), id)
	if err != nil {
		return fromStore(err)
	}
	out, err := autoscalerOf(d)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, out)
}

// autoscalerOf reads the autoscaler's record in its capacity placement.
func autoscalerOf(d *store.Doc) (*autoscalerStatus, error) {
	out := &autoscalerStatus{Name: d.Name, AutoscaleState: lifecycle.AutoscaleState{Members: []capacity.Member{}}}
	if d.State != "" {
		if err := json.Unmarshal([]byte(d.State), &out.AutoscaleState); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// autoscalerOfDIG is the DIG's autoscaler for its status, with its last decisions only.
func (s *Server) autoscalerOfDIG(ctx context.Context, digID string) (*autoscalerStatus, error) {
	docs, err := s.Store.List(ctx, store.Query{Parent: digID, Kind: model.KindCapacityPlacement})
	if err != nil || len(docs) == 0 {
		return nil, err
	}
	out, err := autoscalerOf(docs[0])
	if err != nil {
		return nil, err
	}
	if n := len(out.Events) - digStatusEvents; n > 0 {
		out.Events = out.Events[n:]
	}
	return out, nil
}

// digStatusEvents are the decisions a DIG's status shows (the capacity placement's status
// has them all).
const digStatusEvents = 5

func (s *Server) signalAutoscaler(signal string) echo.HandlerFunc {
	return func(c echo.Context) error {
		id, err := fill(c, routeCapacity+"/:capacityPlacement")
		if err != nil {
			return err
		}
		ctx := c.Request().Context()
		if err := s.mustExist(ctx, id); err != nil {
			return err
		}
		if s.Autoscalers == nil {
			return conflict("this temco runs no autoscalers: feature autoscale is switched off (--disable-features)")
		}
		if err := s.Autoscalers.SignalAutoscaler(ctx, lifecycle.DIGOfID(id), signal); err != nil {
			return operationErr(err)
		}
		return c.NoContent(http.StatusAccepted)
	}
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
