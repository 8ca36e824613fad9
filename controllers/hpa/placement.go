package hpa

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/temco/temco/contract"
)

// placement is hpa-plc: it removes the clusters whose nodes cannot host an app's hpa
// consumers, group by group.
type placement struct {
	intents intentSource
	nodes   nodeSource
}

func (p *placement) Run(ctx context.Context, c contract.Context) error {
	apps, intents, err := load(ctx, p.intents, c)
	if err != nil || intents == nil {
		return err
	}
	nodes := map[string][]node{} // read each cluster once per run
	for _, a := range apps {
		demands := demandsOf(intents[a.Name])
		if len(demands) == 0 {
			continue
		}
		drop, err := p.placeApp(ctx, a, demands, nodes)
		if err != nil {
			return err
		}
		if len(drop) > 0 {
			if err := c.Edit(contract.Edit{Op: contract.EditRemoveClusters, App: a.Name, Clusters: drop}); err != nil {
				return err
			}
		}
	}
	return nil
}

// placeApp returns the clusters of the app that cannot host its demands, and refuses the
// operation when a whole group has none that can: an allOf cluster, or every anyOf choice.
func (p *placement) placeApp(ctx context.Context, a contract.App, demands []demand, nodes map[string][]node) ([]string, error) {
	why := map[string]error{} // per cluster: nil when it qualifies
	var drop []string
	for _, g := range groupsOf(a) {
		var kept []string
		for _, cl := range g {
			if _, done := why[cl]; !done {
				ns, ok := nodes[cl]
				if !ok {
					var err error
					if ns, err = p.nodes.Nodes(ctx, cl); err != nil {
						return nil, err
					}
					nodes[cl] = ns
				}
				why[cl] = fit(ns, demands)
			}
			if why[cl] == nil {
				kept = append(kept, cl)
			} else if !slices.Contains(drop, cl) {
				drop = append(drop, cl)
			}
		}
		if len(kept) == 0 {
			reasons := make([]string, len(g))
			for i, cl := range g {
				reasons[i] = fmt.Sprintf("cluster %s: %v", cl, why[cl])
			}
			return nil, contract.Refuse("hpa placement of app %q: no cluster of its placement group [%s] can host it: %s",
				a.Name, strings.Join(g, ", "), strings.Join(reasons, "; "))
		}
	}
	slices.Sort(drop)
	return drop, nil
}

// groupsOf returns the app's placement groups; a cluster in none is a group of its own.
func groupsOf(a contract.App) [][]string {
	var out [][]string
	seen := map[string]bool{}
	for _, g := range a.Groups {
		if len(g) == 0 {
			continue
		}
		out = append(out, g)
		for _, cl := range g {
			seen[cl] = true
		}
	}
	for _, cl := range a.Clusters {
		if !seen[cl] {
			out = append(out, []string{cl})
		}
	}
	return out
}
