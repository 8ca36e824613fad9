// Storing a context's placement, and listing placements stored before their apps were rendered.

package appctx

import (
	"context"
	"fmt"
	"slices"
	"sort"

	"github.com/temco/temco/internal/core/lifecycle"
)

// PutPlacement replaces the placement of a context, in bulk: placed lists every app on
// every cluster, batchOf the batch of each cluster.
func (s *Store) PutPlacement(ctx context.Context, ctxID string, placed []*ClusterApp, batchOf map[string]int) error {
	docs := map[string]*clusterDoc{}
	var order []string
	batches := map[int][]string{}
	for _, p := range placed {
		d := docs[p.Cluster]
		if d == nil {
			d = &clusterDoc{ID: clusterID(ctxID, p.Cluster), Context: ctxID, Cluster: p.Cluster, Batch: batchOf[p.Cluster]}
			docs[p.Cluster] = d
			order = append(order, p.Cluster)
			batches[d.Batch] = append(batches[d.Batch], p.Cluster)
		}
		d.Apps = append(d.Apps, p)
	}
	all := make([]any, 0, len(order))
	for _, c := range order {
		d := docs[c]
		if live := liveOf(d.Apps); len(live) > 0 {
			d.Live = live
		}
		var err error
		if d.Apps, err = s.sealPlaced(ctxID, c, d.Apps); err != nil {
			return err
		}
		all = append(all, d)
	}
	if err := s.replaceAll(ctx, s.clusters, ctxID, all); err != nil {
		return fmt.Errorf("store placement: %w", err)
	}
	bs := make([]any, 0, len(batches))
	for b, clusters := range batches {
		sort.Strings(clusters)
		bs = append(bs, &batchDoc{ID: batchID(ctxID, b), Context: ctxID, Batch: b, Clusters: clusters})
	}
	return s.replaceAll(ctx, s.batches, ctxID, bs)
}

// List fills in the resources of unlisted placements from the rendered apps, every one
// Pending. A placement whose app is not rendered yet stays unlisted.
func List(cas []*ClusterApp, rendered map[string]*App) {
	for _, ca := range cas {
		app := rendered[ca.App]
		if !ca.Unlisted || app == nil {
			continue
		}
		objs := app.ObjectsFor(ca)
		ca.Resources = make([]ResourceStatus, len(objs))
		for i, o := range objs {
			ca.Resources[i] = ResourceStatus{Ref: o.Ref, Status: lifecycle.ResPending}
		}
		ca.Unlisted = false
	}
}

// list lists the unlisted placements of docs, reading the rendered apps they need.
func (s *Store) list(ctx context.Context, ctxID string, docs []*clusterDoc) error {
	apps, err := s.unlisted(ctx, ctxID, docs)
	for _, d := range docs {
		List(d.Apps, apps)
	}
	return err
}

// unlisted reads the rendered apps the unlisted placements of docs need.
func (s *Store) unlisted(ctx context.Context, ctxID string, docs []*clusterDoc) (map[string]*App, error) {
	var names []string
	for _, d := range docs {
		for _, ca := range d.Apps {
			if ca.Unlisted && !slices.Contains(names, ca.App) {
				names = append(names, ca.App)
			}
		}
	}
	if len(names) == 0 {
		return nil, nil
	}
	return s.rendered(ctx, ctxID, names)
}
