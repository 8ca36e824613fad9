package ovnaction

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/temco/temco/contract"
	"github.com/temco/temco/controllers"
	"github.com/temco/temco/controllers/ncm"
	"github.com/temco/temco/internal/core/lifecycle"
	"github.com/temco/temco/internal/core/model"
	"github.com/temco/temco/internal/core/store"
)

// controller annotates the workloads of the network-controller-intent a DIG names.
type controller struct {
	store controllers.Docs
	// networks reads what a cluster's network intents (ncm) offer.
	networks func(ctx context.Context, cluster string) (ncm.ClusterNetworks, error)
}

// Run plans the annotations of every workload of the intent and records them at once.
// Every run starts from the rendered workloads, so an update that drops an interface
// drops it from the annotation.
func (c *controller) Run(ctx context.Context, v contract.Context) error {
	in := v.Input()
	if in.Operation == contract.OpTerminate {
		return nil // the annotations go with the workloads
	}
	dig := lifecycle.Target{Project: in.Project, CompositeApp: in.CompositeApp, Version: in.CompositeAppVersion, DIG: in.DeploymentIntentGroup}.ID()
	workloads, err := loadIntent(ctx, c.store, dig, in.Intent)
	if err != nil {
		return err
	}
	apps, err := v.Apps(ctx)
	if err != nil {
		return err
	}
	p := &planner{view: v, ctrl: c, intent: in.Intent, apps: map[string]contract.App{}, multus: map[string]bool{},
		nets: map[string]ncm.ClusterNetworks{}, pods: map[podKey]*podAnnotations{}}
	for _, a := range apps {
		a.Clusters = slices.Sorted(slices.Values(a.Clusters))
		p.apps[a.Name] = a
	}
	for _, w := range workloads {
		if err := p.plan(ctx, w); err != nil {
			return err
		}
	}
	edits, err := p.edits(ctx)
	if err != nil || len(edits) == 0 {
		return err
	}
	return v.Edit(edits...)
}

// workloadIntent is a stored workload intent with its interfaces, in name order.
type workloadIntent struct {
	name       string
	spec       WorkloadIntentSpec
	interfaces []namedInterface
}

type namedInterface struct {
	name string
	spec InterfaceSpec
}

// loadIntent reads a network-controller-intent's workload intents and their interfaces.
func loadIntent(ctx context.Context, st controllers.Docs, dig, intent string) ([]workloadIntent, error) {
	id := dig + intentsPath + "/" + intent
	if _, err := st.Get(ctx, id); err != nil {
		if store.CodeOf(err) == store.ErrNotFound {
			return nil, contract.Refuse("the deployment intent group has no network-controller-intent %q", intent)
		}
		return nil, err
	}
	wdocs, err := st.List(ctx, store.Query{Parent: id, Kind: KindWorkloadIntent})
	if err != nil {
		return nil, err
	}
	out := make([]workloadIntent, 0, len(wdocs))
	for _, d := range wdocs {
		w, err := model.Decode[WorkloadIntentSpec](d.Body)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", d.ID, err)
		}
		idocs, err := st.List(ctx, store.Query{Parent: d.ID, Kind: KindInterface})
		if err != nil {
			return nil, err
		}
		wi := workloadIntent{name: d.Name, spec: w.Spec}
		for _, id := range idocs {
			i, err := model.Decode[InterfaceSpec](id.Body)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", id.ID, err)
			}
			wi.interfaces = append(wi.interfaces, namedInterface{name: id.Name, spec: i.Spec})
		}
		out = append(out, wi)
	}
	return out, nil
}

// planner turns workload intents into the annotations of each workload on each cluster.
type planner struct {
	view   contract.Context
	ctrl   *controller
	intent string
	apps   map[string]contract.App // clusters sorted
	multus map[string]bool         // by cluster
	nets   map[string]ncm.ClusterNetworks
	pods   map[podKey]*podAnnotations
	order  []podKey
}

// podKey is a workload of an app on one cluster.
type podKey struct{ app, cluster, kind, name string }

// plan adds a workload intent's interfaces to its workload on every cluster of its app
// that has it.
func (p *planner) plan(ctx context.Context, w workloadIntent) error {
	if len(w.interfaces) == 0 {
		return nil // as in EMCO, a workload intent acts only through its interfaces
	}
	where := fmt.Sprintf("network-controller-intent %q, workload intent %q", p.intent, w.name)
	app, ok := p.apps[w.spec.App]
	if !ok {
		return contract.Refuse("%s: the deployment has no app %q", where, w.spec.App)
	}
	if len(app.Clusters) == 0 {
		return nil // the app goes nowhere
	}
	specs := make([]InterfaceSpec, len(w.interfaces))
	for i, n := range w.interfaces {
		specs[i] = n.spec
	}
	var others []contract.Resource // the app's objects of the workload's name, for the refusal
	found := false
	for _, cl := range app.Clusters {
		objs, err := p.view.Resources(ctx, app.Name, cl)
		if err != nil {
			return err
		}
		r := find(objs, w.spec.Type, w.spec.WorkloadResource)
		if r == nil { // as in EMCO, a cluster without the workload is skipped
			others = append(others, named(objs, w.spec.WorkloadResource)...)
			continue
		}
		found = true
		if err := p.checkNetworks(ctx, where, w.interfaces, cl); err != nil {
			return err
		}
		pod, err := p.pod(app.Name, cl, r)
		if err != nil {
			return contract.Refuse("%s: %s %q of app %q %v", where, r.Kind, r.Name, app.Name, err)
		}
		pod.addInterfaces(specs)
		multus, err := p.multusOn(ctx, cl)
		if err != nil {
			return err
		}
		if !multus {
			continue
		}
		if err := pod.attachMultus(); err != nil {
			return contract.Refuse("%s: %s %q of app %q %v", where, r.Kind, r.Name, app.Name, err)
		}
	}
	if !found {
		hint := ""
		if len(others) > 0 {
			hint = fmt.Sprintf(" (it has a %s of that name: spec.type is the workload's kind, as in its manifest)", others[0].Kind)
		}
		return contract.Refuse("%s: app %q has no %s %q on any of its clusters %v%s", where, app.Name, w.spec.Type,
			w.spec.WorkloadResource, app.Clusters, hint)
	}
	return nil
}

// find returns the object "<name>+<kind>" of objs, as EMCO's resource key names it.
func find(objs []contract.Resource, kind, name string) *contract.Resource {
	for i, o := range objs {
		if o.Kind == kind && o.Name == name {
			return &objs[i]
		}
	}
	return nil
}

func named(objs []contract.Resource, name string) []contract.Resource {
	return slices.DeleteFunc(slices.Clone(objs), func(o contract.Resource) bool { return o.Name != name })
}

// pod returns the annotations being planned for a workload on a cluster, read from the
// workload the first time.
func (p *planner) pod(app, cluster string, r *contract.Resource) (*podAnnotations, error) {
	k := podKey{app: app, cluster: cluster, kind: r.Kind, name: r.Name}
	if pod, ok := p.pods[k]; ok {
		return pod, nil
	}
	pod, err := readPodAnnotations(*r)
	if err != nil {
		return nil, err
	}
	p.pods[k] = pod
	p.order = append(p.order, k)
	return pod, nil
}

// edits patches each workload once, on the clusters whose patch is the same.
func (p *planner) edits(ctx context.Context) ([]contract.Edit, error) {
	type group struct {
		key      podKey
		data     json.RawMessage
		clusters []string
	}
	var groups []*group
	index := map[string]*group{}
	for _, k := range p.order {
		data, err := p.pods[k].patch()
		if err != nil {
			return nil, err
		}
		id := strings.Join([]string{k.app, k.kind, k.name, string(data)}, "\x00")
		g, ok := index[id]
		if !ok {
			g = &group{key: k, data: data}
			index[id] = g
			groups = append(groups, g)
		}
		g.clusters = append(g.clusters, k.cluster)
	}
	out := make([]contract.Edit, 0, len(groups))
	for _, g := range groups {
		clusters, err := p.limit(ctx, g.key, g.clusters)
		if err != nil {
			return nil, err
		}
		out = append(out, contract.Edit{Op: contract.EditPatch, App: g.key.app, Clusters: clusters,
			Kind: g.key.kind, Name: g.key.name, Type: contract.PatchMerge, Data: g.data})
	}
	return out, nil
}

// limit is an edit's Clusters: none (every cluster's copy) when it covers all the app's
// clusters and the objects every cluster shares have the workload too.
func (p *planner) limit(ctx context.Context, k podKey, clusters []string) ([]string, error) {
	if len(clusters) != len(p.apps[k.app].Clusters) {
		return clusters, nil
	}
	shared, err := p.view.Resources(ctx, k.app, "")
	if err != nil {
		return nil, err
	}
	if find(shared, k.kind, k.name) == nil {
		return clusters, nil
	}
	return nil, nil
}
