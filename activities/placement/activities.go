// Package placement runs generic placement (allOf / anyOf by cluster name and label)
// and lays out the result as batches of clusters for the fan-out.
package placement

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.temporal.io/sdk/temporal"

	"github.com/temco/temco/activities/logicalcloud"
	"github.com/temco/temco/internal/appctx"
	"github.com/temco/temco/internal/lifecycle"
	"github.com/temco/temco/internal/model"
	"github.com/temco/temco/internal/store"
)

// DefaultClustersPerBatch is how many clusters one batch (one child workflow) applies;
// with a window of batches in flight this bounds concurrent activities per operation.
const DefaultClustersPerBatch = 50

// Activities places apps.
type Activities struct {
	Store            *store.Store
	Contexts         *appctx.Store
	ClustersPerBatch int // 0: DefaultClustersPerBatch
}

func invalid(format string, args ...any) error {
	return temporal.NewNonRetryableApplicationError(fmt.Sprintf(format, args...), lifecycle.ErrInvalidInput, nil)
}

// PlaceApps resolves the DIG's intents: generic placement of every app, then the list of
// controllers to invoke. It stores one Pending placement per app and cluster.
func (a *Activities) PlaceApps(ctx context.Context, in lifecycle.ContextRef) (lifecycle.Plan, error) {
	gpi, controllers, err := a.intents(ctx, in.DIG)
	if err != nil {
		return lifecycle.Plan{}, err
	}
	appIntents, err := a.appIntents(ctx, in.DIG.ID()+"/generic-placement-intents/"+gpi)
	if err != nil {
		return lifecycle.Plan{}, err
	}
	c, err := a.Contexts.Get(ctx, in.ContextID)
	if err != nil {
		return lifecycle.Plan{}, err
	}
	apps, err := a.Contexts.Apps(ctx, c)
	if err != nil {
		return lifecycle.Plan{}, err
	}
	reg := &storeRegistry{ctx: ctx, store: a.Store}
	placedOn := map[string][]string{}
	union := map[string]bool{}
	for _, app := range c.Apps {
		intents := appIntents[app]
		if len(intents) == 0 {
			return lifecycle.Plan{}, invalid("app %q has no app placement intent in generic placement intent %q", app, gpi)
		}
		clusters, err := Place(app, intents, reg)
		if err != nil {
			if reg.err != nil {
				return lifecycle.Plan{}, reg.err
			}
			return lifecycle.Plan{}, invalid("%v", err)
		}
		placedOn[app] = clusters
		for _, cl := range clusters {
			union[cl] = true
		}
	}
	all := make([]string, 0, len(union))
	for cl := range union {
		all = append(all, cl)
	}
	sort.Strings(all)
	if err := a.inCloud(ctx, in.DIG, all); err != nil {
		return lifecycle.Plan{}, err
	}
	perBatch := a.ClustersPerBatch
	if perBatch <= 0 {
		perBatch = DefaultClustersPerBatch
	}
	batchOf := make(map[string]int, len(all))
	for i, cl := range all {
		batchOf[cl] = i / perBatch
	}
	var placed []*appctx.ClusterApp
	for _, app := range c.Apps {
		for _, cl := range placedOn[app] {
			res := make([]appctx.ResourceStatus, len(apps[app].Objects))
			for i, o := range apps[app].Objects {
				res[i] = appctx.ResourceStatus{Ref: o.Ref, Status: lifecycle.ResPending}
			}
			placed = append(placed, &appctx.ClusterApp{App: app, Cluster: cl, Resources: res})
		}
	}
	if err := a.Contexts.PutPlacement(ctx, in.ContextID, placed, batchOf); err != nil {
		return lifecycle.Plan{}, err
	}
	batches := (len(all) + perBatch - 1) / perBatch
	if err := a.Contexts.Set(ctx, in.ContextID, bson.D{{Key: "clusters", Value: len(all)}, {Key: "batches", Value: batches}}); err != nil {
		return lifecycle.Plan{}, err
	}
	plan := lifecycle.Plan{Apps: len(c.Apps), Clusters: len(all), Batches: batches, Controllers: controllers}
	if batches == 1 {
		plan.FirstBatch = all
	}
	return plan, nil
}

// inCloud refuses a placement on a cluster outside the DIG's logical cloud.
func (a *Activities) inCloud(ctx context.Context, dig lifecycle.Target, clusters []string) error {
	d, err := a.Store.Get(ctx, dig.ID())
	if err != nil {
		return err
	}
	spec, err := model.Decode[model.DIGSpec](d.Body)
	if err != nil {
		return err
	}
	members, err := logicalcloud.Clusters(ctx, a.Store, lifecycle.LogicalCloudID(dig.Project, spec.Spec.LogicalCloud))
	if err != nil {
		return err
	}
	in := make(map[string]bool, len(members))
	for _, m := range members {
		in[m] = true
	}
	for _, c := range clusters {
		if !in[c] {
			return invalid("the placement selects cluster %q, which is not in logical cloud %q", c, spec.Spec.LogicalCloud)
		}
	}
	return nil
}

// intents reads the DIG's intents: the generic placement intent and the controllers
// named beside it, placement controllers first, each group by priority.
func (a *Activities) intents(ctx context.Context, dig lifecycle.Target) (string, []lifecycle.Controller, error) {
	docs, err := a.Store.List(ctx, store.Query{Parent: dig.ID(), Kind: model.KindDIGIntent})
	if err != nil {
		return "", nil, err
	}
	gpi := ""
	var ctrls []lifecycle.Controller
	types := map[string]string{}
	for _, d := range docs {
		r, err := model.Decode[model.DIGIntentSpec](d.Body)
		if err != nil {
			return "", nil, err
		}
		for key, intent := range r.Spec.Intent {
			if key == model.GenericPlacementIntentKey {
				if gpi != "" && gpi != intent {
					return "", nil, invalid("the DIG's intents name two generic placement intents: %q and %q", gpi, intent)
				}
				gpi = intent
				continue
			}
			cd, err := a.Store.Get(ctx, "/controllers/"+key)
			if store.CodeOf(err) == store.ErrNotFound {
				return "", nil, invalid("intent %q names controller %q, which is not registered", d.Name, key)
			}
			if err != nil {
				return "", nil, err
			}
			spec, err := model.Decode[model.ControllerSpec](cd.Body)
			if err != nil {
				return "", nil, err
			}
			types[key] = spec.Spec.Type
			ctrls = append(ctrls, lifecycle.Controller{Name: key, Intent: intent, Priority: spec.Spec.Priority, TaskQueue: spec.Spec.TaskQueue})
		}
	}
	if gpi == "" {
		return "", nil, invalid("no intent of the DIG names a %s", model.GenericPlacementIntentKey)
	}
	byPriority(ctrls, types)
	return gpi, ctrls, nil
}

// byPriority orders controllers as EMCO runs them: placement controllers before action
// controllers, each by priority (lower first), ties by name.
func byPriority(ctrls []lifecycle.Controller, types map[string]string) {
	sort.SliceStable(ctrls, func(i, j int) bool {
		pi, pj := types[ctrls[i].Name] == model.ControllerPlacement, types[ctrls[j].Name] == model.ControllerPlacement
		if pi != pj {
			return pi
		}
		if ctrls[i].Priority != ctrls[j].Priority {
			return ctrls[i].Priority < ctrls[j].Priority
		}
		return ctrls[i].Name < ctrls[j].Name
	})
}

// appIntents loads the app placement intents of a generic placement intent, by app.
func (a *Activities) appIntents(ctx context.Context, gpiID string) (map[string][]model.PlacementIntent, error) {
	docs, err := a.Store.List(ctx, store.Query{Parent: gpiID, Kind: model.KindAppIntent})
	if err != nil {
		return nil, err
	}
	out := map[string][]model.PlacementIntent{}
	for _, d := range docs {
		r, err := model.Decode[model.AppIntentSpec](d.Body)
		if err != nil {
			return nil, err
		}
		out[r.Spec.App] = append(out[r.Spec.App], r.Spec.Intent)
	}
	return out, nil
}

// storeRegistry answers placement's questions from the resource store; a store error is
// kept aside so that it is retried, not reported as a placement mistake.
type storeRegistry struct {
	ctx   context.Context
	store *store.Store
	err   error
}

func (r *storeRegistry) ClusterExists(provider, cluster string) (bool, error) {
	ok, err := r.store.Exists(r.ctx, "/cluster-providers/"+provider+"/clusters/"+cluster)
	if err != nil {
		r.err = err
	}
	return ok, err
}

func (r *storeRegistry) ClustersWithLabel(provider, label string) ([]string, error) {
	docs, err := r.store.List(r.ctx, store.Query{Scope: "/cluster-providers/" + provider, Kind: model.KindClusterLabel, Name: label})
	if err != nil {
		r.err = err
		return nil, err
	}
	names := make([]string, len(docs))
	for i, d := range docs {
		names[i] = d.Parent[strings.LastIndex(d.Parent, "/")+1:]
	}
	sort.Strings(names)
	return names, nil
}
