package appctx

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/temco/temco/contract"
)

// NewObject makes the stored form of a manifest: canonical JSON (map keys sorted) and
// its hash.
func NewObject(u *unstructured.Unstructured) (Object, error) {
	canon, err := json.Marshal(u.Object)
	if err != nil {
		return Object{}, err
	}
	gvk := u.GroupVersionKind()
	sum := sha256.Sum256(canon)
	return Object{
		Ref:      Ref{Group: gvk.Group, Version: gvk.Version, Kind: gvk.Kind, Namespace: u.GetNamespace(), Name: u.GetName()},
		Manifest: string(canon), Hash: hex.EncodeToString(sum[:]),
	}, nil
}

// Layer is the edits of one controller step of a context.
type Layer struct {
	ID         string          `bson:"_id"` // <ctx>/step/<n>
	Context    string          `bson:"ctx"`
	Step       int             `bson:"step"`
	Attempt    int32           `bson:"attempt"` // the activity attempt that recorded it
	Controller string          `bson:"controller"`
	Parent     string          `bson:"parent,omitempty"` // contract.Input.Parent
	Intent     string          `bson:"intent"`
	Type       string          `bson:"type"`
	Edits      []contract.Edit `bson:"-"`
	Raw        string          `bson:"edits"` // JSON of Edits: manifests and patches are JSON
	// Sealed is Raw as stored when an edit adds or patches a Secret, sealed (Raw is then
	// empty); the Store opens it as it reads.
	Sealed []byte `bson:"sealed,omitempty"`
}

// ErrStaleAttempt: a layer was recorded by a later attempt of the step's activity than the
// one writing (an external controller whose activity timed out and was retried elsewhere).
var ErrStaleAttempt = errors.New("a later attempt of this controller step already recorded its edits")

// PutLayer replaces the edits of one step: a retried controller's new attempt replaces
// what an earlier one recorded, never the reverse.
func (s *Store) PutLayer(ctx context.Context, l *Layer) error {
	raw, err := json.Marshal(l.Edits)
	if err != nil {
		return err
	}
	l.ID, l.Raw = fmt.Sprintf("%s/step/%d", l.Context, l.Step), string(raw)
	stored, err := s.sealLayer(l)
	if err != nil {
		return err
	}
	// A later attempt's layer does not match the filter, so the upsert's insert collides.
	filter := bson.D{{Key: "_id", Value: l.ID}, {Key: "attempt", Value: bson.D{{Key: "$lte", Value: l.Attempt}}}}
	err = s.exclusive(ctx, s.edits, l.ID, func(ctx context.Context) error {
		_, err := s.edits.ReplaceOne(ctx, filter, stored, options.Replace().SetUpsert(true))
		return err
	})
	if mongo.IsDuplicateKeyError(err) {
		return ErrStaleAttempt
	}
	return err
}

// Layers returns the edits of the steps before step (all when step < 0), in order.
func (s *Store) Layers(ctx context.Context, ctxID string, step int) ([]*Layer, error) {
	cur, err := s.edits.Find(ctx, bson.D{{Key: "ctx", Value: ctxID}})
	if err != nil {
		return nil, err
	}
	var all []*Layer
	if err := cur.All(ctx, &all); err != nil {
		return nil, err
	}
	all = slices.DeleteFunc(all, func(l *Layer) bool { return step >= 0 && l.Step >= step })
	slices.SortFunc(all, func(a, b *Layer) int { return a.Step - b.Step })
	for _, l := range all {
		if err := s.openLayer(ctxID, l); err != nil {
			return nil, err
		}
		if err := json.Unmarshal([]byte(l.Raw), &l.Edits); err != nil {
			return nil, fmt.Errorf("edits of step %d of context %s: %w", l.Step, ctxID, err)
		}
	}
	return all, nil
}

// groupsDoc is the placement of one app before placement controllers ran.
type groupsDoc struct {
	ID      string  `bson:"_id"` // <ctx>/<app>
	Context string  `bson:"ctx"`
	App     string  `bson:"app"`
	Groups  []group `bson:"groups"` // not [][]string: FerretDB stores no nested arrays
}

type group struct {
	Clusters []string `bson:"clusters"`
}

// PutGroups stores the placement groups of each app, for the controllers to work on.
func (s *Store) PutGroups(ctx context.Context, ctxID string, groups map[string][][]string) error {
	docs := make([]any, 0, len(groups))
	for _, app := range slices.Sorted(maps.Keys(groups)) {
		gs := make([]group, len(groups[app]))
		for i, g := range groups[app] {
			gs[i].Clusters = g
		}
		docs = append(docs, &groupsDoc{ID: ctxID + "/" + app, Context: ctxID, App: app, Groups: gs})
	}
	return s.replaceAll(ctx, s.groups, ctxID, docs)
}

// Groups returns the placement groups of each app (nil when placement was not deferred).
func (s *Store) Groups(ctx context.Context, ctxID string) (map[string][][]string, error) {
	cur, err := s.groups.Find(ctx, bson.D{{Key: "ctx", Value: ctxID}})
	if err != nil {
		return nil, err
	}
	var docs []*groupsDoc
	if err := cur.All(ctx, &docs); err != nil {
		return nil, err
	}
	if len(docs) == 0 {
		return nil, nil
	}
	out := make(map[string][][]string, len(docs))
	for _, d := range docs {
		gs := make([][]string, len(d.Groups))
		for i, g := range d.Groups {
			gs[i] = g.Clusters
		}
		out[d.App] = gs
	}
	return out, nil
}

// PutCommitted stores apps whose objects controllers edited, keeping what rendering
// produced in Base.
func (s *Store) PutCommitted(ctx context.Context, ctxID string, apps []*App) error {
	models := make([]mongo.WriteModel, 0, len(apps))
	for _, a := range apps {
		objs, err := s.sealObjects(site{ctx: ctxID, app: a.Name}, a.Objects)
		if err != nil {
			return err
		}
		base, err := s.sealObjects(site{ctx: ctxID, app: a.Name}, a.Base)
		if err != nil {
			return err
		}
		models = append(models, mongo.NewUpdateOneModel().SetFilter(bson.D{{Key: "_id", Value: ctxID + "/" + a.Name}}).
			SetUpdate(bson.D{{Key: "$set", Value: bson.D{{Key: "objects", Value: objs}, {Key: "base", Value: base}}}}))
	}
	if len(models) == 0 {
		return nil
	}
	return s.writeApps(ctx, ctxID, func(ctx context.Context) error { return bulkChunks(ctx, s.apps, models) })
}

// ForCluster returns apps as one cluster gets them: an app with cluster-specific objects
// there is replaced by a copy carrying them.
func ForCluster(apps map[string]*App, placed []*ClusterApp) map[string]*App {
	var out map[string]*App
	for _, p := range placed {
		if (p.Objects == nil && p.Variant == "") || apps[p.App] == nil {
			continue
		}
		if out == nil {
			out = make(map[string]*App, len(apps))
			for k, v := range apps {
				out[k] = v
			}
		}
		c := *apps[p.App]
		c.Objects = apps[p.App].ObjectsFor(p)
		out[p.App] = &c
	}
	if out == nil {
		return apps
	}
	return out
}
