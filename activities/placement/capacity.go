package placement

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"go.temporal.io/sdk/temporal"

	"github.com/temco/temco/internal/core/appctx"
	"github.com/temco/temco/internal/core/capacity"
	"github.com/temco/temco/internal/core/digstate"
	"github.com/temco/temco/internal/core/events"
	"github.com/temco/temco/internal/core/inventory"
	"github.com/temco/temco/internal/core/lifecycle"
	"github.com/temco/temco/internal/core/model"
	"github.com/temco/temco/internal/core/store"
)

// A DIG's capacity placement (docs/autoscaling.md) decides the clusters of the apps it
// names: they go to its members, which the DIG's autoscaler (features/autoscale/flow) keeps in
// the placement's stored state. Before the autoscaler has recorded any, they go to the
// clusters its first evaluation would choose. The apps' placement intents still bound
// where they may go: a cluster is eligible only if each of those apps' intents selects it.

// capacityDoc is a DIG's capacity placement and the autoscaler's record in it (nil: none).
type capacityDoc struct {
	doc   *store.Doc
	name  string
	spec  capacity.Spec
	state lifecycle.AutoscaleState
}

func (a *Activities) capacityOf(ctx context.Context, dig lifecycle.Target) (*capacityDoc, error) {
	docs, err := a.Store.List(ctx, store.Query{Parent: dig.ID(), Kind: model.KindCapacityPlacement})
	if err != nil || len(docs) == 0 {
		return nil, err
	}
	r, err := model.Decode[capacity.Spec](docs[0].Body)
	if err != nil {
		return nil, err
	}
	c := &capacityDoc{doc: docs[0], name: docs[0].Name, spec: r.Spec.WithDefaults()}
	if docs[0].State != "" {
		if err := json.Unmarshal([]byte(docs[0].State), &c.state); err != nil {
			return nil, fmt.Errorf("decode the autoscaler's record in %s: %w", docs[0].ID, err)
		}
	}
	return c, nil
}

// apps are the apps the capacity placement places.
func (c *capacityDoc) apps() []string {
	var out []string
	for _, w := range c.spec.Workloads {
		if !slices.Contains(out, w.App) {
			out = append(out, w.App)
		}
	}
	return out
}

// eligible lists the eligible clusters in order of preference: those the spec selects
// from the logical cloud's, that every app of the placement may go to (groups: each app's
// placement groups).
func (c *capacityDoc) eligible(ctx context.Context, st *store.Store, cloud *cloudMembers, groups map[string][][]string) ([]string, error) {
	var order []string
	if listed := c.spec.Eligible.Clusters; len(listed) > 0 {
		for i, name := range listed {
			key, err := cloud.resolve(name)
			if err != nil {
				return nil, invalid("capacity placement %q: spec.eligible.clusters[%d]: %v", c.name, i, err)
			}
			if key != "" && !slices.Contains(order, key) {
				order = append(order, key)
			}
		}
	} else {
		for k := range cloud.members {
			order = append(order, k)
		}
		slices.Sort(order)
	}
	if p := c.spec.Eligible.NamePattern; p != "" {
		re, err := regexp.Compile(p)
		if err != nil {
			return nil, invalid("capacity placement %q: spec.eligible.namePattern: %v", c.name, err)
		}
		order = slices.DeleteFunc(order, func(k string) bool { return !re.MatchString(k) })
	}
	if want := c.spec.Eligible.ClusterLabels; len(want) > 0 {
		members, err := labelled(ctx, st, order)
		if err != nil {
			return nil, err
		}
		order = order[:0]
		for _, m := range members {
			if !slices.ContainsFunc(want, func(l string) bool { return !slices.Contains(m.Labels, l) }) {
				order = append(order, m.Key)
			}
		}
	}
	for _, app := range c.apps() {
		allowed := map[string]bool{}
		for _, g := range groups[app] {
			for _, cl := range g {
				allowed[cl] = true
			}
		}
		order = slices.DeleteFunc(order, func(k string) bool { return !allowed[k] })
	}
	return order, nil
}

// usable leaves out of clusters those a cluster inventory took out of placements: their
// ClusterProfile is unhealthy or gone (internal/core/inventory).
func usable(ctx context.Context, st *store.Store, clusters []string) ([]string, error) {
	members, err := labelled(ctx, st, clusters)
	if err != nil {
		return nil, err
	}
	out := clusters[:0:0]
	for _, m := range members {
		if !slices.Contains(m.Labels, inventory.LabelUnhealthy) && !slices.Contains(m.Labels, inventory.LabelRemoved) {
			out = append(out, m.Key)
		}
	}
	return out, nil
}

// members are the clusters the placement's apps go to: the autoscaler's members, else
// those its first evaluation would choose.
func (c *capacityDoc) members(eligible []string, now time.Time) ([]string, error) {
	if len(c.state.Members) > 0 {
		return capacity.Clusters(c.state.Members), nil
	}
	first := capacity.Clusters(capacity.Decide(c.spec, nil, eligible, nil, now).Members)
	if len(first) == 0 {
		return nil, invalid("capacity placement %q: no cluster is eligible (of the logical cloud's, selected by spec.eligible, and by the placement intents of apps %s)",
			c.name, strings.Join(c.apps(), ", "))
	}
	return first, nil
}

// placeCapacity gives the capacity placement's apps their members, each a group of its own.
func (a *Activities) placeCapacity(ctx context.Context, dig lifecycle.Target, cloud *cloudMembers, groups map[string][][]string) error {
	c, err := a.capacityOf(ctx, dig)
	if err != nil || c == nil {
		return err
	}
	eligible, err := c.eligible(ctx, a.Store, cloud, groups)
	if err == nil {
		eligible, err = usable(ctx, a.Store, eligible)
	}
	if err != nil {
		return err
	}
	members, err := c.members(eligible, time.Now())
	if err != nil {
		return err
	}
	for _, app := range c.apps() {
		if _, ok := groups[app]; !ok {
			return invalid("capacity placement %q names app %q, which the composite app does not have", c.name, app)
		}
		g := make([][]string, len(members))
		for i, m := range members {
			g[i] = []string{m}
		}
		groups[app] = g
	}
	return nil
}

// resolve returns the cluster key of a listed eligible cluster: "provider+cluster" as
// given, a bare "cluster" the one of that name in the logical cloud; one not in the
// logical cloud is "" (not eligible).
func (m *cloudMembers) resolve(name string) (string, error) {
	if strings.Contains(name, "+") {
		if m.members[name] {
			return name, nil
		}
		return "", nil
	}
	var found []string
	for k := range m.members {
		if _, c := lifecycle.SplitClusterKey(k); c == name {
			found = append(found, k)
		}
	}
	switch len(found) {
	case 0:
		return "", nil
	case 1:
		return found[0], nil
	}
	slices.Sort(found)
	return "", fmt.Errorf("%q names clusters of several providers (%s): name one as provider+cluster", name, strings.Join(found, ", "))
}

// ObserveCapacity is what an evaluation of the DIG's autoscaler starts from (see
// lifecycle.CapacityView).
func (a *Activities) ObserveCapacity(ctx context.Context, in lifecycle.CapacityObserveInput) (lifecycle.CapacityView, error) {
	dig := in.Target
	c, err := a.capacityOf(ctx, dig)
	if err != nil || c == nil {
		return lifecycle.CapacityView{}, err
	}
	view := lifecycle.CapacityView{Name: c.name, Spec: c.spec}
	_, info, err := digstate.Load(ctx, a.Store, dig.ID())
	if err != nil {
		return view, err
	}
	if st := info.Current(); st != lifecycle.StateInstantiated {
		view.Waiting = fmt.Sprintf("the DIG is %s, not %s", st, lifecycle.StateInstantiated)
		return view, nil
	}
	view.Deployed, view.ContextID = true, info.ContextID()
	header, err := a.Contexts.Get(ctx, view.ContextID)
	if err != nil {
		return view, err
	}
	if header.Status != lifecycle.StatusInstantiated {
		view.Waiting = fmt.Sprintf("its context %s is %s: an operation runs, or the last one did not succeed", view.ContextID, header.Status)
		return view, nil
	}
	if in.Seed {
		placed, err := a.Contexts.Placements(ctx, view.ContextID, appctx.Filter{Apps: c.apps()})
		if err != nil {
			return view, err
		}
		for _, p := range placed {
			if !slices.Contains(view.Placed, p.Cluster) {
				view.Placed = append(view.Placed, p.Cluster)
			}
		}
		slices.Sort(view.Placed)
	}
	groups, cloud, err := a.groupsOf(ctx, dig, c.apps())
	if err == nil {
		view.Eligible, err = c.eligible(ctx, a.Store, cloud, groups)
	}
	if err == nil {
		view.Eligible, err = usable(ctx, a.Store, view.Eligible)
	}
	// A capacity placement that cannot be used, or leaves no cluster eligible, changes
	// nothing until it is mended: evicting every cluster is never what was meant.
	var appErr *temporal.ApplicationError
	switch {
	case errors.As(err, &appErr) && appErr.Type() == lifecycle.ErrInvalidInput:
		view.Waiting = fmt.Sprintf("capacity placement %q cannot be used: %s", c.name, appErr.Message())
		return view, nil
	case err != nil:
		return view, err
	case len(view.Eligible) == 0:
		view.Waiting = fmt.Sprintf("capacity placement %q leaves no cluster eligible (of logical cloud %q's, selected by spec.eligible and by the placement intents of apps %s)",
			c.name, cloud.name, strings.Join(c.apps(), ", "))
	}
	return view, nil
}

// groupsOf resolves the placement groups of apps, and the DIG's logical cloud.
func (a *Activities) groupsOf(ctx context.Context, dig lifecycle.Target, apps []string) (map[string][][]string, *cloudMembers, error) {
	cloud, err := a.cloudOf(ctx, dig)
	if err != nil {
		return nil, nil, err
	}
	gpi, _, err := a.intents(ctx, dig)
	if err != nil {
		return nil, nil, err
	}
	intents, err := a.appIntents(ctx, dig.ID()+"/generic-placement-intents/"+gpi)
	if err != nil {
		return nil, nil, err
	}
	reg := &storeRegistry{ctx: ctx, store: a.Store}
	groups := map[string][][]string{}
	for _, app := range apps {
		g, err := Groups(app, intents[app], reg)
		if reg.err != nil {
			return nil, nil, reg.err
		}
		if err != nil {
			return nil, nil, invalid("%v", err)
		}
		groups[app] = g
	}
	return groups, cloud, nil
}

// RecordCapacity stores the autoscaler's state in its capacity placement (where placement
// reads the members and the status shows it); Name "" (the placement gone) does nothing.
func (a *Activities) RecordCapacity(ctx context.Context, in lifecycle.CapacityRecord) error {
	if in.Name == "" {
		return nil
	}
	state, err := json.Marshal(in.State)
	if err != nil {
		return err
	}
	id := in.DIG.ID() + "/capacity-placements/" + in.Name
	for {
		d, err := a.Store.Get(ctx, id)
		if store.CodeOf(err) == store.ErrNotFound {
			return nil // deleted meanwhile: the autoscaler ends at its next evaluation
		}
		if err != nil {
			return err
		}
		d.State = string(state)
		if err := a.Store.SetState(ctx, d); store.CodeOf(err) != store.ErrConflict {
			if err != nil {
				return err
			}
			return a.Events.Emit(ctx, decisionEvents(in)...)
		}
	}
}

// decisionEvents raise the record's last evaluation when it decided something. Records
// that follow (its outcome) carry it again: its id, the DIG's and the evaluation's time,
// makes it one event.
func decisionEvents(in lifecycle.CapacityRecord) []events.Event {
	last := in.State.Last
	if last == nil || last.Decision == nil {
		return nil
	}
	e := events.Event{ID: events.ID(in.DIG.ID(), events.AutoscalerDecision, last.At.Format(time.RFC3339Nano)),
		Type: events.AutoscalerDecision, Time: last.At,
		Details: map[string]any{"capacityPlacement": in.Name, "decision": last.Summary, "update": last.Update}}
	e.About(in.DIG.ID())
	e.Summary = "the autoscaler of " + e.Name() + " decided: " + last.Summary
	return []events.Event{e}
}
