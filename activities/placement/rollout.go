package placement

import (
	"context"
	"maps"
	"slices"
	"strings"

	"github.com/temco/temco/internal/core/lifecycle"
	"github.com/temco/temco/internal/core/model"
	"github.com/temco/temco/internal/core/rollout"
	"github.com/temco/temco/internal/core/store"
)

// Stages lays a context's clusters out in the stages of the rollout strategy of the DIG
// (its store id): the batch of each cluster, stage after stage. Without a strategy the
// plan is nil and batches are as before. A strategy that leaves a placed cluster in no
// stage is the operation's error, before anything is applied.
func Stages(ctx context.Context, st *store.Store, digID string, clusters []string, perBatch int) (*rollout.Plan, map[string]int, error) {
	docs, err := st.List(ctx, store.Query{Parent: digID, Kind: model.KindRolloutStrategy})
	if err != nil || len(docs) == 0 {
		return nil, nil, err
	}
	r, err := model.Decode[rollout.Spec](docs[0].Body)
	if err != nil {
		return nil, nil, err
	}
	members, err := labelled(ctx, st, clusters)
	if err != nil {
		return nil, nil, err
	}
	plan, batchOf, _, err := rollout.Layout(docs[0].Name, r.Spec, members, perBatch)
	if err != nil {
		return nil, nil, invalid("%v", err)
	}
	return &plan, batchOf, nil
}

// labelled reads the labels of the clusters: one query per cluster provider.
func labelled(ctx context.Context, st *store.Store, clusters []string) ([]rollout.Member, error) {
	byProvider := map[string]bool{}
	for _, c := range clusters {
		p, _ := lifecycle.SplitClusterKey(c)
		byProvider[p] = true
	}
	labels := map[string][]string{}
	for _, p := range slices.Sorted(maps.Keys(byProvider)) {
		docs, err := st.ListCurrent(ctx, store.Query{Scope: "/cluster-providers/" + p, Kind: model.KindClusterLabel})
		if err != nil {
			return nil, err
		}
		for _, d := range docs {
			key := lifecycle.ClusterKey(p, d.Parent[strings.LastIndex(d.Parent, "/")+1:])
			labels[key] = append(labels[key], d.Name)
		}
	}
	out := make([]rollout.Member, len(clusters))
	for i, c := range clusters {
		out[i] = rollout.Member{Key: c, Labels: labels[c]}
	}
	return out, nil
}
