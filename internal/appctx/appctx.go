// Package appctx stores AppContexts in MongoDB: one context per DIG instance revision,
// holding the rendered manifests of each app, the placement (which app goes to which
// cluster, in which batch) and the per-resource status on each cluster. Workflows pass
// only context ids; activities read and write here.
package appctx

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"golang.org/x/sync/errgroup"

	"github.com/temco/temco/internal/lifecycle"
	"github.com/temco/temco/internal/model"
	"github.com/temco/temco/internal/store"
)

// Context is the header of one AppContext.
type Context struct {
	ID        string `bson:"_id"`
	DIG       string `bson:"dig"`      // the DIG's store _id
	Instance  string `bson:"instance"` // the context that began this instance (its instantiate)
	Revision  int64  `bson:"revision"`
	Status    string `bson:"status"`
	Error     string `bson:"error,omitempty"`
	Namespace string `bson:"namespace"`
	// Credentials names the logical cloud whose issued credentials the apply uses ("" for
	// the clusters' registered ones: admin clouds, and logical clouds' own set-up).
	Credentials string `bson:"credentials,omitempty"`
	// Apps is written by rendering alone. A MongoDB-wire server may apply two concurrent
	// updates of one document as read-modify-write (FerretDB does), so placement, which
	// runs beside it, keeps its results out of the header: see Store.Batches.
	Apps    []string  `bson:"apps"` // in dependency order
	Created time.Time `bson:"created"`
	Updated time.Time `bson:"updated"`
}

// Ref identifies a Kubernetes object.
type Ref struct {
	Group     string `bson:"group" json:"Group"`
	Version   string `bson:"version" json:"Version"`
	Kind      string `bson:"kind" json:"Kind"`
	Namespace string `bson:"namespace,omitempty" json:"Namespace,omitempty"`
	Name      string `bson:"name" json:"Name"`
}

func (r Ref) String() string {
	s := r.Kind + "/" + r.Name
	if r.Namespace != "" {
		s = r.Namespace + "/" + s
	}
	return s
}

// Object is one rendered manifest of an app.
type Object struct {
	Ref      `bson:",inline"`
	Manifest string `bson:"manifest"` // JSON
	Hash     string `bson:"hash"`     // sha256 of Manifest
}

// App is the rendered content of one app in a context.
type App struct {
	ID      string                    `bson:"_id"` // <ctx>/<app>
	Context string                    `bson:"ctx"`
	Name    string                    `bson:"app"`
	Deps    []model.AppDependencySpec `bson:"deps,omitempty"`
	Objects []Object                  `bson:"objects"` // in apply order
	// Base is what rendering produced, kept once controllers' edits replaced Objects: a
	// retried commit starts from it again.
	Base []Object `bson:"base,omitempty"`
}

// ResourceStatus is the status of one object of an app on one cluster.
type ResourceStatus struct {
	Ref      `bson:",inline"`
	Status   string    `bson:"status"`
	Attempts int32     `bson:"attempts,omitempty"`
	Error    string    `bson:"error,omitempty"`
	Updated  time.Time `bson:"updated,omitempty"`
}

// ClusterApp is one app placed on one cluster, with its resources' statuses.
type ClusterApp struct {
	App       string           `bson:"app"`
	Cluster   string           `bson:"-"` // provider+cluster, from the enclosing document
	Resources []ResourceStatus `bson:"resources"`
	// Unlisted: no status was recorded yet, every object of the app is Pending and only
	// the rendered app lists them (placement runs beside rendering). See List.
	Unlisted bool `bson:"unlisted,omitempty"`
	// Objects replaces the app's objects on this cluster alone (controllers' cluster-
	// specific edits); index-aligned with Resources.
	Objects []Object `bson:"objects,omitempty"`
	// Live is what the cluster showed at LiveAt, index-aligned with Resources.
	Live   []Live    `bson:"live,omitempty"`
	LiveAt time.Time `bson:"liveAt,omitempty"`
}

// clusterDoc holds every app of a context placed on one cluster: the unit a cluster
// activity reads and writes, found by _id (the one lookup every MongoDB-wire server
// serves from an index).
type clusterDoc struct {
	ID      string        `bson:"_id"` // <ctx>/<provider+cluster>
	Context string        `bson:"ctx"`
	Cluster string        `bson:"cluster"`
	Batch   int           `bson:"batch"`
	Apps    []*ClusterApp `bson:"apps"`
}

// batchDoc lists the clusters of one batch.
type batchDoc struct {
	ID       string   `bson:"_id"` // <ctx>/batch/<n>
	Context  string   `bson:"ctx"`
	Batch    int      `bson:"batch"`
	Clusters []string `bson:"clusters"`
	// Counts (app -> resource status -> objects) is the batch's status as counted when
	// its batch workflow ended; absent while one runs. See CountBatch.
	Counts map[string]map[string]int `bson:"counts,omitempty"`
}

// Live is an object as last read from its cluster.
type Live struct {
	State  string `bson:"state"`            // Present, NotPresent or Unknown (cluster unreachable)
	Ready  bool   `bson:"ready"`            // see cluster.Ready
	Error  string `bson:"error,omitempty"`  // why the state is Unknown
	Detail string `bson:"detail,omitempty"` // JSON, see DetailOf; when asked for
}

// Live states.
const (
	LivePresent    = "Present"
	LiveNotPresent = "NotPresent"
	LiveUnknown    = "Unknown"
)

// Store is the AppContext repository.
type Store struct {
	contexts, apps, clusters, batches *mongo.Collection
	edits, groups                     *mongo.Collection // controllers' layers, placement before controllers
}

// New prepares the collections of db.
func New(ctx context.Context, db *mongo.Database) (*Store, error) {
	s := &Store{contexts: db.Collection("contexts"), apps: db.Collection("ctxapps"),
		clusters: db.Collection("ctxclusters"), batches: db.Collection("ctxbatches"),
		edits: db.Collection("ctxedits"), groups: db.Collection("ctxgroups")}
	for _, c := range []*mongo.Collection{s.apps, s.clusters, s.batches, s.edits, s.groups} {
		if err := store.EnsureIndexes(ctx, c, []store.Index{store.Index(bson.D{{Key: "ctx", Value: 1}})}); err != nil {
			return nil, err
		}
	}
	return s, nil
}

func clusterID(ctxID, cluster string) string { return ctxID + "/" + cluster }

func batchID(ctxID string, batch int) string { return fmt.Sprintf("%s/batch/%d", ctxID, batch) }

// ErrNotFound is returned for a missing context.
var ErrNotFound = errors.New("appcontext not found")

// Create stores a new context header; creating the same id again is a no-op.
func (s *Store) Create(ctx context.Context, c *Context) error {
	c.Created, c.Updated = time.Now().UTC(), time.Now().UTC()
	_, err := s.contexts.InsertOne(ctx, c)
	if mongo.IsDuplicateKeyError(err) {
		return nil
	}
	return err
}

// Get returns a context header.
func (s *Store) Get(ctx context.Context, id string) (*Context, error) {
	var c Context
	err := s.contexts.FindOne(ctx, bson.D{{Key: "_id", Value: id}}).Decode(&c)
	if errors.Is(err, mongo.ErrNoDocuments) {
		return nil, fmt.Errorf("%w: %s", ErrNotFound, id)
	}
	return &c, err
}

// Set updates fields of a context header.
func (s *Store) Set(ctx context.Context, id string, fields bson.D) error {
	fields = append(fields, bson.E{Key: "updated", Value: time.Now().UTC()})
	_, err := s.contexts.UpdateOne(ctx, bson.D{{Key: "_id", Value: id}}, bson.D{{Key: "$set", Value: fields}})
	return err
}

// SetStatus sets the context status (and its error message, cleared when empty).
func (s *Store) SetStatus(ctx context.Context, id, status, errMsg string) error {
	return s.Set(ctx, id, bson.D{{Key: "status", Value: status}, {Key: "error", Value: errMsg}})
}

// PutApps stores the rendered apps of a context, replacing those of an earlier attempt.
func (s *Store) PutApps(ctx context.Context, ctxID string, apps []*App) error {
	docs := make([]any, len(apps))
	for i, a := range apps {
		a.ID, a.Context = ctxID+"/"+a.Name, ctxID
		docs[i] = a
	}
	return s.replaceAll(ctx, s.apps, ctxID, docs)
}

// replaceAll inserts the documents of a context into c. Only when an earlier attempt
// left some behind (a duplicate key) does it pay for deleting the context's documents
// first: a filter on anything but _id may scan the whole collection.
func (s *Store) replaceAll(ctx context.Context, c *mongo.Collection, ctxID string, docs []any) error {
	err := insertChunks(ctx, c, docs)
	if !mongo.IsDuplicateKeyError(err) {
		return err
	}
	if _, err := c.DeleteMany(ctx, bson.D{{Key: "ctx", Value: ctxID}}); err != nil {
		return err
	}
	return insertChunks(ctx, c, docs)
}

// Apps returns the rendered apps of a context (those its header lists), by name.
func (s *Store) Apps(ctx context.Context, c *Context) (map[string]*App, error) {
	apps, err := s.rendered(ctx, c.ID, c.Apps)
	if err == nil && len(apps) < len(c.Apps) {
		err = fmt.Errorf("context %s: some of its apps %v are not rendered", c.ID, c.Apps)
	}
	return apps, err
}

// rendered reads the named rendered apps of a context, by name; one not rendered (yet) is
// left out.
func (s *Store) rendered(ctx context.Context, ctxID string, names []string) (map[string]*App, error) {
	apps := make([]*App, len(names))
	var g errgroup.Group
	for i, name := range names {
		g.Go(func() error {
			var a App
			err := s.apps.FindOne(ctx, bson.D{{Key: "_id", Value: ctxID + "/" + name}}).Decode(&a)
			if errors.Is(err, mongo.ErrNoDocuments) {
				return nil
			}
			if err != nil {
				return fmt.Errorf("rendered app %s of context %s: %w", name, ctxID, err)
			}
			apps[i] = &a
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	out := make(map[string]*App, len(apps))
	for _, a := range apps {
		if a != nil {
			out[a.Name] = a
		}
	}
	return out, nil
}

// List fills in the resources of unlisted placements from the rendered apps, every one
// Pending. A placement whose app is not rendered yet stays unlisted.
func List(cas []*ClusterApp, rendered map[string]*App) {
	for _, ca := range cas {
		app := rendered[ca.App]
		if !ca.Unlisted || app == nil {
			continue
		}
		ca.Resources = make([]ResourceStatus, len(app.Objects))
		for i, o := range app.Objects {
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
		all = append(all, docs[c])
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

func insertChunks(ctx context.Context, c *mongo.Collection, docs []any) error {
	const chunk = 500 // documents per round trip
	for i := 0; i < len(docs); i += chunk {
		if _, err := c.InsertMany(ctx, docs[i:min(i+chunk, len(docs))], options.InsertMany().SetOrdered(false)); err != nil {
			return err
		}
	}
	return nil
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
	err := s.batches.FindOne(ctx, bson.D{{Key: "_id", Value: id}}).Decode(&b)
	if errors.Is(err, mongo.ErrNoDocuments) {
		return nil, nil
	}
	return b.Clusters, err
}

// CountBatch stores the per-app status counts of one batch. Its batch workflow calls it
// when all its clusters are done; statuses change only while a batch workflow runs over
// them, and each begins with StartBatch, so stored counts are current. Summaries then
// read one small document per batch instead of one per cluster.
func (s *Store) CountBatch(ctx context.Context, ctxID string, batch int) error {
	var b batchDoc
	id := batchID(ctxID, batch)
	if err := s.batches.FindOne(ctx, bson.D{{Key: "_id", Value: id}}).Decode(&b); err != nil {
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
	counts := map[string]map[string]int{}
	for _, d := range docs {
		countDoc(counts, d, rendered)
	}
	_, err = s.batches.UpdateOne(ctx, bson.D{{Key: "_id", Value: id}}, bson.D{{Key: "$set", Value: bson.D{{Key: "counts", Value: counts}}}})
	return err
}

// Summary counts the objects of a context by status, only those of apps when given:
// from the stored counts of each batch, and from the cluster documents of batches that
// have none (running, stopped or never counted).
func (s *Store) Summary(ctx context.Context, ctxID string, apps []string) (map[string]int, error) {
	bs, err := s.contextBatches(ctx, ctxID)
	if err != nil {
		return nil, err
	}
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

// Batches returns how many cluster batches a context has.
func (s *Store) Batches(ctx context.Context, ctxID string) (int, error) {
	n, err := s.batches.CountDocuments(ctx, bson.D{{Key: "ctx", Value: ctxID}})
	return int(n), err
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

// Copy makes context "to" a copy of the rendered apps and the placement of context from,
// every object Pending, and returns its plan: a rollback re-applies a stored revision.
// to's header must exist.
func (s *Store) Copy(ctx context.Context, from, to string) (lifecycle.Plan, error) {
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
	if err := s.PutPlacement(ctx, to, placed, batchOf); err != nil {
		return lifecycle.Plan{}, err
	}
	if err := s.Set(ctx, to, bson.D{{Key: "apps", Value: src.Apps}}); err != nil {
		return lifecycle.Plan{}, err
	}
	return lifecycle.Plan{Apps: len(src.Apps), Clusters: len(batchOf), Batches: len(bs)}, nil
}

// DeleteContext removes a context and everything in it.
func (s *Store) DeleteContext(ctx context.Context, ctxID string) error {
	for _, c := range []*mongo.Collection{s.clusters, s.batches, s.apps, s.edits, s.groups} {
		if _, err := c.DeleteMany(ctx, bson.D{{Key: "ctx", Value: ctxID}}); err != nil {
			return err
		}
	}
	_, err := s.contexts.DeleteOne(ctx, bson.D{{Key: "_id", Value: ctxID}})
	return err
}
