// Package appctx stores AppContexts in MongoDB: one context per DIG instance revision,
// holding the rendered manifests of each app, the placement (which app goes to which
// cluster, in which batch) and the per-resource status on each cluster. Workflows pass
// only context ids; activities read and write here.
package appctx

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/temco/temco/internal/model"
	"github.com/temco/temco/internal/store"
)

// Context is the header of one AppContext.
type Context struct {
	ID        string    `bson:"_id"`
	DIG       string    `bson:"dig"`      // the DIG's store _id
	Instance  string    `bson:"instance"` // the context that began this instance (its instantiate)
	Revision  int64     `bson:"revision"`
	Status    string    `bson:"status"`
	Error     string    `bson:"error,omitempty"`
	Namespace string    `bson:"namespace"`
	Apps      []string  `bson:"apps"` // in dependency order
	Clusters  int       `bson:"clusters"`
	Batches   int       `bson:"batches"`
	Created   time.Time `bson:"created"`
	Updated   time.Time `bson:"updated"`
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
	ID        string           `bson:"_id"` // <ctx>/<app>/<provider+cluster>
	Context   string           `bson:"ctx"`
	App       string           `bson:"app"`
	Cluster   string           `bson:"cluster"` // provider+cluster
	Batch     int              `bson:"batch"`
	Resources []ResourceStatus `bson:"resources"`
	// Live is what the cluster showed at LiveAt, index-aligned with Resources.
	Live   []Live    `bson:"live,omitempty"`
	LiveAt time.Time `bson:"liveAt,omitempty"`
}

// Live is an object as last read from its cluster.
type Live struct {
	State  string `bson:"state"`            // Present, NotPresent or Unknown (cluster unreachable)
	Ready  bool   `bson:"ready"`            // see cluster.Ready
	Error  string `bson:"error,omitempty"`  // why the state is Unknown
	Detail string `bson:"detail,omitempty"` // JSON {metadata, spec, status}, when asked for
}

// Live states.
const (
	LivePresent    = "Present"
	LiveNotPresent = "NotPresent"
	LiveUnknown    = "Unknown"
)

// Store is the AppContext repository.
type Store struct {
	contexts, apps, clusters *mongo.Collection
}

// New prepares the collections of db.
func New(ctx context.Context, db *mongo.Database) (*Store, error) {
	s := &Store{contexts: db.Collection("contexts"), apps: db.Collection("ctxapps"), clusters: db.Collection("ctxclusters")}
	err := store.EnsureIndexes(ctx, s.clusters, []store.Index{
		store.Index(bson.D{{Key: "ctx", Value: 1}, {Key: "batch", Value: 1}}),
		store.Index(bson.D{{Key: "ctx", Value: 1}, {Key: "cluster", Value: 1}}),
		store.Index(bson.D{{Key: "ctx", Value: 1}, {Key: "app", Value: 1}}),
	})
	if err != nil {
		return nil, err
	}
	if err := store.EnsureIndexes(ctx, s.apps, []store.Index{store.Index(bson.D{{Key: "ctx", Value: 1}})}); err != nil {
		return nil, err
	}
	return s, nil
}

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

// PutApps replaces the rendered apps of a context.
func (s *Store) PutApps(ctx context.Context, ctxID string, apps []*App) error {
	if _, err := s.apps.DeleteMany(ctx, bson.D{{Key: "ctx", Value: ctxID}}); err != nil {
		return err
	}
	docs := make([]any, len(apps))
	for i, a := range apps {
		a.ID, a.Context = ctxID+"/"+a.Name, ctxID
		docs[i] = a
	}
	if len(docs) == 0 {
		return nil
	}
	_, err := s.apps.InsertMany(ctx, docs)
	return err
}

// Apps returns the rendered apps of a context, by name.
func (s *Store) Apps(ctx context.Context, ctxID string) (map[string]*App, error) {
	cur, err := s.apps.Find(ctx, bson.D{{Key: "ctx", Value: ctxID}})
	if err != nil {
		return nil, err
	}
	var apps []*App
	if err := cur.All(ctx, &apps); err != nil {
		return nil, err
	}
	out := make(map[string]*App, len(apps))
	for _, a := range apps {
		out[a.Name] = a
	}
	return out, nil
}

// PutPlacement replaces the placement of a context, in bulk.
func (s *Store) PutPlacement(ctx context.Context, ctxID string, placed []*ClusterApp) error {
	if _, err := s.clusters.DeleteMany(ctx, bson.D{{Key: "ctx", Value: ctxID}}); err != nil {
		return err
	}
	const chunk = 1000
	for i := 0; i < len(placed); i += chunk {
		end := min(i+chunk, len(placed))
		docs := make([]any, 0, end-i)
		for _, p := range placed[i:end] {
			p.ID, p.Context = ctxID+"/"+p.App+"/"+p.Cluster, ctxID
			docs = append(docs, p)
		}
		if _, err := s.clusters.InsertMany(ctx, docs, options.InsertMany().SetOrdered(false)); err != nil {
			return fmt.Errorf("store placement: %w", err)
		}
	}
	return nil
}

// BatchClusters returns the sorted cluster keys of one batch.
func (s *Store) BatchClusters(ctx context.Context, ctxID string, batch int) ([]string, error) {
	cur, err := s.clusters.Find(ctx, bson.D{{Key: "ctx", Value: ctxID}, {Key: "batch", Value: batch}},
		options.Find().SetProjection(bson.D{{Key: "cluster", Value: 1}}))
	if err != nil {
		return nil, err
	}
	var docs []ClusterApp
	if err := cur.All(ctx, &docs); err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	var out []string
	for _, d := range docs {
		if !seen[d.Cluster] {
			seen[d.Cluster] = true
			out = append(out, d.Cluster)
		}
	}
	sort.Strings(out)
	return out, nil
}

// ClusterApps returns the apps placed on one cluster.
func (s *Store) ClusterApps(ctx context.Context, ctxID, cluster string) ([]*ClusterApp, error) {
	return s.find(ctx, bson.D{{Key: "ctx", Value: ctxID}, {Key: "cluster", Value: cluster}})
}

// Filter selects placements for status queries; empty lists select all.
type Filter struct {
	Apps     []string
	Clusters []string
}

// Placements returns the placements of a context matching f, sorted by app and cluster.
func (s *Store) Placements(ctx context.Context, ctxID string, f Filter) ([]*ClusterApp, error) {
	q := bson.D{{Key: "ctx", Value: ctxID}}
	if len(f.Apps) > 0 {
		q = append(q, bson.E{Key: "app", Value: bson.D{{Key: "$in", Value: f.Apps}}})
	}
	if len(f.Clusters) > 0 {
		q = append(q, bson.E{Key: "cluster", Value: bson.D{{Key: "$in", Value: f.Clusters}}})
	}
	docs, err := s.find(ctx, q)
	if err != nil {
		return nil, err
	}
	sort.Slice(docs, func(i, j int) bool { return docs[i].ID < docs[j].ID })
	return docs, nil
}

func (s *Store) find(ctx context.Context, q bson.D) ([]*ClusterApp, error) {
	cur, err := s.clusters.Find(ctx, q)
	if err != nil {
		return nil, err
	}
	docs := []*ClusterApp{}
	return docs, cur.All(ctx, &docs)
}

// SaveResources writes the resource statuses of one app on one cluster.
func (s *Store) SaveResources(ctx context.Context, ca *ClusterApp) error {
	_, err := s.clusters.UpdateOne(ctx, bson.D{{Key: "_id", Value: ca.ID}},
		bson.D{{Key: "$set", Value: bson.D{{Key: "resources", Value: ca.Resources}}}})
	return err
}

// SaveAll writes the resource statuses of several placements in one round trip.
func (s *Store) SaveAll(ctx context.Context, cas []*ClusterApp) error {
	if len(cas) == 0 {
		return nil
	}
	models := make([]mongo.WriteModel, len(cas))
	for i, ca := range cas {
		models[i] = mongo.NewUpdateOneModel().SetFilter(bson.D{{Key: "_id", Value: ca.ID}}).
			SetUpdate(bson.D{{Key: "$set", Value: bson.D{{Key: "resources", Value: ca.Resources}}}})
	}
	_, err := s.clusters.BulkWrite(ctx, models, options.BulkWrite().SetOrdered(false))
	return err
}

// SaveLive writes what was read from the clusters for several placements.
func (s *Store) SaveLive(ctx context.Context, cas []*ClusterApp) error {
	if len(cas) == 0 {
		return nil
	}
	models := make([]mongo.WriteModel, len(cas))
	for i, ca := range cas {
		models[i] = mongo.NewUpdateOneModel().SetFilter(bson.D{{Key: "_id", Value: ca.ID}}).
			SetUpdate(bson.D{{Key: "$set", Value: bson.D{{Key: "live", Value: ca.Live}, {Key: "liveAt", Value: ca.LiveAt}}}})
	}
	_, err := s.clusters.BulkWrite(ctx, models, options.BulkWrite().SetOrdered(false))
	return err
}

// DeleteContext removes a context and everything in it.
func (s *Store) DeleteContext(ctx context.Context, ctxID string) error {
	for _, c := range []*mongo.Collection{s.clusters, s.apps} {
		if _, err := c.DeleteMany(ctx, bson.D{{Key: "ctx", Value: ctxID}}); err != nil {
			return err
		}
	}
	_, err := s.contexts.DeleteOne(ctx, bson.D{{Key: "_id", Value: ctxID}})
	return err
}
