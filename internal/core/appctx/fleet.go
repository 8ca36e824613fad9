package appctx

import (
	"context"
	"fmt"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"golang.org/x/sync/errgroup"

	"github.com/temco/temco/internal/core/lifecycle"
)

// FleetContext is what the fleet's home shows of one context: its header's outcome and
// rollout, its clusters and objects by status, its last drift check.
type FleetContext struct {
	Status   string
	Error    string
	Op       string // the operation that made a later revision (update, rollback)
	Revision int64
	Updated  time.Time
	Rollout  *lifecycle.RolloutStatus
	Clusters int            // placed on
	States   map[string]int // clusters by their worst object's status
	Objects  map[string]int // objects by status
	Drift    *DriftSummary  // the last drift check (without its cluster lists); nil: none
	Ready    *Readiness     // the last live read of all its clusters; nil: none
}

// Readiness is what the last live read of all of a context's clusters found: its objects
// by readiness (EMCO's Ready, NotReady, NotPresent, Omitted) and its clusters by the
// readiness of their objects together.
type Readiness struct {
	Objects  map[string]int `bson:"objects" json:"objects"`
	Clusters map[string]int `bson:"clusters" json:"clusters"`
	Read     time.Time      `bson:"read" json:"read"`
}

// SaveReadiness records r on context id. The context's updated time stays: a read
// changes nothing deployed.
func (s *Store) SaveReadiness(ctx context.Context, id string, r Readiness) error {
	return s.exclusive(ctx, s.contexts, id, func(ctx context.Context) error {
		_, err := s.contexts.UpdateOne(ctx, bson.D{{Key: "_id", Value: id}}, bson.D{{Key: "$set", Value: bson.D{{Key: "ready", Value: r}}}})
		return err
	})
}

// Fleet reads what the fleet's home shows of each of the contexts ids: three queries
// whatever their number (headers, batches, drift summaries), plus the cluster documents
// of batches not counted (running, stopped): a home of 1,000 DIGs reads no cluster
// document while nothing runs. A context that does not exist is left out.
func (s *Store) Fleet(ctx context.Context, ids []string) (map[string]*FleetContext, error) {
	if len(ids) == 0 {
		return map[string]*FleetContext{}, nil
	}
	r, err := s.readFleet(ctx, ids)
	if err != nil {
		return nil, fmt.Errorf("read the fleet's %d contexts: %w", len(ids), err)
	}
	out, uncounted := r.fleet()
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(4)
	for id, clusters := range uncounted {
		f := out[id]
		g.Go(func() error { return s.countClusters(gctx, id, clusters, f) })
	}
	return out, g.Wait()
}

// fleetHeader is what Fleet reads of a context's header.
type fleetHeader struct {
	ID       string                   `bson:"_id"`
	Status   string                   `bson:"status"`
	Error    string                   `bson:"error"`
	Op       string                   `bson:"op"`
	Revision int64                    `bson:"revision"`
	Updated  time.Time                `bson:"updated"`
	Rollout  *lifecycle.RolloutStatus `bson:"rollout"`
	Ready    *Readiness               `bson:"ready"`
}

// fleetRead is what Fleet's three queries read.
type fleetRead struct {
	headers []fleetHeader
	batches []batchDoc
	drifts  []DriftSummary
}

// readFleet reads the headers, batches and drift summaries (without their cluster lists)
// of the contexts ids, at once.
func (s *Store) readFleet(ctx context.Context, ids []string) (*fleetRead, error) {
	var r fleetRead
	in := bson.D{{Key: "$in", Value: ids}}
	driftIDs := make([]string, len(ids))
	for i, id := range ids {
		driftIDs[i] = driftSummaryID(id)
	}
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error {
		cur, err := s.contexts.Find(gctx, bson.D{{Key: "_id", Value: in}}, options.Find().SetProjection(bson.D{
			{Key: "status", Value: 1}, {Key: "error", Value: 1}, {Key: "op", Value: 1}, {Key: "revision", Value: 1}, {Key: "updated", Value: 1}, {Key: "rollout", Value: 1}, {Key: "ready", Value: 1}}))
		if err != nil {
			return err
		}
		return cur.All(gctx, &r.headers)
	})
	g.Go(func() error {
		cur, err := s.batches.Find(gctx, bson.D{{Key: "ctx", Value: in}})
		if err != nil {
			return err
		}
		return cur.All(gctx, &r.batches)
	})
	g.Go(func() error {
		cur, err := s.drift.Find(gctx, bson.D{{Key: "_id", Value: bson.D{{Key: "$in", Value: driftIDs}}}},
			options.Find().SetProjection(bson.D{{Key: "driftedClusters", Value: 0}, {Key: "uncheckedClusters", Value: 0}}))
		if err != nil {
			return err
		}
		return cur.All(gctx, &r.drifts)
	})
	if err := g.Wait(); err != nil {
		return nil, err
	}
	return &r, nil
}

// fleet is what r says of each context with a header: the header, its last drift check,
// and its clusters and objects as its counted batches counted them. uncounted lists, by
// context, the clusters of its batches without counts, still to count from their
// documents.
func (r *fleetRead) fleet() (out map[string]*FleetContext, uncounted map[string][]string) {
	out, uncounted = map[string]*FleetContext{}, map[string][]string{}
	for _, h := range r.headers {
		out[h.ID] = &FleetContext{Status: h.Status, Error: h.Error, Op: h.Op, Revision: h.Revision, Updated: h.Updated, Rollout: h.Rollout, Ready: h.Ready,
			States: map[string]int{}, Objects: map[string]int{}}
	}
	for i := range r.drifts {
		if f := out[r.drifts[i].Context]; f != nil {
			f.Drift = &r.drifts[i]
		}
	}
	for _, b := range r.batches {
		f := out[b.Context]
		if f == nil {
			continue
		}
		f.Clusters += len(b.Clusters)
		if b.Counts == nil || b.States == nil {
			uncounted[b.Context] = append(uncounted[b.Context], b.Clusters...)
			continue
		}
		for _, byStatus := range b.Counts {
			for status, n := range byStatus {
				f.Objects[status] += n
			}
		}
		for state, n := range b.States {
			f.States[state] += n
		}
	}
	return out, uncounted
}

// countClusters adds the objects and states of clusters of context ctxID to f, from
// their documents.
func (s *Store) countClusters(ctx context.Context, ctxID string, clusters []string, f *FleetContext) error {
	docs, err := s.clusterDocs(ctx, ctxID, clusters)
	if err != nil {
		return err
	}
	rendered, err := s.unlisted(ctx, ctxID, docs)
	if err != nil {
		return err
	}
	counts := map[string]map[string]int{}
	for _, d := range docs {
		countDoc(counts, d, rendered)
		f.States[clusterState(d, rendered)]++
	}
	for _, byStatus := range counts {
		for status, n := range byStatus {
			f.Objects[status] += n
		}
	}
	return nil
}
