package appctx

import (
	"context"
	"fmt"
	"slices"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"golang.org/x/sync/errgroup"

	"github.com/temco/temco/internal/core/lifecycle"
)

// GridCluster is what the fleet's grid shows of one cluster: the worst state of the
// contexts placed on it, and how many are.
type GridCluster struct {
	State    string // Failed, Retrying, Pending or Applied: a context's worst object there
	Contexts int    // the contexts with an object there not Deleted
}

// GridStates orders the states of GridCluster, worst first.
var GridStates = []string{lifecycle.ResFailed, lifecycle.ResRetrying, lifecycle.ResPending, lifecycle.ResApplied}

// Grid reads, for every cluster the contexts ids are placed on, its worst state across
// them and how many of them are placed there (a cluster where a context's objects are
// all Deleted does not count it). One query whatever their number: the batch documents,
// whose States and Others give each cluster's state once its batch was counted. Only the
// batches not counted (an operation running, or counted before Others was recorded) are
// read from their clusters' documents, one lookup each.
func (s *Store) Grid(ctx context.Context, ids []string) (map[string]*GridCluster, error) {
	out := map[string]*GridCluster{}
	if len(ids) == 0 {
		return out, nil
	}
	var batches []batchDoc
	cur, err := s.batches.Find(ctx, bson.D{{Key: "ctx", Value: bson.D{{Key: "$in", Value: ids}}}},
		options.Find().SetProjection(bson.D{{Key: "ctx", Value: 1}, {Key: "clusters", Value: 1}, {Key: "states", Value: 1},
			{Key: "others", Value: 1}, {Key: "counts", Value: 1}}))
	if err != nil {
		return nil, fmt.Errorf("read the batches of %d contexts: %w", len(ids), err)
	}
	if err := cur.All(ctx, &batches); err != nil {
		return nil, fmt.Errorf("read the batches of %d contexts: %w", len(ids), err)
	}
	add := func(cluster, state string) {
		i := slices.Index(GridStates, state)
		if i < 0 { // Deleted: nothing of the context is there
			return
		}
		g := out[cluster]
		if g == nil {
			g = &GridCluster{State: state}
			out[cluster] = g
		} else if i < slices.Index(GridStates, g.State) {
			g.State = state
		}
		g.Contexts++
	}
	uncounted := map[string][]string{} // context → clusters of its batches to read
	for _, b := range batches {
		states, ok := batchStates(&b)
		if !ok {
			uncounted[b.Context] = append(uncounted[b.Context], b.Clusters...)
			continue
		}
		for _, c := range b.Clusters {
			add(c, states(c))
		}
	}
	read := make(chan map[string]string, len(uncounted))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(4)
	for id, clusters := range uncounted {
		g.Go(func() error {
			docs, err := s.clusterDocs(gctx, id, clusters)
			if err != nil {
				return err
			}
			rendered, err := s.unlisted(gctx, id, docs)
			if err != nil {
				return err
			}
			m := make(map[string]string, len(docs))
			for _, d := range docs {
				m[d.Cluster] = clusterState(d, rendered)
			}
			read <- m
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	close(read)
	for m := range read {
		for c, st := range m {
			add(c, st)
		}
	}
	return out, nil
}

// batchStates gives the state of each cluster of a counted batch from its States and
// Others; false when the batch cannot tell (not counted, or counted without Others while
// its clusters differ).
func batchStates(b *batchDoc) (func(cluster string) string, bool) {
	if b.Counts == nil || b.States == nil {
		return nil, false
	}
	total := 0
	for _, n := range b.States {
		total += n
	}
	if total != len(b.Clusters) { // a cluster without its document: read them
		return nil, false
	}
	rest := ""
	for st := range b.States {
		if _, named := b.Others[st]; !named {
			if rest != "" {
				return nil, false // two states whose clusters are not named
			}
			rest = st
		}
	}
	if len(b.States) > 1 && b.Others == nil {
		return nil, false
	}
	if len(b.Others) == 0 {
		return func(string) string { return rest }, true
	}
	of := map[string]string{}
	for st, cs := range b.Others {
		for _, c := range cs {
			of[c] = st
		}
	}
	return func(c string) string {
		if st, ok := of[c]; ok {
			return st
		}
		return rest
	}, true
}
