package nps

import (
	"context"
	"encoding/json"
	"slices"
	"strings"

	"github.com/temco/temco/contract"
	"github.com/temco/temco/controllers"
	"github.com/temco/temco/controllers/dtc"
)

// controller adds the NetworkPolicies of the traffic group intent dtc runs it for.
type controller struct {
	store controllers.Docs
}

// Run reads the traffic group, the apps and which of their clusters enforce
// NetworkPolicies, plans every policy and records them at once, or refuses.
func (c *controller) Run(ctx context.Context, v contract.Context) error {
	in := v.Input()
	if in.Operation == contract.OpTerminate {
		return nil // the policies go with the server apps
	}
	g, err := dtc.Load(ctx, c.store, in)
	if err != nil {
		return err
	}
	list, err := v.Apps(ctx)
	if err != nil {
		return err
	}
	apps := make(map[string]contract.App, len(list))
	for _, a := range list {
		apps[a.Name] = a
	}
	supported, err := supportedClusters(ctx, v, list)
	if err != nil {
		return err
	}
	edits, err := plan(g, apps, supported)
	if err != nil || len(edits) == 0 {
		return err
	}
	return v.Edit(edits...)
}

// supportedClusters are the clusters ("provider+cluster") of the apps whose registration
// carries SupportedLabel.
func supportedClusters(ctx context.Context, v contract.Context, apps []contract.App) (map[string]bool, error) {
	providers := map[string]bool{}
	for _, a := range apps {
		for _, cl := range a.Clusters {
			p, _, _ := strings.Cut(cl, "+")
			providers[p] = true
		}
	}
	out := map[string]bool{}
	for p := range providers {
		labelled, err := v.Clusters(ctx, p, SupportedLabel)
		if err != nil {
			return nil, err
		}
		for _, cl := range labelled {
			out[cl.Key()] = true
		}
	}
	return out, nil
}

// plan adds each inbound intent's NetworkPolicy to its server app on the app's supported
// clusters.
func plan(g *dtc.TrafficGroup, apps map[string]contract.App, supported map[string]bool) ([]contract.Edit, error) {
	var edits []contract.Edit
	for _, isi := range g.Inbound {
		app, ok := apps[isi.Spec.App]
		if !ok {
			return nil, contract.Refuse("traffic group intent %q, inbound intent %q: the deployment has no app %q", g.Name, isi.Name, isi.Spec.App)
		}
		np, err := Policy(g.Name, isi)
		if err != nil {
			return nil, contract.Refuse("traffic group intent %q, inbound intent %q: %v", g.Name, isi.Name, err)
		}
		if np == nil {
			continue
		}
		clusters := slices.DeleteFunc(slices.Clone(app.Clusters), func(c string) bool { return !supported[c] })
		if len(clusters) == 0 {
			continue // as in EMCO: no cluster of the server enforces NetworkPolicies
		}
		slices.Sort(clusters)
		data, err := json.Marshal(np)
		if err != nil {
			return nil, err
		}
		edits = append(edits, contract.Edit{Op: contract.EditAddResource, App: app.Name, Clusters: limit(clusters, app), Data: data})
	}
	return edits, nil
}

// limit is an edit's Clusters: none (every cluster of the app) when it covers them all.
func limit(clusters []string, app contract.App) []string {
	if len(clusters) == len(app.Clusters) {
		return nil
	}
	return clusters
}
