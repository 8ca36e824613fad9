// Package placement runs generic placement (allOf / anyOf by cluster name and label)
// and lays out the result as batches of clusters for the fan-out.
package placement

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	"go.temporal.io/sdk/temporal"
	"golang.org/x/sync/errgroup"

	"github.com/temco/temco/activities/logicalcloud"
	"github.com/temco/temco/internal/core/appctx"
	"github.com/temco/temco/internal/core/ctxedit"
	"github.com/temco/temco/internal/core/events/feed"
	"github.com/temco/temco/internal/core/lifecycle"
	"github.com/temco/temco/internal/core/model"
	"github.com/temco/temco/internal/core/rollout"
	"github.com/temco/temco/internal/core/store"
)

// DefaultClustersPerBatch is how many clusters one batch (one child workflow) applies;
// with a window of batches in flight this bounds concurrent activities per operation.
// 250 since issue 66: Temporal's CPU per operation grows with its batches (for 1,000
// clusters: 1.0 s with 50, 0.47 with 100, 0.25 with 250; BENCHMARKS.md), and a batch's
// clusters share one group document (packed: a few KB) and one group activity.
const DefaultClustersPerBatch = 250

// Activities places apps.
type Activities struct {
	Store            *store.Store
	Contexts         *appctx.Store
	ClustersPerBatch int // 0: DefaultClustersPerBatch
	// FanOut names the built-in fan-out controller (dtc) a registration means, if any: its
	// step becomes the steps of its sub-controllers.
	FanOut func(name, host string) (string, bool)
	// Events raises the autoscalers' decisions (nil: none).
	Events *feed.Emitter
}

func invalid(format string, args ...any) error {
	return temporal.NewNonRetryableApplicationError(fmt.Sprintf(format, args...), lifecycle.ErrInvalidInput, nil)
}

// PlaceApps resolves the DIG's intents: generic placement of every app, then the list of
// controllers to invoke. It stores one placement per app and cluster, unlisted: it runs
// beside rendering, and the rendered app lists the objects (all Pending until applied).
func (a *Activities) PlaceApps(ctx context.Context, in lifecycle.ContextRef) (lifecycle.Plan, error) {
	var (
		gpi         string
		controllers []lifecycle.Controller
		appIntents  map[string][]model.PlacementIntent
		apps        []string
		cloud       *cloudMembers
	)
	// Three independent chains of database reads, run together.
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() (err error) {
		if gpi, controllers, err = a.intents(gctx, in.Target); err != nil {
			return err
		}
		appIntents, err = a.appIntents(gctx, in.Target.ID()+"/generic-placement-intents/"+gpi)
		return err
	})
	g.Go(func() error {
		docs, err := a.Store.List(gctx, store.Query{Parent: in.Target.CompositeAppID(), Kind: model.KindApp})
		for _, d := range docs {
			apps = append(apps, d.Name)
		}
		return err
	})
	g.Go(func() (err error) {
		cloud, err = a.cloudOf(gctx, in.Target)
		return err
	})
	if err := g.Wait(); err != nil {
		return lifecycle.Plan{}, err
	}
	reg := &storeRegistry{ctx: ctx, store: a.Store}
	groups := make(map[string][][]string, len(apps))
	for _, app := range apps {
		intents := appIntents[app]
		if len(intents) == 0 {
			return lifecycle.Plan{}, invalid("app %q has no app placement intent in generic placement intent %q", app, gpi)
		}
		g, err := Groups(app, intents, reg)
		if err != nil {
			if reg.err != nil {
				return lifecycle.Plan{}, reg.err
			}
			return lifecycle.Plan{}, invalid("%v", err)
		}
		groups[app] = g
	}
	if err := a.placeCapacity(ctx, in.Target, cloud, groups); err != nil {
		return lifecycle.Plan{}, err
	}
	if len(controllers) > 0 { // they work on the groups; CommitControllers places
		if err := a.Contexts.PutGroups(ctx, in.ContextID, groups); err != nil {
			return lifecycle.Plan{}, err
		}
		return lifecycle.Plan{Apps: len(apps), Controllers: controllers}, nil
	}
	placedOn := make(map[string][]string, len(apps))
	for app, g := range groups {
		placedOn[app] = ctxedit.Resolve(g)
	}
	var placed []*appctx.ClusterApp
	for _, app := range apps {
		for _, cl := range placedOn[app] {
			placed = append(placed, &appctx.ClusterApp{App: app, Cluster: cl, Unlisted: true})
		}
	}
	return a.store(ctx, in.Target, in.ContextID, cloud, placed)
}

// store checks the placement against the logical cloud and stores it in batches.
func (a *Activities) store(ctx context.Context, target lifecycle.Target, ctxID string, cloud *cloudMembers, placed []*appctx.ClusterApp) (lifecycle.Plan, error) {
	union, apps := map[string]bool{}, map[string]bool{}
	for _, p := range placed {
		union[p.Cluster], apps[p.App] = true, true
	}
	all := slices.Sorted(maps.Keys(union))
	if err := cloud.check(all); err != nil {
		return lifecycle.Plan{}, err
	}
	perBatch := a.perBatch()
	var staged *rollout.Plan
	var batchOf map[string]int
	if target.Kind().Staged {
		var err error
		if staged, batchOf, err = Stages(ctx, a.Store, target.ID(), all, perBatch); err != nil {
			return lifecycle.Plan{}, err
		}
	}
	batches := (len(all) + perBatch - 1) / perBatch
	if staged == nil {
		batchOf = make(map[string]int, len(all))
		for i, cl := range all {
			batchOf[cl] = i / perBatch
		}
	} else if n := len(staged.Stages); n > 0 {
		last := staged.Stages[n-1]
		batches = last.FirstBatch + last.Batches
	}
	if err := a.Contexts.PutPlacement(ctx, ctxID, placed, batchOf); err != nil {
		return lifecycle.Plan{}, err
	}
	plan := lifecycle.Plan{Apps: len(apps), Clusters: len(all), Batches: batches, Rollout: staged}
	if batches == 1 && staged == nil {
		plan.FirstBatch = all
	}
	return plan, nil
}

func (a *Activities) perBatch() int {
	if a.ClustersPerBatch <= 0 {
		return DefaultClustersPerBatch
	}
	return a.ClustersPerBatch
}

// CommitControllers makes the controllers' edits the context: each app goes to what its
// groups resolve to, with the objects the edits left (per cluster where they differ).
// It starts from the stored rendering and placement every time, so a retry commits the
// same context.
func (a *Activities) CommitControllers(ctx context.Context, in lifecycle.ContextRef) (lifecycle.Plan, error) {
	s, err := ctxedit.Load(ctx, a.Contexts, in.ContextID, -1)
	if err != nil {
		return lifecycle.Plan{}, err
	}
	cloud, err := a.cloudOf(ctx, in.Target)
	if err != nil {
		return lifecycle.Plan{}, err
	}
	h, err := a.Contexts.Get(ctx, in.ContextID)
	if err != nil {
		return lifecycle.Plan{}, err
	}
	rendered, err := a.Contexts.Apps(ctx, h)
	if err != nil {
		return lifecycle.Plan{}, err
	}
	var placed []*appctx.ClusterApp
	var edited, added []*appctx.App
	for _, name := range s.Order {
		app := s.Apps[name]
		clusters := app.Clusters()
		if len(clusters) == 0 {
			return lifecycle.Plan{}, invalid("no cluster is left for app %q after the placement controllers", name)
		}
		for _, cl := range clusters {
			ca := &appctx.ClusterApp{App: name, Cluster: cl, Unlisted: true}
			if own, ok := app.PerCluster[cl]; ok {
				ca.Unlisted, ca.Objects = false, own
				for _, o := range own {
					ca.Resources = append(ca.Resources, appctx.ResourceStatus{Ref: o.Ref, Status: lifecycle.ResPending})
				}
			}
			placed = append(placed, ca)
		}
		switch {
		case app.Added:
			added = append(added, &appctx.App{Name: name, Objects: app.Objects, Added: true})
		case app.Edited:
			r := rendered[name]
			base := r.Base
			if base == nil {
				base = r.Objects
			}
			edited = append(edited, &appctx.App{Name: name, Objects: app.Objects, Base: base})
		}
	}
	if err := a.Contexts.PutCommitted(ctx, in.ContextID, edited); err != nil {
		return lifecycle.Plan{}, err
	}
	if len(added) > 0 { // the apps first: a header must not list an app that has no document
		if err := a.Contexts.AddApps(ctx, in.ContextID, added, s.Order); err != nil {
			return lifecycle.Plan{}, err
		}
	}
	return a.store(ctx, in.Target, in.ContextID, cloud, placed)
}

// cloudMembers are the clusters of the DIG's logical cloud.
type cloudMembers struct {
	name    string
	members map[string]bool
}

func (a *Activities) cloudOf(ctx context.Context, dig lifecycle.Target) (*cloudMembers, error) {
	d, err := a.Store.Get(ctx, dig.ID())
	if err != nil {
		return nil, err
	}
	spec, err := model.Decode[model.DIGSpec](d.Body)
	if err != nil {
		return nil, err
	}
	members, err := logicalcloud.Clusters(ctx, a.Store, lifecycle.LogicalCloudID(dig.Project, spec.Spec.LogicalCloud))
	if err != nil {
		return nil, err
	}
	m := &cloudMembers{name: spec.Spec.LogicalCloud, members: make(map[string]bool, len(members))}
	for _, c := range members {
		m.members[c] = true
	}
	return m, nil
}

// check refuses a placement on a cluster outside the logical cloud.
func (m *cloudMembers) check(clusters []string) error {
	for _, c := range clusters {
		if !m.members[c] {
			return invalid("the placement selects cluster %q, which is not in logical cloud %q", c, m.name)
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
			if t := spec.Spec.Type; t != model.ControllerPlacement && t != model.ControllerAction {
				continue // as in EMCO: a controller of another type (rsync has none) is not run
			}
			c := lifecycle.Controller{Name: key, Type: spec.Spec.Type, Intent: intent, Priority: spec.Spec.Priority,
				TaskQueue: spec.Spec.TaskQueue}
			if a.FanOut != nil && spec.Spec.TaskQueue == "" {
				if parent, ok := a.FanOut(key, spec.Spec.Host); ok {
					c.Parent = parent // marks the step to expand, below
				}
			}
			ctrls = append(ctrls, c)
		}
	}
	if gpi == "" {
		return "", nil, invalid("no intent of the DIG names a %s", model.GenericPlacementIntentKey)
	}
	byPriority(ctrls)
	ctrls, err = a.expand(ctx, ctrls)
	return gpi, ctrls, err
}

// expand replaces each fan-out controller's step by its sub-controllers (bySubPriority),
// each with the fan-out's intent. With none registered the step runs nothing, as in EMCO.
func (a *Activities) expand(ctx context.Context, ctrls []lifecycle.Controller) ([]lifecycle.Controller, error) {
	var out []lifecycle.Controller
	for _, c := range ctrls {
		if c.Parent == "" {
			out = append(out, c)
			continue
		}
		docs, err := a.Store.List(ctx, store.Query{Kind: lifecycle.SubcontrollerKind(c.Parent)})
		if err != nil {
			return nil, err
		}
		var subs []lifecycle.Controller
		for _, d := range docs {
			sp, err := model.Decode[model.ControllerSpec](d.Body)
			if err != nil {
				return nil, err
			}
			subs = append(subs, lifecycle.Controller{Name: d.Name, Type: model.ControllerAction, Intent: c.Intent,
				Priority: sp.Spec.Priority, TaskQueue: sp.Spec.TaskQueue, Parent: c.Parent})
		}
		bySubPriority(subs)
		out = append(out, subs...)
	}
	return out, nil
}

// bySubPriority orders sub-controllers as EMCO's dtc calls them: higher priority first
// (the reverse of the DIG's controllers), ties by name.
func bySubPriority(subs []lifecycle.Controller) {
	sort.SliceStable(subs, func(i, j int) bool {
		if subs[i].Priority != subs[j].Priority {
			return subs[i].Priority > subs[j].Priority
		}
		return subs[i].Name < subs[j].Name
	})
}

// byPriority orders controllers as EMCO runs them: placement controllers before action
// controllers, each by priority (lower first), ties by name.
func byPriority(ctrls []lifecycle.Controller) {
	sort.SliceStable(ctrls, func(i, j int) bool {
		pi, pj := ctrls[i].Type == model.ControllerPlacement, ctrls[j].Type == model.ControllerPlacement
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

// storeRegistry answers placement's questions from the resource store, each once per
// activity (apps placed by the same label are the rule, and a label may name 10,000
// clusters); a store error is kept aside so that it is retried, not reported as a
// placement mistake.
type storeRegistry struct {
	ctx      context.Context
	store    *store.Store
	err      error
	exists   map[string]bool
	labelled map[string][]string
}

func (r *storeRegistry) ClusterExists(provider, cluster string) (bool, error) {
	id := "/cluster-providers/" + provider + "/clusters/" + cluster
	if ok, seen := r.exists[id]; seen {
		return ok, nil
	}
	ok, err := r.store.Exists(r.ctx, id)
	if err != nil {
		r.err = err
		return false, err
	}
	if r.exists == nil {
		r.exists = map[string]bool{}
	}
	r.exists[id] = ok
	return ok, nil
}

func (r *storeRegistry) ClustersWithLabel(provider, label string) ([]string, error) {
	key := provider + "\x00" + label
	if names, seen := r.labelled[key]; seen {
		return names, nil
	}
	docs, err := r.store.ListCurrent(r.ctx, store.Query{Scope: "/cluster-providers/" + provider, Kind: model.KindClusterLabel, Name: label})
	if err != nil {
		r.err = err
		return nil, err
	}
	names := make([]string, len(docs))
	for i, d := range docs {
		names[i] = d.Parent[strings.LastIndex(d.Parent, "/")+1:]
	}
	sort.Strings(names)
	if r.labelled == nil {
		r.labelled = map[string][]string{}
	}
	r.labelled[key] = names
	return names, nil
}
