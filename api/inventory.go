package api

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/temco/temco/features/inventory/flow"
	"github.com/temco/temco/internal/core/inventory"
	"github.com/temco/temco/internal/core/model"
	"github.com/temco/temco/internal/core/store"
)

// routeInventories is a cluster provider's cluster inventory: temco's own resource (EMCO
// has none), at most one per provider, a hub of ClusterProfiles whose clusters temco
// registers under the provider and keeps in step, and where it publishes every DIG's
// clusters as PlacementDecisions (internal/core/inventory, docs/inventory.md). Its file is
// the hub's kubeconfig, sealed as a cluster's.
const routeInventories = "/cluster-providers/:clusterProvider/cluster-inventories"

func (s *Server) registerInventories(g *echo.Group) {
	item := routeInventories + "/:clusterInventory"
	register(g, s, kind[inventory.Spec]{name: model.KindClusterInventory, coll: routeInventories, item: item,
		check: checkInventory, changed: wakeInventory,
		file: &fileSpec[inventory.Spec]{required: true, attach: attachHubKubeconfig}})
	s.route(g, opDoc{method: http.MethodGet, path: item + "/status", code: http.StatusOK, response: typeOf[inventoryStatus](),
		summary: "The last sync of a cluster inventory: each ClusterProfile and its cluster, the PlacementDecisions written"},
		s.inventoryStatus)
}

func checkInventory(ctx context.Context, s *Server, r *request[inventory.Spec]) error {
	if s.Inventories == nil {
		return httpErr(http.StatusServiceUnavailable, "this temco runs no cluster inventories: feature inventory is switched off (--disable-features)")
	}
	if err := r.res.Spec.Validate(); err != nil {
		return badRequest("%v", err)
	}
	others, err := s.Store.List(ctx, store.Query{Parent: r.parent, Kind: model.KindClusterInventory})
	if err != nil {
		return err
	}
	for _, o := range others {
		if o.ID != r.id {
			return conflict("%s already has %s: a cluster provider has one cluster inventory at most; replace it (PUT) or delete it first",
				describe(r.parent), describe(o.ID))
		}
	}
	return nil
}

func attachHubKubeconfig(_ context.Context, s *Server, r *request[inventory.Spec]) error {
	sealed, err := sealKubeconfig(s, r.file, r.id)
	r.secret = sealed
	return err
}

// Inventories run the cluster inventories' workflows (the inventory feature's Starter, features/inventory).
type Inventories interface {
	// WakeInventory has the inventory's workflow sync now, started if start and none runs.
	WakeInventory(ctx context.Context, in flow.InventoryInput, start bool) error
}

// wakeInventory starts the inventory's workflow when it is stored, and has it sync the
// change now (a deleted inventory ends it).
func wakeInventory(ctx context.Context, s *Server, id string) error {
	if s.Inventories == nil {
		return nil
	}
	seg := strings.Split(id, "/") // "", "cluster-providers", p, "cluster-inventories", name
	in := flow.InventoryInput{Provider: seg[2], Name: seg[4]}
	return wakeAfterChange(ctx, s, id, "sync", func(ctx context.Context, start bool) error {
		return s.Inventories.WakeInventory(ctx, in, start)
	})
}

// inventoryStatus answers GET .../cluster-inventories/{name}/status: the last sync (none
// yet: no profiles and a zero time).
type inventoryStatus struct {
	Name string `json:"name"`
	flow.InventoryStatus
}

func (s *Server) inventoryStatus(c echo.Context) error {
	id, err := fill(c, routeInventories+"/:clusterInventory")
	if err != nil {
		return err
	}
	d, err := s.Store.Get(c.Request().Context(), id)
	if err != nil {
		return fromStore(err)
	}
	out := inventoryStatus{Name: d.Name, InventoryStatus: flow.InventoryStatus{Profiles: []flow.ProfileStatus{}, Decisions: []flow.DecisionStatus{}}}
	if d.State != "" {
		if err := json.Unmarshal([]byte(d.State), &out.InventoryStatus); err != nil {
			return err
		}
	}
	return c.JSON(http.StatusOK, out)
}
