// The apps placed on each cluster with their statuses: reading them, writing the statuses back.

package appctx

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"golang.org/x/sync/errgroup"

	"github.com/temco/temco/internal/core/store"
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
	docs, err := s.clusterDocs(ctx, ctxID, []string{cluster})
	if len(docs) == 0 || err != nil {
		return nil, err
	}
	return docs[0], nil
}

// clusterDocs reads the documents of the given clusters of a context.
func (s *Store) clusterDocs(ctx context.Context, ctxID string, clusters []string) ([]*clusterDoc, error) {
	if len(clusters) == 0 {
		return nil, nil
	}
	return s.docs(ctx, ctxID, clusters)
}

// docs reads the documents of the given clusters of a context (every one when clusters
// is nil), in the context's layout: one read per group, or one per cluster.
func (s *Store) docs(ctx context.Context, ctxID string, clusters []string) ([]*clusterDoc, error) {
	cached := s.layouts.get(ctxID) != nil
	lay, err := s.layoutOf(ctx, ctxID, false)
	if err != nil {
		return nil, err
	}
	if !lay.grouped {
		if clusters == nil {
			return s.everyCluster(ctx, ctxID)
		}
		return s.ownDocs(ctx, ctxID, clusters)
	}
	docs, err := s.groupedDocs(ctx, ctxID, lay, clusters)
	if err != nil || !cached || clusters == nil || len(docs) == len(slices.Compact(slices.Sorted(slices.Values(clusters)))) {
		return docs, err
	}
	// A cluster missing from a cached layout: the context may have been placed again.
	if lay, err = s.layoutOf(ctx, ctxID, true); err != nil {
		return nil, err
	}
	if !lay.grouped {
		return s.ownDocs(ctx, ctxID, clusters)
	}
	return s.groupedDocs(ctx, ctxID, lay, clusters)
}

// everyCluster reads every cluster document of a context placed before groups.
func (s *Store) everyCluster(ctx context.Context, ctxID string) ([]*clusterDoc, error) {
	cur, err := s.clusters.Find(ctx, bson.D{{Key: "ctx", Value: ctxID}})
	if err != nil {
		return nil, err
	}
	var docs []*clusterDoc
	if err := cur.All(ctx, &docs); err != nil {
		return nil, err
	}
	for _, d := range docs {
		if err := s.opened(ctxID, d); err != nil {
			return nil, err
		}
	}
	return docs, nil
}

// ownDoc reads the document of one cluster of a context placed before groups.
func (s *Store) ownDoc(ctx context.Context, ctxID, cluster string) (*clusterDoc, error) {
	var d clusterDoc
	err := store.FindOne(ctx, s.clusters, bson.D{{Key: "_id", Value: clusterID(ctxID, cluster)}}, &d)
	if errors.Is(err, mongo.ErrNoDocuments) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return &d, s.opened(ctxID, &d)
}

// ownDocs reads the documents of the given clusters of a context placed before groups,
// several at once. One lookup per _id: a MongoDB-wire server without a query planner
// (FerretDB 1.x) answers an $in by scanning the collection. A cluster named twice is read
// once.
func (s *Store) ownDocs(ctx context.Context, ctxID string, clusters []string) ([]*clusterDoc, error) {
	clusters = slices.Compact(slices.Sorted(slices.Values(clusters)))
	docs := make([]*clusterDoc, len(clusters))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(8)
	for i, c := range clusters {
		g.Go(func() (err error) {
			docs[i], err = s.ownDoc(gctx, ctxID, c)
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
	var clusters []string // nil: every one
	if len(f.Clusters) > 0 {
		clusters = f.Clusters
	}
	docs, err := s.docs(ctx, ctxID, clusters)
	if err != nil {
		return nil, err
	}
	if err := s.list(ctx, ctxID, docs); err != nil {
		return nil, err
	}
	out := []*ClusterApp{}
	for _, d := range docs {
		for _, a := range d.Apps {
			if len(f.Apps) == 0 || slices.Contains(f.Apps, a.App) {
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

// SaveClusters writes placements back whole, their live reads included: every app of each
// cluster concerned must be in cas.
func (s *Store) SaveClusters(ctx context.Context, ctxID string, cas []*ClusterApp) error {
	return s.saveClusters(ctx, ctxID, Attempt{}, true, cas)
}

// Attempt is one attempt of a cluster activity: Activity names the activity (its workflow
// run and activity id), the same in all its attempts, and Number counts them.
type Attempt struct {
	Activity string `bson:"activity"`
	Number   int32  `bson:"attempt"`
}

// ActivityName is how an Attempt names the activity it is an attempt of.
func ActivityName(runID, activityID string) string { return runID + "/" + activityID }

// ErrSuperseded: a later attempt of the same cluster activity saved its statuses.
var ErrSuperseded = errors.New("a later attempt of this cluster activity already saved its statuses")

// SaveStatuses is SaveClusters leaving the live reads as they are stored (a read may have
// saved since cas were read), for an attempt of a cluster activity (by; zero for none).
// Once a later attempt of the activity has saved (Temporal retried it after a heartbeat
// timeout while this one still ran), this one's saves are refused with ErrSuperseded:
// they would undo the later's.
func (s *Store) SaveStatuses(ctx context.Context, ctxID string, by Attempt, cas []*ClusterApp) error {
	return s.saveClusters(ctx, ctxID, by, false, cas)
}

// saveClusters writes the apps of each cluster of cas, and their live reads if live.
func (s *Store) saveClusters(ctx context.Context, ctxID string, by Attempt, live bool, cas []*ClusterApp) error {
	byCluster := map[string][]*ClusterApp{}
	var order []string
	for _, ca := range cas {
		if byCluster[ca.Cluster] == nil {
			order = append(order, ca.Cluster)
		}
		byCluster[ca.Cluster] = append(byCluster[ca.Cluster], ca)
	}
	if len(order) == 1 { // a cluster activity's
		return s.saveCluster(ctx, ctxID, order[0], by, live, byCluster[order[0]])
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(8)
	for _, c := range order {
		g.Go(func() error { return s.saveCluster(gctx, ctxID, c, by, live, byCluster[c]) })
	}
	return g.Wait()
}

// saveCluster writes the apps of one cluster's document, holding its claim. A document
// that does not exist is left so.
func (s *Store) saveCluster(ctx context.Context, ctxID, cluster string, by Attempt, live bool, apps []*ClusterApp) error {
	stored, err := s.sealPlaced(ctxID, cluster, apps)
	if err != nil {
		return err
	}
	if group, err := s.groupOf(ctx, ctxID, cluster); err != nil || group != "" {
		if err != nil {
			return err
		}
		return s.writeGroup(group, &change{cluster: cluster, apps: stored, setLive: live, live: liveOf(apps), by: by})
	}
	id := clusterID(ctxID, cluster)
	filter := bson.D{{Key: "_id", Value: id}}
	set := bson.D{{Key: "apps", Value: stored}}
	if live {
		set = append(set, bson.E{Key: "live", Value: liveOf(apps)})
	}
	if by.Activity != "" {
		filter = append(filter, bson.E{Key: "$or", Value: bson.A{
			bson.D{{Key: "writer.activity", Value: bson.D{{Key: "$ne", Value: by.Activity}}}},
			bson.D{{Key: "writer.attempt", Value: bson.D{{Key: "$lte", Value: by.Number}}}},
		}})
		set = append(set, bson.E{Key: "writer", Value: by})
	}
	return s.exclusiveAs(ctx, s.clusters, id, by, func(ctx context.Context) error {
		res, err := s.clusters.UpdateOne(ctx, filter, bson.D{{Key: "$set", Value: set}})
		if err != nil || res.MatchedCount > 0 || by.Activity == "" {
			return err
		}
		err = store.FindOne(ctx, s.clusters, bson.D{{Key: "_id", Value: id}}, new(bson.Raw), options.Find().SetProjection(bson.D{{Key: "_id", Value: 1}}))
		switch {
		case errors.Is(err, mongo.ErrNoDocuments):
			return nil
		case err != nil:
			return err
		}
		return fmt.Errorf("statuses of %s in context %s: %w", cluster, ctxID, ErrSuperseded)
	})
}

// liveOf lists the live reads of apps (none: empty, not null).
func liveOf(apps []*ClusterApp) []appLive {
	out := []appLive{}
	for _, a := range apps {
		if a.Live != nil || !a.LiveAt.IsZero() {
			out = append(out, appLive{App: a.App, Objects: a.Live, At: a.LiveAt})
		}
	}
	return out
}

// SaveLive records what a live read of one cluster found: each app's Live and LiveAt
// alone (cas in the order ClusterApps returned them), beside the statuses, which an apply
// saving meanwhile keeps. A document whose apps changed since is left as it is.
func (s *Store) SaveLive(ctx context.Context, ctxID, cluster string, cas []*ClusterApp) error {
	if len(cas) == 0 {
		return nil
	}
	id := clusterID(ctxID, cluster)
	filter := bson.D{{Key: "_id", Value: id}}
	live := make([]appLive, len(cas))
	names := make([]string, len(cas))
	for i, ca := range cas {
		filter = append(filter, bson.E{Key: "apps." + strconv.Itoa(i) + ".app", Value: ca.App})
		live[i] = appLive{App: ca.App, Objects: ca.Live, At: ca.LiveAt}
		names[i] = ca.App
	}
	if group, err := s.groupOf(ctx, ctxID, cluster); err != nil || group != "" {
		if err != nil {
			return err
		}
		return s.writeGroup(group, &change{cluster: cluster, live: live, liveFor: names})
	}
	return s.exclusive(ctx, s.clusters, id, func(ctx context.Context) error {
		_, err := s.clusters.UpdateOne(ctx, filter, bson.D{{Key: "$set", Value: bson.D{{Key: "live", Value: live}}}})
		return err
	})
}

// OnCluster reads the placements on one cluster in each of the contexts ids, by context
// (one lookup per context, a few at once: FerretDB answers an $in by scanning); a context
// with nothing there is left out.
func (s *Store) OnCluster(ctx context.Context, cluster string, ids []string) (map[string][]*ClusterApp, error) {
	found := make([][]*ClusterApp, len(ids))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(8)
	for i, id := range ids {
		g.Go(func() (err error) {
			found[i], err = s.Placements(gctx, id, Filter{Clusters: []string{cluster}})
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	out := map[string][]*ClusterApp{}
	for i, ps := range found {
		if len(ps) > 0 {
			out[ids[i]] = ps
		}
	}
	return out, nil
}

// groupOf names the group document holding cluster of a grouped context ("" when the
// context keeps a document per cluster, or does not place the cluster).
func (s *Store) groupOf(ctx context.Context, ctxID, cluster string) (string, error) {
	for refresh := range 2 {
		lay, err := s.layoutOf(ctx, ctxID, refresh == 1)
		if err != nil || !lay.grouped {
			return "", err
		}
		if b, ok := lay.batchOf[cluster]; ok {
			return batchID(ctxID, b), nil
		}
	}
	return "", nil
}
