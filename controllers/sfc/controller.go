package sfc

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/temco/temco/contract"
	"github.com/temco/temco/internal/core/lifecycle"
)

// controller adds each network chain's NetworkChaining and its links' pod labels.
type controller struct {
	store Docs
}

// Run plans every chain of the DIG and records the edits at once, or refuses.
func (c *controller) Run(ctx context.Context, v contract.Context) error {
	in := v.Input()
	if in.Operation == contract.OpTerminate {
		return nil // the objects go with the context, as in EMCO
	}
	dig := lifecycle.Target{Project: in.Project, CompositeApp: in.CompositeApp, Version: in.CompositeAppVersion, DIG: in.DeploymentIntentGroup}.ID()
	chains, err := loadChains(ctx, c.store, dig)
	if err != nil {
		return err
	}
	if len(chains) == 0 {
		return contract.Refuse("the deployment intent group names controller %s (intent %q) but has no network-chains", in.Controller, in.Intent)
	}
	apps, err := v.Apps(ctx)
	if err != nil {
		return err
	}
	p := &planner{view: v, apps: map[string]contract.App{}, seen: map[string][]contract.Resource{}}
	for _, a := range apps {
		a.Clusters = slices.Sorted(slices.Values(a.Clusters))
		p.apps[a.Name] = a
	}
	for _, ch := range chains {
		if err := p.plan(ctx, ch); err != nil {
			return err
		}
	}
	return v.Edit(append(p.chainingApp(), p.edits...)...)
}

// ChainingApp is the app sfc adds for the NetworkChainings, EMCO's: each chain's goes on
// the clusters that run every function of the chain.
const ChainingApp = "network-chain-intents"

// planner turns chains into edits.
type planner struct {
	view      contract.Context
	apps      map[string]contract.App // clusters sorted
	seen      map[string][]contract.Resource
	chainings []chaining
	edits     []contract.Edit // the links' pod labels
}

// chaining is one chain's NetworkChaining and the clusters it goes to (sorted).
type chaining struct {
	manifest []byte
	clusters []string
}

// chainingApp adds ChainingApp on the clusters of every chain, and each chain's
// NetworkChaining on its own.
func (p *planner) chainingApp() []contract.Edit {
	var all []string
	for _, c := range p.chainings {
		all = append(all, c.clusters...)
	}
	slices.Sort(all)
	app := contract.App{Name: ChainingApp, Clusters: slices.Compact(all)}
	edits := []contract.Edit{{Op: contract.EditAddApp, App: app.Name, Clusters: app.Clusters}}
	for _, c := range p.chainings {
		edits = append(edits, contract.Edit{Op: contract.EditAddResource, App: app.Name, Clusters: limit(c.clusters, app), Data: c.manifest})
	}
	return edits
}

func (p *planner) plan(ctx context.Context, ch chain) error {
	cp, err := planChain(ch)
	if err != nil {
		return contract.Refuse("network chain %q: %v", ch.Name, err)
	}
	clusters, err := p.chainClusters(ch.Name, cp.Links)
	if err != nil {
		return err
	}
	p.chainings = append(p.chainings, chaining{manifest: cp.Manifest, clusters: clusters})
	for _, l := range cp.Links {
		labels, err := ParseLinkLabel(l.Spec.LinkLabel)
		if err != nil {
			return contract.Refuse("network chain %q, link %q: %v", ch.Name, l.Name, err)
		}
		w := Workload{App: l.Spec.App, Kind: l.Spec.ResourceType, Name: l.Spec.WorkloadResource}
		for _, cl := range clusters {
			objs, err := p.resources(ctx, w.App, cl)
			if err != nil {
				return err
			}
			if err := CheckPodLabels(w, cl, objs, labels); err != nil {
				return contract.Refuse("network chain %q, link %q: %v", ch.Name, l.Name, err)
			}
		}
		e, err := LabelPods(w, limit(clusters, p.apps[w.App]), labels)
		if err != nil {
			return contract.Refuse("network chain %q, link %q: %v", ch.Name, l.Name, err)
		}
		p.edits = append(p.edits, e)
	}
	return nil
}

// chainClusters is where a chain goes: the clusters every app of its links is placed on.
func (p *planner) chainClusters(name string, links []Named[LinkSpec]) ([]string, error) {
	var clusters []string
	var placed []string // "app on [clusters]", for the message
	seen := map[string]bool{}
	for i, l := range links {
		app, ok := p.apps[l.Spec.App]
		if !ok {
			return nil, contract.Refuse("network chain %q: link %q names app %q, which the deployment does not have", name, l.Name, l.Spec.App)
		}
		if seen[app.Name] {
			continue
		}
		seen[app.Name] = true
		placed = append(placed, fmt.Sprintf("%s on [%s]", app.Name, strings.Join(app.Clusters, ", ")))
		if i == 0 {
			clusters = slices.Clone(app.Clusters)
			continue
		}
		clusters = slices.DeleteFunc(clusters, func(c string) bool { return !slices.Contains(app.Clusters, c) })
	}
	if len(clusters) == 0 {
		return nil, contract.Refuse("network chain %q: no cluster runs every app of its links (%s)", name, strings.Join(placed, "; "))
	}
	return clusters, nil
}

// resources reads an app's objects on a cluster once.
func (p *planner) resources(ctx context.Context, app, cluster string) ([]contract.Resource, error) {
	key := app + "/" + cluster
	if objs, ok := p.seen[key]; ok {
		return objs, nil
	}
	objs, err := p.view.Resources(ctx, app, cluster)
	if err != nil {
		return nil, err
	}
	p.seen[key] = objs
	return objs, nil
}

// limit is an edit's Clusters: none when it covers all the app's clusters.
func limit(clusters []string, app contract.App) []string {
	if slices.Equal(clusters, app.Clusters) {
		return nil
	}
	return clusters
}
