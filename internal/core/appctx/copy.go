// Copy: a new context made from a stored revision, every object Pending (a rollback).

package appctx

import (
	"context"
	"maps"
	"slices"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/temco/temco/internal/core/lifecycle"
	"github.com/temco/temco/internal/core/rollout"
)

// Copy makes context "to" a copy of the rendered apps and the placement of context from,
// every object Pending, and returns its plan: a rollback re-applies a stored revision.
// to's header must exist. relayout, if set, may lay the clusters out in other batches
// (the stages of a rollout strategy): it returns their batches and the rollout plan, or
// nil to keep the stored batches.
func (s *Store) Copy(ctx context.Context, from, to string, relayout Relayout) (lifecycle.Plan, error) {
	src, err := s.Get(ctx, from)
	if err != nil {
		return lifecycle.Plan{}, err
	}
	apps, err := s.Apps(ctx, src)
	if err != nil {
		return lifecycle.Plan{}, err
	}
	list := make([]*App, 0, len(apps))
	for _, name := range src.Apps {
		list = append(list, apps[name])
	}
	if err := s.PutApps(ctx, to, list); err != nil {
		return lifecycle.Plan{}, err
	}
	placed, err := s.Placements(ctx, from, Filter{})
	if err != nil {
		return lifecycle.Plan{}, err
	}
	batchOf := map[string]int{}
	bs, err := s.contextBatches(ctx, from)
	if err != nil {
		return lifecycle.Plan{}, err
	}
	for _, b := range bs {
		for _, c := range b.Clusters {
			batchOf[c] = b.Batch
		}
	}
	for _, p := range placed {
		p.Live, p.LiveAt = nil, time.Time{}
		for i := range p.Resources {
			p.Resources[i] = ResourceStatus{Ref: p.Resources[i].Ref, Status: lifecycle.ResPending}
		}
	}
	batches := len(bs)
	var staged *rollout.Plan
	if relayout != nil {
		clusters := slices.Sorted(maps.Keys(batchOf))
		p, layout, err := relayout(ctx, clusters)
		if err != nil {
			return lifecycle.Plan{}, err
		}
		if p != nil {
			staged, batchOf, batches = p, layout, 0
			if n := len(p.Stages); n > 0 {
				batches = p.Stages[n-1].FirstBatch + p.Stages[n-1].Batches
			}
		}
	}
	if err := s.PutPlacement(ctx, to, placed, batchOf); err != nil {
		return lifecycle.Plan{}, err
	}
	fields := bson.D{{Key: "apps", Value: src.Apps}}
	if len(src.Artifacts) > 0 { // the bits the revision was approved with, not a tag's now
		fields = append(fields, bson.E{Key: "artifacts", Value: src.Artifacts}, bson.E{Key: "blobs", Value: src.Blobs})
	}
	if len(src.Images) > 0 {
		fields = append(fields, bson.E{Key: "images", Value: src.Images})
	}
	if err := s.Set(ctx, to, fields); err != nil {
		return lifecycle.Plan{}, err
	}
	return lifecycle.Plan{Apps: len(src.Apps), Clusters: len(batchOf), Batches: batches, Rollout: staged}, nil
}

// Relayout lays out a copy's clusters anew (see Copy).
type Relayout func(ctx context.Context, clusters []string) (*rollout.Plan, map[string]int, error)
