package autoscale

import (
	"context"
	"encoding/json"
	"net/http"
	"reflect"
	"strconv"

	"github.com/labstack/echo/v4"

	"github.com/temco/temco/api"
	"github.com/temco/temco/internal/core/capacity"
	"github.com/temco/temco/internal/core/lifecycle"
	"github.com/temco/temco/internal/core/model"
	"github.com/temco/temco/internal/core/store"
)

// The autoscaler's part of the api: a DIG's capacity placement, temco's own resource (EMCO
// has none; after Google's Multi-Cluster Orchestrator), at most one per DIG, naming the
// clusters its workloads may run on and the signals that decide how many they run on
// (internal/core/capacity, docs/autoscaling.md); its autoscaler's status and signals; and
// the autoscaler's section of the DIG's status and of the dashboard's view of it.

// routeCapacity is the collection of a DIG's capacity placement, and routeItem one.
const (
	routeCapacity = lifecycle.RouteDIG + "/capacity-placements"
	routeItem     = routeCapacity + "/:capacityPlacement"
)

// Autoscalers run the autoscalers of DIGs with a capacity placement: the Starter, or a
// test's.
type Autoscalers interface {
	// WakeAutoscaler has the DIG's autoscaler evaluate now, started if start and none runs.
	WakeAutoscaler(ctx context.Context, dig lifecycle.Target, start bool) error
	// SignalAutoscaler pauses or resumes it (*starter.Refused: none runs).
	SignalAutoscaler(ctx context.Context, dig lifecycle.Target, signal string) error
}

// Extension is the autoscaler's part of the api over as; as nil: the feature is switched
// off, no autoscaler is started and a signal answers 409 (capacity placements are still
// served, and the status still shows the autoscalers' records).
//
// Like a rollout strategy a capacity placement says how the DIG's clusters are chosen
// over time, not what is deployed: it may be created, replaced or deleted in any state
// of the DIG without withdrawing an approval; the autoscaler reads what is stored at each
// evaluation.
func Extension(as Autoscalers) api.Extension {
	return api.Extension{Name: "autoscale", Mount: func(m *api.Mount) {
		r := routes{m: m, as: as}
		m.Kind(api.KindDef[capacity.Spec]{Name: model.KindCapacityPlacement, Path: "/capacity-placements",
			Param: "capacityPlacement", Check: checkPlacement, Changed: r.wake})
		m.Route(api.Doc{Method: http.MethodGet, Path: routeItem + "/status", Code: http.StatusOK, Response: reflect.TypeFor[status](),
			Summary: "The autoscaler of a DIG's capacity placement: each cluster's state, the signals it read, its decisions"},
			r.status)
		for _, sig := range []struct{ name, summary string }{
			{lifecycle.SignalPause, "Pause the autoscaler of a DIG's capacity placement: no evaluation until it is resumed"},
			{lifecycle.SignalResume, "Resume a paused autoscaler: it evaluates at once"},
		} {
			m.Route(api.Doc{Method: http.MethodPost, Path: routeItem + "/" + sig.name, Code: http.StatusAccepted, Summary: sig.summary},
				r.signal(sig.name))
		}
		m.DIGStatus("autoscaler", reflect.TypeFor[status](), r.ofDIG)
	}}
}

type routes struct {
	m  *api.Mount
	as Autoscalers
}

// wake starts the DIG's autoscaler when its capacity placement is stored, and has it
// evaluate the change now (a deleted placement ends it).
func (r routes) wake(ctx context.Context, id string) error {
	if r.as == nil {
		return nil
	}
	return r.m.WakeAfterChange(ctx, id, "autoscaler", func(ctx context.Context, start bool) error {
		return r.as.WakeAutoscaler(ctx, lifecycle.DIGOfID(id), start)
	})
}

// status is where a DIG's autoscaler stands (GET .../capacity-placements/{name}/status).
type status struct {
	Name string `json:"name"`
	lifecycle.AutoscaleState
}

func (r routes) status(c echo.Context) error {
	d, err := r.m.Get(c, routeItem)
	if err != nil {
		return err
	}
	out, err := statusOf(d)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, out)
}

// statusOf reads the autoscaler's record in its capacity placement.
func statusOf(d *store.Doc) (*status, error) {
	out := &status{Name: d.Name, AutoscaleState: lifecycle.AutoscaleState{Members: []capacity.Member{}}}
	if d.State != "" {
		if err := json.Unmarshal([]byte(d.State), &out.AutoscaleState); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// ofDIG is the DIG's autoscaler for its status, with its last decisions only (nil: the
// DIG has no capacity placement).
func (r routes) ofDIG(ctx context.Context, _ string, q api.StatusQuery) (any, error) {
	docs, err := r.m.Store().List(ctx, store.Query{Parent: q.DIG, Kind: model.KindCapacityPlacement})
	if err != nil || len(docs) == 0 {
		return nil, err
	}
	out, err := statusOf(docs[0])
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

func (r routes) signal(signal string) echo.HandlerFunc {
	return func(c echo.Context) error {
		id, err := r.m.PathID(c, routeItem)
		if err != nil {
			return err
		}
		ctx := c.Request().Context()
		if err := r.m.MustExist(ctx, id); err != nil {
			return err
		}
		if r.as == nil {
			return api.Conflict("this temco runs no autoscalers: feature autoscale is switched off (--disable-features)")
		}
		if err := r.as.SignalAutoscaler(ctx, lifecycle.DIGOfID(id), signal); err != nil {
			return api.OperationErr(err)
		}
		return c.NoContent(http.StatusAccepted)
	}
}

func checkPlacement(ctx context.Context, r *api.Request[capacity.Spec]) error {
	spec := &r.Resource().Spec
	if err := spec.Validate(); err != nil {
		return api.BadRequest("%v", err)
	}
	for i, w := range spec.Workloads {
		app, err := r.App("spec.workloads["+strconv.Itoa(i)+"].app", w.App)
		if err != nil {
			return err
		}
		r.Ref(app)
	}
	return r.OnePerDIG(ctx, model.KindCapacityPlacement, "capacity placement")
}
