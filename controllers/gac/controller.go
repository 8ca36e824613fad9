package gac

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/temco/temco/api"
	"github.com/temco/temco/contract"
	"github.com/temco/temco/controllers"
	"github.com/temco/temco/internal/core/lifecycle"
	"github.com/temco/temco/internal/core/model"
	"github.com/temco/temco/internal/core/seal"
	"github.com/temco/temco/internal/core/store"
)

// controller creates and patches the objects of the generic k8s intent a DIG names.
type controller struct {
	store controllers.Docs
	keys  *seal.Keyring // templates and files are stored sealed: they may hold a Secret's data
	urls  *fetcher      // fetches $(URL)$ values from the hosts an admin allowed (nil: none)
}

// Run plans every resource of the intent and records the edits at once.
func (c *controller) Run(ctx context.Context, v contract.Context) error {
	in := v.Input()
	if in.Operation == contract.OpTerminate {
		return nil // the objects go with the context, as in EMCO
	}
	dig := lifecycle.Target{Project: in.Project, CompositeApp: in.CompositeApp, Version: in.CompositeAppVersion, DIG: in.DeploymentIntentGroup}.ID()
	resources, err := loadIntent(ctx, c.store, c.keys, dig+"/generic-k8s-intents/"+in.Intent)
	if err != nil {
		return err
	}
	apps, err := v.Apps(ctx)
	if err != nil {
		return err
	}
	p := &planner{view: v, apps: map[string]contract.App{}, seen: map[string][]contract.Resource{}, added: map[string]string{},
		values: &values{store: c.store, urls: c.urls, clusters: map[string]bool{}, got: map[string]any{}}, budget: newEditBudget()}
	for _, a := range apps {
		a.Clusters = slices.Sorted(slices.Values(a.Clusters))
		p.apps[a.Name] = a
		for _, cl := range a.Clusters {
			p.values.clusters[cl] = true
		}
	}
	for _, r := range resources {
		if err := p.plan(ctx, r); err != nil {
			return err
		}
	}
	if len(p.edits) == 0 {
		return nil
	}
	return v.Edit(p.edits...)
}

// loadIntent reads an intent's resources and their customizations, in name order.
func loadIntent(ctx context.Context, st controllers.Docs, keys *seal.Keyring, id string) ([]*resource, error) {
	if _, err := st.Get(ctx, id); err != nil {
		if store.CodeOf(err) == store.ErrNotFound {
			return nil, contract.Refuse("the deployment intent group has no generic-k8s-intent %q", id[strings.LastIndex(id, "/")+1:])
		}
		return nil, err
	}
	rdocs, err := st.List(ctx, store.Query{Parent: id, Kind: KindResource, Full: true})
	if err != nil {
		return nil, err
	}
	out := make([]*resource, 0, len(rdocs))
	for _, d := range rdocs {
		rs, err := model.Decode[ResourceSpec](d.Body)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", d.ID, err)
		}
		template, err := api.OpenSealed(keys, d)
		if err != nil {
			return nil, err
		}
		r := &resource{Name: d.Name, Spec: rs.Spec, Template: template}
		cdocs, err := st.List(ctx, store.Query{Parent: d.ID, Kind: KindCustomization, Full: true})
		if err != nil {
			return nil, err
		}
		for _, cd := range cdocs {
			cs, err := model.Decode[CustomizationSpec](cd.Body)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", cd.ID, err)
			}
			blob, err := api.OpenSealed(keys, cd)
			if err != nil {
				return nil, err
			}
			files, err := api.DecodeFiles(blob)
			if err != nil {
				return nil, fmt.Errorf("files of %s: %w", cd.ID, err)
			}
			r.Customizations = append(r.Customizations, &customization{Name: cd.Name, Spec: cs.Spec, Files: files})
		}
		out = append(out, r)
	}
	return out, nil
}

// planner turns resources into edits.
type planner struct {
	view   contract.Context
	apps   map[string]contract.App // clusters sorted
	seen   map[string][]contract.Resource
	added  map[string]string // "app/cluster/kind/name" (kind in lower case) -> kind, of the objects this run adds
	values *values           // of $(URL)$ patch values
	edits  []contract.Edit
	budget *editBudget // of the edits' size
}

// edit adds an edit of resource r, refusing it past the run's budget.
func (p *planner) edit(r *resource, e contract.Edit) error {
	if err := p.budget.spend(e); err != nil {
		return contract.Refuse("gac resource %s: %v", r.Name, err)
	}
	p.edits = append(p.edits, e)
	return nil
}

func (p *planner) plan(ctx context.Context, r *resource) error {
	if len(r.Customizations) == 0 {
		return nil // as in EMCO, a resource acts only through its customizations
	}
	app, ok := p.apps[r.Spec.App]
	if !ok {
		return contract.Refuse("gac resource %s names app %q, which the deployment does not have", r.Name, r.Spec.App)
	}
	if r.Spec.NewObject == flagTrue {
		return p.planNew(ctx, r, app)
	}
	return p.planPatches(ctx, r, app)
}

// planNew adds the object on every cluster some customization targets. Clusters targeted
// by the same customizations get the same object, built once with their data and patches
// applied in order (EMCO adds it once per customization, the last one winning, and lists
// it in resorder each time).
func (p *planner) planNew(ctx context.Context, r *resource, app contract.App) error {
	applies := map[string][]int{} // cluster -> customizations
	for i, c := range r.Customizations {
		on, err := p.targets(ctx, app, c.Spec)
		if err != nil {
			return err
		}
		for _, cl := range on {
			applies[cl] = append(applies[cl], i)
		}
	}
	var keys []string
	groups := map[string][]string{} // customizations -> clusters
	for _, cl := range app.Clusters {
		if len(applies[cl]) == 0 {
			continue
		}
		k := fmt.Sprint(applies[cl])
		if groups[k] == nil {
			keys = append(keys, k)
		}
		groups[k] = append(groups[k], cl)
	}
	for _, k := range keys {
		clusters := groups[k]
		var custs []*customization
		for _, i := range applies[clusters[0]] {
			c := r.Customizations[i]
			if err := p.values.resolve(ctx, r, c); err != nil {
				return err
			}
			custs = append(custs, c)
		}
		manifest, kind, err := buildObject(r, custs)
		if err != nil {
			return err
		}
		for _, cl := range clusters {
			p.added[objectKey(app.Name, cl, kind, r.Spec.ResourceGVK.Name)] = kind
		}
		if err := p.edit(r, contract.Edit{Op: contract.EditAddResource, App: app.Name,
			Clusters: limit(clusters, app), Data: manifest}); err != nil {
			return err
		}
	}
	return nil
}

// buildObject makes a new object from its base and customizations; it returns the
// manifest and its kind.
func buildObject(r *resource, custs []*customization) (json.RawMessage, string, error) {
	obj, err := baseObject(r)
	if err != nil {
		return nil, "", contract.Refuse("gac resource %s: %v", r.Name, err)
	}
	class := classOf(r.Spec.ResourceGVK.Kind)
	templateKeys := dataKeys(obj)
	for _, c := range custs {
		if obj, err = customize(obj, c, class, templateKeys); err == nil {
			err = checkObjectSize(obj) // each time: data files pile up over customizations
		}
		if err != nil {
			return nil, "", contract.Refuse("gac resource %s, customization %s: %v", r.Name, c.Name, err)
		}
	}
	kind, _ := obj["kind"].(string)
	if !strings.EqualFold(kind, r.Spec.ResourceGVK.Kind) || nameOf(obj) != r.Spec.ResourceGVK.Name {
		return nil, "", contract.Refuse("gac resource %s: the customizations make it %s %q, not the %s %q it names",
			r.Name, kind, nameOf(obj), r.Spec.ResourceGVK.Kind, r.Spec.ResourceGVK.Name)
	}
	manifest, err := json.Marshal(obj)
	return manifest, kind, err
}

// planPatches patches the app's object on each targeted cluster that has it; clusters
// without it are skipped, as in EMCO, and its $(URL)$ values are looked up only when
// some cluster has it.
func (p *planner) planPatches(ctx context.Context, r *resource, app contract.App) error {
	gvk := r.Spec.ResourceGVK
	class := classOf(gvk.Kind)
	for _, c := range r.Customizations {
		patchType, patches, err := patchesOf(c, class)
		if err != nil {
			return contract.Refuse("gac resource %s, customization %s: %v", r.Name, c.Name, err)
		}
		on, err := p.targets(ctx, app, c.Spec)
		if err != nil {
			return err
		}
		var kinds []string
		byKind := map[string][]string{} // the object's kind as the context has it -> clusters
		for _, cl := range on {
			kind, err := p.find(ctx, app.Name, cl, gvk)
			if err != nil {
				return err
			}
			if kind == "" {
				continue
			}
			if byKind[kind] == nil {
				kinds = append(kinds, kind)
			}
			byKind[kind] = append(byKind[kind], cl)
		}
		if len(kinds) > 0 && p.values.needed(c) {
			if err := p.values.resolve(ctx, r, c); err != nil {
				return err
			}
			if _, patches, err = patchesOf(c, class); err != nil {
				return contract.Refuse("gac resource %s, customization %s: %v", r.Name, c.Name, err)
			}
		}
		for _, kind := range kinds {
			for _, data := range patches {
				if err := p.edit(r, contract.Edit{Op: contract.EditPatch, App: app.Name, Clusters: limit(byKind[kind], app),
					Kind: kind, Name: gvk.Name, Type: patchType, Data: data}); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// patchesOf is a customization's patch type and documents: its JSON patch, or each of
// its merge patch files.
func patchesOf(c *customization, class string) (string, []json.RawMessage, error) {
	switch c.Spec.PatchType {
	case patchJSON:
		ops, err := jsonOps(c.Spec.PatchJSON)
		return contract.PatchJSON, []json.RawMessage{ops}, err
	case patchMerge:
		files := mergePatches(c.Spec, c.Files, class)
		if len(files) == 0 {
			return "", nil, fmt.Errorf("patchType merge has no patch files")
		}
		out := make([]json.RawMessage, 0, len(files))
		for _, f := range files {
			js, err := mergePatchJSON(f)
			if err != nil {
				return "", nil, err
			}
			out = append(out, js)
		}
		return contract.PatchStrategic, out, nil
	}
	return "", nil, fmt.Errorf("it patches an existing object but gives no patchType (json or merge)")
}

// targets are the app's clusters a customization applies to. A cluster-specific one
// matches by label or name only in mode "allow": "deny" matches nothing, as in EMCO,
// where it is not an inverse filter. Unlike EMCO, the cluster's provider must match too.
func (p *planner) targets(ctx context.Context, app contract.App, sp CustomizationSpec) ([]string, error) {
	if sp.ClusterSpecific != flagTrue {
		return app.Clusters, nil
	}
	ci := sp.ClusterInfo
	if ci.Mode != modeAllow {
		return nil, nil
	}
	want := map[string]bool{}
	switch ci.Scope {
	case scopeName:
		want[contract.Cluster{Provider: ci.ClusterProvider, Name: ci.Cluster}.Key()] = true
	case scopeLabel:
		labelled, err := p.view.Clusters(ctx, ci.ClusterProvider, ci.ClusterLabel)
		if err != nil {
			return nil, err
		}
		for _, cl := range labelled {
			want[cl.Key()] = true
		}
	default:
		return nil, contract.Refuse("clusterInfo.scope %q is neither label nor name", ci.Scope)
	}
	return slices.DeleteFunc(slices.Clone(app.Clusters), func(cl string) bool { return !want[cl] }), nil
}

// find returns the kind of the app's object on cluster that gvk names ("" when it has
// none): an object this run adds, or one the context has. The kind matches in any case,
// as gvk's kind may be typed in any case.
func (p *planner) find(ctx context.Context, app, cluster string, gvk GVK) (string, error) {
	if kind, ok := p.added[objectKey(app, cluster, gvk.Kind, gvk.Name)]; ok {
		return kind, nil
	}
	key := app + "/" + cluster
	objs, ok := p.seen[key]
	if !ok {
		var err error
		if objs, err = p.view.Resources(ctx, app, cluster); err != nil {
			return "", err
		}
		p.seen[key] = objs
	}
	for _, o := range objs {
		if o.Name == gvk.Name && strings.EqualFold(o.Kind, gvk.Kind) {
			return o.Kind, nil
		}
	}
	return "", nil
}

func objectKey(app, cluster, kind, name string) string {
	return app + "/" + cluster + "/" + strings.ToLower(kind) + "/" + name
}

// limit is an edit's Clusters: none when it covers all the app's clusters.
func limit(clusters []string, app contract.App) []string {
	if len(clusters) == len(app.Clusters) {
		return nil
	}
	return clusters
}
