package placement

import (
	"fmt"
	"slices"
	"sort"

	"github.com/temco/temco/internal/core/ctxedit"
	"github.com/temco/temco/internal/core/model"
)

// Registry answers which clusters exist and which carry a label; placement itself is pure.
type Registry interface {
	ClusterExists(provider, cluster string) (bool, error)
	ClustersWithLabel(provider, label string) ([]string, error) // sorted names
}

// Place resolves one app's intents to a sorted set of cluster keys (provider+cluster):
// every allOf entry contributes all its matches (a nested anyOf contributes one), and
// every anyOf list contributes exactly one cluster — the first match by name, so the
// choice is stable from one revision to the next.
func Place(app string, intents []model.PlacementIntent, reg Registry) ([]string, error) {
	groups, err := Groups(app, intents, reg)
	if err != nil {
		return nil, err
	}
	return ctxedit.Resolve(groups), nil
}

// Groups resolves one app's intents to groups of clusters before any choice is made: each
// cluster an allOf entry selects is a group of its own, each anyOf list one group of all
// its matches (placement controllers may remove clusters from groups first, as EMCO's
// filter before it picks).
func Groups(app string, intents []model.PlacementIntent, reg Registry) ([][]string, error) {
	var groups [][]string
	for _, in := range intents {
		for i, all := range in.AllOf {
			if len(all.AnyOf) > 0 {
				g, err := anyOf(app, fmt.Sprintf("allOf[%d].anyOf", i), all.AnyOf, reg)
				if err != nil {
					return nil, err
				}
				groups = append(groups, g)
				continue
			}
			matches, err := match(app, all.ClusterMatch, reg)
			if err != nil {
				return nil, err
			}
			for _, m := range matches {
				groups = append(groups, []string{m})
			}
		}
		if len(in.AnyOf) > 0 {
			g, err := anyOf(app, "anyOf", in.AnyOf, reg)
			if err != nil {
				return nil, err
			}
			groups = append(groups, g)
		}
	}
	if len(groups) == 0 {
		return nil, fmt.Errorf("the placement of app %q selects no cluster", app)
	}
	return groups, nil
}

func anyOf(app, where string, ms []model.ClusterMatch, reg Registry) ([]string, error) {
	var all []string
	for _, m := range ms {
		found, err := match(app, m, reg)
		if err != nil {
			return nil, err
		}
		all = append(all, found...)
	}
	if len(all) == 0 {
		return nil, fmt.Errorf("no cluster matches %s of app %q", where, app)
	}
	sort.Strings(all)
	return slices.Compact(all), nil
}

// match returns the clusters one entry selects; naming an unregistered cluster is an error.
func match(app string, m model.ClusterMatch, reg Registry) ([]string, error) {
	if m.Cluster != "" {
		ok, err := reg.ClusterExists(m.ClusterProvider, m.Cluster)
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, fmt.Errorf("app %q is placed on cluster %q of provider %q, which is not registered", app, m.Cluster, m.ClusterProvider)
		}
		return []string{m.ClusterProvider + "+" + m.Cluster}, nil
	}
	names, err := reg.ClustersWithLabel(m.ClusterProvider, m.ClusterLabel)
	if err != nil {
		return nil, err
	}
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = m.ClusterProvider + "+" + n
	}
	return out, nil
}
