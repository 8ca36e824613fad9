// Cluster batches, and the per-batch status counts that summaries read.

package appctx

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"

	"github.com/temco/temco/internal/core/lifecycle"
	"github.com/temco/temco/internal/core/store"
)

// Batches returns how many cluster batches a context has.
func (s *Store) Batches(ctx context.Context, ctxID string) (int, error) {
	n, err := s.batches.CountDocuments(ctx, bson.D{{Key: "ctx", Value: ctxID}})
	return int(n), err
}

// StartBatch returns the sorted cluster keys of one batch, whose counts it drops: the
// batch workflow starting will change its statuses.
func (s *Store) StartBatch(ctx context.Context, ctxID string, batch int) ([]string, error) {
	id := batchID(ctxID, batch)
	if _, err := s.batches.UpdateOne(ctx, bson.D{{Key: "_id", Value: id}},
		bson.D{{Key: "$unset", Value: bson.D{{Key: "counts", Value: ""}}}}); err != nil {
		return nil, err
	}
	var b batchDoc
	err := store.FindOne(ctx, s.batches, bson.D{{Key: "_id", Value: id}}, &b)
	if errors.Is(err, mongo.ErrNoDocuments) {
		return nil, nil
	}
	return b.Clusters, err
}

// CountBatch stores the per-app status counts of one batch. Its group activity, or else
// its batch workflow, calls it when all its clusters are done; statuses change only while
// a batch's work runs over them, and each begins with StartBatch, so stored counts are
// current. Summaries then
// read one small document per batch instead of one per cluster.
func (s *Store) CountBatch(ctx context.Context, ctxID string, batch int) error {
	var b batchDoc
	id := batchID(ctxID, batch)
	if err := store.FindOne(ctx, s.batches, bson.D{{Key: "_id", Value: id}}, &b); err != nil {
		return fmt.Errorf("batch %d of context %s: %w", batch, ctxID, err)
	}
	docs, err := s.clusterDocs(ctx, ctxID, b.Clusters)
	if err != nil {
		return err
	}
	rendered, err := s.unlisted(ctx, ctxID, docs)
	if err != nil {
		return err
	}
	counts, states, byState := map[string]map[string]int{}, map[string]int{}, map[string][]string{}
	for _, d := range docs {
		countDoc(counts, d, rendered)
		st := clusterState(d, rendered)
		states[st]++
		byState[st] = append(byState[st], d.Cluster)
	}
	// FerretDB 1.x leaves an embedded document as it is when $set gives one with the same
	// values under other keys ({"Pending": 1} stays when {"Applied": 1} is set): the old
	// counts go first. Meanwhile a reader finds the batch uncounted and counts it live.
	filter := bson.D{{Key: "_id", Value: id}}
	if _, err := s.batches.UpdateOne(ctx, filter,
		bson.D{{Key: "$unset", Value: bson.D{{Key: "counts", Value: ""}, {Key: "states", Value: ""}, {Key: "others", Value: ""}}}}); err != nil {
		return err
	}
	_, err = s.batches.UpdateOne(ctx, filter,
		bson.D{{Key: "$set", Value: bson.D{{Key: "counts", Value: counts}, {Key: "states", Value: states}, {Key: "others", Value: othersOf(byState)}}}})
	return err
}

// othersOf keeps of a batch's clusters by state all but the most common state's (the
// first of deployedStates' order among equals): a batch all Applied stores no name.
func othersOf(byState map[string][]string) map[string][]string {
	common := ""
	for _, st := range deployedStates {
		if len(byState[st]) > len(byState[common]) {
			common = st
		}
	}
	out := map[string][]string{}
	for st, cs := range byState {
		if st != common {
			out[st] = cs
		}
	}
	return out
}

// deployedStates are the objects' statuses, worst first: a cluster is as its worst.
var deployedStates = []string{lifecycle.ResFailed, lifecycle.ResRetrying, lifecycle.ResPending, lifecycle.ResApplied, lifecycle.ResDeleted}

// clusterState is the status of one cluster's worst object (Applied for a cluster with
// none); an unlisted placement's objects are Pending.
func clusterState(d *clusterDoc, rendered map[string]*App) string {
	worst := len(deployedStates) // none yet
	for _, a := range d.Apps {
		if a.Unlisted {
			if app := rendered[a.App]; app != nil && len(app.Objects) > 0 {
				worst = min(worst, slices.Index(deployedStates, lifecycle.ResPending))
			}
			continue
		}
		for _, r := range a.Resources {
			if i := slices.Index(deployedStates, r.Status); i >= 0 {
				worst = min(worst, i)
			}
		}
	}
	if worst == len(deployedStates) {
		return lifecycle.ResApplied
	}
	return deployedStates[worst]
}

// Summary counts the objects of a context by status, only those of apps when given:
// from the stored counts of each batch, and from the cluster documents of batches that
// have none (running, stopped or never counted).
func (s *Store) Summary(ctx context.Context, ctxID string, apps []string) (map[string]int, error) {
	bs, err := s.contextBatches(ctx, ctxID)
	if err != nil {
		return nil, err
	}
	return s.summary(ctx, ctxID, bs, apps)
}

// Overview is Summary (of every app) and ClusterKeys from one read of the batches.
func (s *Store) Overview(ctx context.Context, ctxID string) (map[string]int, []string, error) {
	bs, err := s.contextBatches(ctx, ctxID)
	if err != nil {
		return nil, nil, err
	}
	counts, err := s.summary(ctx, ctxID, bs, nil)
	return counts, clusterKeys(bs), err
}

func (s *Store) summary(ctx context.Context, ctxID string, bs []batchDoc, apps []string) (map[string]int, error) {
	counts := map[string]map[string]int{}
	var uncounted []string
	for _, b := range bs {
		if b.Counts == nil {
			uncounted = append(uncounted, b.Clusters...)
			continue
		}
		for app, byStatus := range b.Counts {
			for status, n := range byStatus {
				add(counts, app, status, n)
			}
		}
	}
	docs, err := s.clusterDocs(ctx, ctxID, uncounted)
	if err != nil {
		return nil, err
	}
	rendered, err := s.unlisted(ctx, ctxID, docs)
	if err != nil {
		return nil, err
	}
	for _, d := range docs {
		countDoc(counts, d, rendered)
	}
	out := map[string]int{}
	for app, byStatus := range counts {
		if len(apps) > 0 && !slices.Contains(apps, app) {
			continue
		}
		for status, n := range byStatus {
			out[status] += n
		}
	}
	return out, nil
}

// contextBatches reads the batch documents of a context.
func (s *Store) contextBatches(ctx context.Context, ctxID string) ([]batchDoc, error) {
	cur, err := s.batches.Find(ctx, bson.D{{Key: "ctx", Value: ctxID}})
	if err != nil {
		return nil, err
	}
	var bs []batchDoc
	return bs, cur.All(ctx, &bs)
}

// countDoc counts the objects of one cluster by app and status; rendered has the apps
// of its unlisted placements, whose objects are all Pending.
func countDoc(counts map[string]map[string]int, d *clusterDoc, rendered map[string]*App) {
	for _, a := range d.Apps {
		if a.Unlisted {
			if app := rendered[a.App]; app != nil {
				add(counts, a.App, lifecycle.ResPending, len(app.Objects))
			}
			continue
		}
		for _, r := range a.Resources {
			add(counts, a.App, r.Status, 1)
		}
	}
}

func add(counts map[string]map[string]int, app, status string, n int) {
	if counts[app] == nil {
		counts[app] = map[string]int{}
	}
	counts[app][status] += n
}

// StageClusters lists the clusters of batches [first, first+n) of a context in batch
// order, at most limit of them, and how many there are in all.
func (s *Store) StageClusters(ctx context.Context, ctxID string, first, n, limit int) ([]string, int, error) {
	ids := make([]string, n)
	for i := range ids {
		ids[i] = batchID(ctxID, first+i)
	}
	cur, err := s.batches.Find(ctx, bson.D{{Key: "_id", Value: bson.D{{Key: "$in", Value: ids}}}})
	if err != nil {
		return nil, 0, err
	}
	var bs []batchDoc
	if err := cur.All(ctx, &bs); err != nil {
		return nil, 0, err
	}
	slices.SortFunc(bs, func(a, b batchDoc) int { return a.Batch - b.Batch })
	var out []string
	total := 0
	for _, b := range bs {
		total += len(b.Clusters)
		out = append(out, b.Clusters[:min(len(b.Clusters), max(0, limit-len(out)))]...)
	}
	return out, total, nil
}

// clusterKeys lists the clusters of a context's batches in batch order: a page of a
// context on 10,000 clusters needs no cluster document outside it.
func clusterKeys(bs []batchDoc) []string {
	bs = slices.Clone(bs)
	slices.SortFunc(bs, func(a, b batchDoc) int { return a.Batch - b.Batch })
	var out []string
	for _, b := range bs {
		out = append(out, b.Clusters...)
	}
	return out
}
