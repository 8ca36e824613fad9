// The apps placed on each cluster with their statuses: reading them, writing the statuses back.

package appctx

import (
	"context"
	"errors"
	"slices"
	"sort"
	"strconv"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"golang.org/x/sync/errgroup"
)

// ClusterApps returns the apps placed on one cluster with their resources' statuses.
func (s *Store) ClusterApps(ctx context.Context, ctxID, cluster string) ([]*ClusterApp, error) {
	d, err := s.clusterDoc(ctx, ctxID, cluster)
	if d == nil || err != nil {
		return nil, err
	}
	return d.Apps, s.list(ctx, ctxID, []*clusterDoc{d})
}

// PlacedApps is ClusterApps for a caller that holds the rendered apps and lists the
// placements itself (see List).
func (s *Store) PlacedApps(ctx context.Context, ctxID, cluster string) ([]*ClusterApp, error) {
	d, err := s.clusterDoc(ctx, ctxID, cluster)
	if d == nil || err != nil {
		return nil, err
	}
	return d.Apps, nil
}

// clusterDoc reads the document of one cluster of a context (nil if it has none).
func (s *Store) clusterDoc(ctx context.Context, ctxID, cluster string) (*clusterDoc, error) {
	var d clusterDoc
	err := s.clusters.FindOne(ctx, bson.D{{Key: "_id", Value: clusterID(ctxID, cluster)}}).Decode(&d)
	if errors.Is(err, mongo.ErrNoDocuments) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	for _, a := range d.Apps {
		a.Cluster = d.Cluster
	}
	return &d, nil
}

// clusterDocs reads the documents of the given clusters of a context, several at once.
// One lookup per _id: a MongoDB-wire server without a query planner (FerretDB 1.x)
// answers an $in by scanning the collection. A cluster named twice is read once.
func (s *Store) clusterDocs(ctx context.Context, ctxID string, clusters []string) ([]*clusterDoc, error) {
	clusters = slices.Compact(slices.Sorted(slices.Values(clusters)))
	docs := make([]*clusterDoc, len(clusters))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(8)
	for i, c := range clusters {
		g.Go(func() error {
			var d clusterDoc
			err := s.clusters.FindOne(gctx, bson.D{{Key: "_id", Value: clusterID(ctxID, c)}}).Decode(&d)
			if errors.Is(err, mongo.ErrNoDocuments) {
				return nil
			}
			docs[i] = &d
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	return slices.DeleteFunc(docs, func(d *clusterDoc) bool { return d == nil }), nil
}

// Filter selects placements for status queries; empty lists select all.
type Filter struct {
	Apps     []string
	Clusters []string
}

// Placements returns the placements of a context matching f, sorted by app and cluster.
func (s *Store) Placements(ctx context.Context, ctxID string, f Filter) ([]*ClusterApp, error) {
	var docs []*clusterDoc
	if len(f.Clusters) > 0 {
		var err error
		if docs, err = s.clusterDocs(ctx, ctxID, f.Clusters); err != nil {
			return nil, err
		}
	} else {
		cur, err := s.clusters.Find(ctx, bson.D{{Key: "ctx", Value: ctxID}})
		if err != nil {
			return nil, err
		}
		if err := cur.All(ctx, &docs); err != nil {
			return nil, err
		}
	}
	if err := s.list(ctx, ctxID, docs); err != nil {
		return nil, err
	}
	out := []*ClusterApp{}
	for _, d := range docs {
		for _, a := range d.Apps {
			if len(f.Apps) == 0 || slices.Contains(f.Apps, a.App) {
				a.Cluster = d.Cluster
				out = append(out, a)
			}
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].App != out[j].App {
			return out[i].App < out[j].App
		}
		return out[i].Cluster < out[j].Cluster
	})
	return out, nil
}

// SaveClusters writes placements back: every app of each cluster concerned must be in cas.
func (s *Store) SaveClusters(ctx context.Context, ctxID string, cas []*ClusterApp) error {
	byCluster := map[string][]*ClusterApp{}
	var order []string
	for _, ca := range cas {
		if byCluster[ca.Cluster] == nil {
			order = append(order, ca.Cluster)
		}
		byCluster[ca.Cluster] = append(byCluster[ca.Cluster], ca)
	}
	if len(order) == 0 {
		return nil
	}
	models := make([]mongo.WriteModel, 0, len(order))
	for _, c := range order {
		models = append(models, mongo.NewUpdateOneModel().SetFilter(bson.D{{Key: "_id", Value: clusterID(ctxID, c)}}).
			SetUpdate(bson.D{{Key: "$set", Value: bson.D{{Key: "apps", Value: byCluster[c]}}}}))
	}
	_, err := s.clusters.BulkWrite(ctx, models, options.BulkWrite().SetOrdered(false))
	return err
}

// SaveLive records what a live read of one cluster found: each app's Live and LiveAt
// alone, addressed by its place in the cluster's document (cas in the order ClusterApps
// returned them). An apply saving its statuses meanwhile keeps them: a read never writes
// the statuses it read before. A document whose apps changed since is left as it is.
func (s *Store) SaveLive(ctx context.Context, ctxID, cluster string, cas []*ClusterApp) error {
	if len(cas) == 0 {
		return nil
	}
	filter := bson.D{{Key: "_id", Value: clusterID(ctxID, cluster)}}
	set := bson.D{}
	for i, ca := range cas {
		at := "apps." + strconv.Itoa(i)
		filter = append(filter, bson.E{Key: at + ".app", Value: ca.App})
		set = append(set, bson.E{Key: at + ".live", Value: ca.Live}, bson.E{Key: at + ".liveAt", Value: ca.LiveAt})
	}
	_, err := s.clusters.UpdateOne(ctx, filter, bson.D{{Key: "$set", Value: set}})
	return err
}
