package inventory

import (
	"context"
	"encoding/json"
	"net/http"
	"reflect"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/temco/temco/api"
	"github.com/temco/temco/features/inventory/flow"
	"github.com/temco/temco/internal/core/inventory"
	"github.com/temco/temco/internal/core/model"
	"github.com/temco/temco/internal/core/store"
)

// Cluster inventories' part of the api: a cluster provider's cluster inventory, temco's
// own resource (EMCO has none), at most one per provider, a hub of ClusterProfiles whose
// clusters temco registers under the provider and keeps in step, and where it publishes
// every DIG's clusters as PlacementDecisions (internal/core/inventory, docs/inventory.md).
// Its file is the hub's kubeconfig, sealed as a cluster's; its status is its last sync.

// routeInventories is a cluster provider's cluster inventories, and routeItem one.
const (
	routeInventories = "/cluster-providers/:clusterProvider/cluster-inventories"
	routeItem        = routeInventories + "/:clusterInventory"
)

// Inventories run the cluster inventories' workflows: the Starter, or a test's.
type Inventories interface {
	// WakeInventory has the inventory's workflow sync now, started if start and none runs.
	WakeInventory(ctx context.Context, in flow.InventoryInput, start bool) error
}

// Extension is cluster inventories' part of the api over inv; inv nil: the feature is
// switched off, and a create or replace of an inventory answers 503 (what is stored is
// still read and deleted).
func Extension(inv Inventories) api.Extension {
	return api.Extension{Name: "inventory", Mount: func(m *api.Mount) {
		r := routes{m: m, inv: inv}
		m.Kind(api.KindDef[inventory.Spec]{Name: model.KindClusterInventory, Root: true,
			Path: routeInventories, Param: "clusterInventory", Check: r.check, Changed: r.wake,
			File: &api.FileDef[inventory.Spec]{Required: true, Attach: attachKubeconfig}})
		m.Route(api.Doc{Method: http.MethodGet, Path: routeItem + "/status", Code: http.StatusOK, Response: reflect.TypeFor[status](),
			Summary: "The last sync of a cluster inventory: each ClusterProfile and its cluster, the PlacementDecisions written"},
			r.status)
	}}
}

type routes struct {
	m   *api.Mount
	inv Inventories
}

func (r routes) check(ctx context.Context, q *api.Request[inventory.Spec]) error {
	if r.inv == nil {
		return api.Unavailable("this temco runs no cluster inventories: feature inventory is switched off (--disable-features)")
	}
	if err := q.Resource().Spec.Validate(); err != nil {
		return api.BadRequest("%v", err)
	}
	others, err := q.Store().List(ctx, store.Query{Parent: q.Parent(), Kind: model.KindClusterInventory})
	if err != nil {
		return err
	}
	for _, o := range others {
		if o.ID != q.ID() {
			return api.Conflict("%s already has %s: a cluster provider has one cluster inventory at most; replace it (PUT) or delete it first",
				api.Describe(q.Parent()), api.Describe(o.ID))
		}
	}
	return nil
}

// attachKubeconfig keeps the hub's kubeconfig sealed, bound to the inventory's id.
func attachKubeconfig(_ context.Context, q *api.Request[inventory.Spec]) error {
	file, _ := q.File()
	if err := api.CheckKubeconfig(file); err != nil {
		return err
	}
	return q.SetSealed(file)
}

// wake starts the inventory's workflow when it is stored, and has it sync the change now
// (a deleted inventory ends it).
func (r routes) wake(ctx context.Context, id string) error {
	if r.inv == nil {
		return nil
	}
	seg := strings.Split(id, "/") // "", "cluster-providers", p, "cluster-inventories", name
	in := flow.InventoryInput{Provider: seg[2], Name: seg[4]}
	return r.m.WakeAfterChange(ctx, id, "sync", func(ctx context.Context, start bool) error {
		return r.inv.WakeInventory(ctx, in, start)
	})
}

// status answers GET .../cluster-inventories/{name}/status: the last sync (none yet: no
// profiles and a zero time).
type status struct {
	Name string `json:"name"`
	flow.InventoryStatus
}

func (r routes) status(c echo.Context) error {
	d, err := r.m.Get(c, routeItem)
	if err != nil {
		return err
	}
	out := status{Name: d.Name, InventoryStatus: flow.InventoryStatus{Profiles: []flow.ProfileStatus{}, Decisions: []flow.DecisionStatus{}}}
	if d.State != "" {
		if err := json.Unmarshal([]byte(d.State), &out.InventoryStatus); err != nil {
			return err
		}
	}
	return c.JSON(http.StatusOK, out)
}
