// Storing a context's placement, and listing placements stored before their apps were rendered.

package appctx

import (
	"context"
	"fmt"
	"slices"
	"sort"

	"go.mongodb.org/mongo-driver/v2/bson"

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
	all := make([]*clusterDoc, 0, len(order))
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
	grouped, err := s.putClusterDocs(ctx, ctxID, all)
	if err != nil {
		return fmt.Errorf("store placement: %w", err)
	}
	bs := make([]any, 0, len(batches))
	for b, clusters := range batches {
		sort.Strings(clusters)
		bs = append(bs, &batchDoc{ID: batchID(ctxID, b), Context: ctxID, Batch: b, Clusters: clusters, Grouped: grouped})
	}
	s.layouts.put(ctxID, nil)
	defer func() { // after the write: no read begun before it answers anyone
		s.flights.Invalidate("layout:" + ctxID)
		for b := range batches {
			s.flights.Invalidate(batchID(ctxID, b))
		}
	}()
	return s.replaceAll(ctx, s.batches, ctxID, bs)
}

// putClusterDocs replaces the cluster documents of a context: in groups (true) unless
// one would be too large (groupsOf), and removes those of the other layout.
func (s *Store) putClusterDocs(ctx context.Context, ctxID string, docs []*clusterDoc) (bool, error) {
	groups, grouped, err := groupsOf(ctxID, slices.Clone(docs), s.groupBytes)
	if err != nil {
		return false, err
	}
	put, other := s.placed, s.clusters
	if !grouped {
		put, other = s.clusters, s.placed
		groups = make([]any, len(docs))
		for i, d := range docs {
			groups[i] = d
		}
	}
	if err := s.replaceAll(ctx, put, ctxID, groups); err != nil {
		return false, err
	}
	_, err = other.DeleteMany(ctx, bson.D{{Key: "ctx", Value: ctxID}})
	return grouped, err
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
