package ctxedit

import (
	"context"
	"slices"
	"strings"

	"github.com/temco/temco/contract"
	"github.com/temco/temco/internal/core/model"
	"github.com/temco/temco/internal/core/store"
)

// StoreClusters answers a view's cluster questions from the resource store.
func StoreClusters(st *store.Store) Clusters {
	return func(ctx context.Context, provider, label string) ([]contract.Cluster, error) {
		scope := "/cluster-providers/" + provider
		labels, err := st.ListCurrent(ctx, store.Query{Scope: scope, Kind: model.KindClusterLabel})
		if err != nil {
			return nil, err
		}
		byCluster := map[string][]string{}
		for _, d := range labels {
			name := d.Parent[strings.LastIndex(d.Parent, "/")+1:]
			byCluster[name] = append(byCluster[name], d.Name)
		}
		docs, err := st.ListCurrent(ctx, store.Query{Parent: scope, Kind: model.KindCluster})
		if err != nil {
			return nil, err
		}
		var out []contract.Cluster
		for _, d := range docs {
			c := contract.Cluster{Provider: provider, Name: d.Name, Labels: byCluster[d.Name]}
			if label == "" || slices.Contains(c.Labels, label) {
				out = append(out, c)
			}
		}
		return out, nil
	}
}
