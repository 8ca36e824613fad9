package appctx

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/temco/temco/contract"
	"github.com/temco/temco/internal/core/lifecycle"
	"github.com/temco/temco/internal/core/seal"
)

// marker is a Secret's value: it must be found in no stored document, in clear or in base64.
const marker = "hunter2-4f9c1e-never-at-rest"

func testKeys(t testing.TB, ids ...string) *seal.Keyring {
	t.Helper()
	keys := make([][]byte, len(ids))
	for i, id := range ids {
		sum := sha256.Sum256([]byte(id))
		keys[i] = sum[:]
	}
	k, err := seal.NewKeyring(ids, keys)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func object(t testing.TB, m map[string]any) Object {
	t.Helper()
	o, err := NewObject(&unstructured.Unstructured{Object: m})
	if err != nil {
		t.Fatal(err)
	}
	return o
}

// secret is a Secret holding value in data (base64) and stringData.
func secret(t testing.TB, name, value string) Object {
	return object(t, map[string]any{"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
		"metadata":   map[string]any{"name": name, "namespace": "ns"},
		"data":       map[string]any{"password": base64.StdEncoding.EncodeToString([]byte(value))},
		"stringData": map[string]any{"token": value}})
}

func configMap(t testing.TB, name string) Object {
	return object(t, map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": name, "namespace": "ns"}, "data": map[string]any{"k": "v"}})
}

func pending(objs []Object) []ResourceStatus {
	out := make([]ResourceStatus, len(objs))
	for i, o := range objs {
		out[i] = ResourceStatus{Ref: o.Ref, Status: lifecycle.ResPending}
	}
	return out
}

// wantNoMarker reads every document of every collection of db as stored and fails where
// the marker shows, in clear or in base64.
func wantNoMarker(t *testing.T, db *mongo.Database) {
	t.Helper()
	ctx := context.Background()
	names, err := db.ListCollectionNames(ctx, bson.D{})
	if err != nil {
		t.Fatal(err)
	}
	forms := [][]byte{[]byte(marker), []byte(base64.StdEncoding.EncodeToString([]byte(marker)))}
	docs := 0
	for _, name := range names {
		cur, err := db.Collection(name).Find(ctx, bson.D{})
		if err != nil {
			t.Fatal(err)
		}
		for cur.Next(ctx) {
			docs++
			for _, f := range forms {
				if bytes.Contains(cur.Current, f) {
					t.Errorf("%s: document %v holds %q", name, cur.Current.Lookup("_id"), f)
				}
			}
		}
		if err := cur.Err(); err != nil {
			t.Fatal(err)
		}
	}
	if docs == 0 {
		t.Fatal("no document stored")
	}
}

func wantObjects(t *testing.T, what string, got, want []Object) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d objects, want %d", what, len(got), len(want))
	}
	for i := range want {
		if got[i].Ref != want[i].Ref || got[i].Manifest != want[i].Manifest || got[i].Hash != want[i].Hash || got[i].Sealed != nil {
			t.Errorf("%s: object %d is %+v, want %+v", what, i, got[i], want[i])
		}
	}
}

// fill stores context ctx1 as an operation leaves it: app a rendered with a Secret, a
// variant of it for other capabilities, the controllers' commit (Base kept), a cluster of
// its own objects, a cluster on the variant, statuses saved, and two controller layers —
// one adding a Secret and patching another, as gac does from customization files.
type filled struct {
	rendered, variant, committed, own []Object
	layers                            []*Layer
}

func fill(t *testing.T, s *Store) filled {
	t.Helper()
	ctx := context.Background()
	f := filled{
		rendered: []Object{configMap(t, "cm"), secret(t, "db", marker)},
		variant:  []Object{configMap(t, "cm-v"), secret(t, "db", marker)},
	}
	f.committed = slices.Concat(f.rendered, []Object{secret(t, "added", marker)})
	f.own = slices.Concat(f.committed, []Object{secret(t, "own", marker)})
	if err := s.Create(ctx, &Context{ID: "ctx1", Apps: []string{"a"}}); err != nil {
		t.Fatal(err)
	}
	if err := s.PutApps(ctx, "ctx1", []*App{{Name: "a", Objects: f.rendered}}); err != nil {
		t.Fatal(err)
	}
	if err := s.SetVariants(ctx, "ctx1", "a", map[string][]Object{"k130": f.variant}); err != nil {
		t.Fatal(err)
	}
	if err := s.PutCommitted(ctx, "ctx1", []*App{{Name: "a", Objects: f.committed, Base: f.rendered}}); err != nil {
		t.Fatal(err)
	}
	placed := []*ClusterApp{
		{App: "a", Cluster: "p+c0", Objects: f.own, Resources: pending(f.own)},
		{App: "a", Cluster: "p+c1", Variant: "k130", Resources: pending(f.variant)},
	}
	if err := s.PutPlacement(ctx, "ctx1", placed, map[string]int{"p+c0": 0, "p+c1": 0}); err != nil {
		t.Fatal(err)
	}
	cas, err := s.ClusterApps(ctx, "ctx1", "p+c0")
	if err != nil {
		t.Fatal(err)
	}
	cas[0].Resources[0].Status = lifecycle.ResApplied
	if err := s.SaveStatuses(ctx, "ctx1", Attempt{Activity: "run/apply p+c0", Number: 1}, cas); err != nil {
		t.Fatal(err)
	}
	added, _ := json.Marshal(map[string]any{"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
		"metadata": map[string]any{"name": "from-file"}, "data": map[string]any{"f.txt": base64.StdEncoding.EncodeToString([]byte(marker))}})
	patch, _ := json.Marshal(map[string]any{"stringData": map[string]any{"token": marker}})
	f.layers = []*Layer{
		{Context: "ctx1", Step: 0, Attempt: 1, Controller: "gac", Edits: []contract.Edit{
			{Op: contract.EditAddResource, App: "a", Data: added},
			{Op: contract.EditPatch, App: "a", Kind: "secret", Name: "db", Type: "merge", Data: patch}}},
		{Context: "ctx1", Step: 1, Attempt: 1, Controller: "hpa", Edits: []contract.Edit{
			{Op: contract.EditPatch, App: "a", Kind: "Deployment", Name: "w", Type: "merge", Data: json.RawMessage(`{"spec":{"replicas":2}}`)}}},
	}
	for _, l := range f.layers {
		if err := s.PutLayer(ctx, l); err != nil {
			t.Fatal(err)
		}
	}
	return f
}

// wantIntact reads context id back through the Store: every object and edit as written.
func wantIntact(t *testing.T, s *Store, id string, f filled) {
	t.Helper()
	ctx := context.Background()
	h, err := s.Get(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	apps, err := s.Apps(ctx, h)
	if err != nil {
		t.Fatal(err)
	}
	wantObjects(t, "objects", apps["a"].Objects, f.committed)
	wantObjects(t, "base", apps["a"].Base, f.rendered)
	wantObjects(t, "variant", apps["a"].Variants["k130"], f.variant)
	own, err := s.ClusterApps(ctx, id, "p+c0")
	if err != nil {
		t.Fatal(err)
	}
	wantObjects(t, "the cluster's own objects", own[0].Objects, f.own)
	if own[0].Resources[0].Status != lifecycle.ResApplied {
		t.Errorf("statuses of p+c0: %+v", own[0].Resources)
	}
	placed, err := s.Placements(ctx, id, Filter{})
	if err != nil || len(placed) != 2 {
		t.Fatalf("placements: %+v, %v", placed, err)
	}
	wantObjects(t, "placements", placed[0].Objects, f.own)
	wantObjects(t, "as p+c1 gets them", ForCluster(apps, placed[1:])["a"].Objects, f.variant)
}

func TestSecretsOfAContextAreSealedAtRestAndReadIntact(t *testing.T) {
	db := newDatabaseOn(t, backends[0])
	s, err := New(context.Background(), db, WithKeys(testKeys(t, "k1")))
	if err != nil {
		t.Fatal(err)
	}
	f := fill(t, s)
	wantNoMarker(t, db)
	wantIntact(t, s, "ctx1", f)

	layers, err := s.Layers(context.Background(), "ctx1", -1)
	if err != nil || len(layers) != 2 {
		t.Fatalf("layers: %+v, %v", layers, err)
	}
	for i, l := range layers {
		got, _ := json.Marshal(l.Edits)
		want, _ := json.Marshal(f.layers[i].Edits)
		if !bytes.Equal(got, want) || l.Sealed != nil {
			t.Errorf("layer %d read as %s, want %s", i, got, want)
		}
	}
	// A layer touching no Secret stays readable as it was.
	var raw bson.M
	if err := s.edits.FindOne(context.Background(), bson.D{{Key: "_id", Value: "ctx1/step/1"}}).Decode(&raw); err != nil || raw["edits"] == "" {
		t.Errorf("a layer without Secrets is stored %v (%v)", raw, err)
	}

	// A rollback's copy is sealed for its own context, and reads.
	if err := s.Create(context.Background(), &Context{ID: "ctx2"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Copy(context.Background(), "ctx1", "ctx2", nil); err != nil {
		t.Fatal(err)
	}
	wantNoMarker(t, db)
	h2, _ := s.Get(context.Background(), "ctx2")
	apps, err := s.Apps(context.Background(), h2)
	if err != nil {
		t.Fatal(err)
	}
	wantObjects(t, "copy", apps["a"].Objects, f.committed)
	own, err := s.ClusterApps(context.Background(), "ctx2", "p+c0")
	if err != nil {
		t.Fatal(err)
	}
	wantObjects(t, "copy's own objects", own[0].Objects, f.own)
}

// A sealed value is bound to where it is stored: a document copied whole to another
// context, or to another cluster's, does not open there.
func TestASealedSecretMovedElsewhereDoesNotOpen(t *testing.T) {
	ctx := context.Background()
	s := newStoreOn(t, backends[0], WithKeys(testKeys(t, "k1")))
	fill(t, s)
	copyDoc := func(c *mongo.Collection, from, to string, set ...bson.E) {
		t.Helper()
		var doc bson.D
		if err := c.FindOne(ctx, bson.D{{Key: "_id", Value: from}}).Decode(&doc); err != nil {
			t.Fatal(err)
		}
		for i := range doc {
			for _, e := range append(set, bson.E{Key: "_id", Value: to}) {
				if doc[i].Key == e.Key {
					doc[i].Value = e.Value
				}
			}
		}
		if _, err := c.InsertOne(ctx, doc); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		name string
		move func()
		read func() error
	}{
		{"an app, its ctx field kept", func() { copyDoc(s.apps, "ctx1/a", "other/a") },
			func() error { _, err := s.Apps(ctx, &Context{ID: "other", Apps: []string{"a"}}); return err }},
		{"a cluster's entry in its group, as another cluster's", func() { copyEntry(t, s, "ctx1", "p+c0", "p+c9") },
			func() error { _, err := s.ClusterApps(ctx, "ctx1", "p+c9"); return err }},
		{"a layer", func() { copyDoc(s.edits, "ctx1/step/0", "other/step/0", bson.E{Key: "ctx", Value: "other"}) },
			func() error { _, err := s.Layers(ctx, "other", -1); return err }},
		{"a layer to another step", func() { copyDoc(s.edits, "ctx1/step/0", "ctx1/step/7", bson.E{Key: "step", Value: 7}) },
			func() error { _, err := s.Layers(ctx, "ctx1", -1); return err }},
	} {
		c.move()
		if err := c.read(); err == nil || !strings.Contains(err.Error(), "authentication failed") {
			t.Errorf("%s moved elsewhere: read with %v", c.name, err)
		}
	}
}

// Contexts stored before sealing (or by a store without keys) read as they are; a store
// without keys cannot read a sealed one, and says why.
func TestContextsStoredInClearStillRead(t *testing.T) {
	ctx := context.Background()
	db := newDatabaseOn(t, backends[0])
	clear, err := New(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	f := fill(t, clear)
	var raw bson.Raw
	if raw, err = clear.apps.FindOne(ctx, bson.D{{Key: "_id", Value: "ctx1/a"}}).Raw(); err != nil || !bytes.Contains(raw, []byte(marker)) {
		t.Fatalf("without keys the Secret is not stored in clear (%v): the test proves nothing", err)
	}
	sealed, err := New(ctx, db, WithKeys(testKeys(t, "k1")))
	if err != nil {
		t.Fatal(err)
	}
	wantIntact(t, sealed, "ctx1", f)
	if _, err := sealed.Layers(ctx, "ctx1", -1); err != nil {
		t.Fatal(err)
	}

	// The sealed store's next save of p+c0 seals its objects; the keyless store cannot read them.
	cas, err := sealed.ClusterApps(ctx, "ctx1", "p+c0")
	if err != nil {
		t.Fatal(err)
	}
	if err := sealed.SaveClusters(ctx, "ctx1", cas); err != nil {
		t.Fatal(err)
	}
	if _, err := clear.ClusterApps(ctx, "ctx1", "p+c0"); err == nil || !strings.Contains(err.Error(), "no key is configured") {
		t.Errorf("a store without keys read a sealed object: %v", err)
	}
}

// Keys rotate as the api's resources do: a new primary seals, the old key still opens
// what it sealed; a key dropped from the ring leaves its contexts unreadable, by name.
func TestSealedSecretsOpenAfterKeyRotation(t *testing.T) {
	ctx := context.Background()
	db := newDatabaseOn(t, backends[0])
	old, err := New(ctx, db, WithKeys(testKeys(t, "k1")))
	if err != nil {
		t.Fatal(err)
	}
	f := fill(t, old)
	rotated, err := New(ctx, db, WithKeys(testKeys(t, "k2", "k1")))
	if err != nil {
		t.Fatal(err)
	}
	wantIntact(t, rotated, "ctx1", f)
	cas, err := rotated.ClusterApps(ctx, "ctx1", "p+c0")
	if err != nil {
		t.Fatal(err)
	}
	if err := rotated.SaveClusters(ctx, "ctx1", cas); err != nil { // a cluster document resealed at its next save
		t.Fatal(err)
	}
	d, err := rotated.clusterDocRaw(ctx, "ctx1", "p+c0")
	if err != nil {
		t.Fatal(err)
	}
	if id := keyOf(d.Apps[0].Objects[1].Sealed); id != "k2" {
		t.Errorf("resealed with key %q, want the primary k2", id)
	}
	dropped, err := New(ctx, db, WithKeys(testKeys(t, "k2")))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := dropped.ClusterApps(ctx, "ctx1", "p+c0"); err != nil {
		t.Errorf("a document resealed with k2 does not open with k2 alone: %v", err)
	}
	h, _ := dropped.Get(ctx, "ctx1")
	if _, err := dropped.Apps(ctx, h); err == nil || !strings.Contains(err.Error(), `unknown key "k1"`) {
		t.Errorf("an app sealed with a dropped key: %v", err)
	}
}

// clusterDocRaw reads a cluster document as stored, its objects still sealed.
func (s *Store) clusterDocRaw(ctx context.Context, ctxID, cluster string) (*clusterDoc, error) {
	var d clusterDoc
	group, err := s.groupOf(ctx, ctxID, cluster)
	if err != nil || group == "" {
		return &d, s.clusters.FindOne(ctx, bson.D{{Key: "_id", Value: clusterID(ctxID, cluster)}}).Decode(&d)
	}
	g, err := s.fetchGroupDoc(ctx, group)
	if err != nil || g == nil {
		return nil, err
	}
	for _, e := range g.Clusters {
		if clusterOf(e) == cluster {
			return &d, bson.Unmarshal(e, &d)
		}
	}
	return nil, fmt.Errorf("no %s in %s", cluster, group)
}

// copyEntry adds to the group of cluster from an entry copied from its, as cluster to's
// (as someone with write access to the database might), and lists it in the batch.
func copyEntry(t *testing.T, s *Store, ctxID, from, to string) {
	t.Helper()
	ctx := context.Background()
	group, err := s.groupOf(ctx, ctxID, from)
	if err != nil || group == "" {
		t.Fatalf("group of %s: %q %v", from, group, err)
	}
	g, err := s.fetchGroupDoc(ctx, group)
	if err != nil || g == nil {
		t.Fatal(group, err)
	}
	var d bson.D
	for _, e := range g.Clusters {
		if clusterOf(e) == from {
			if err := bson.Unmarshal(e, &d); err != nil {
				t.Fatal(err)
			}
		}
	}
	for i := range d {
		if d[i].Key == "cluster" {
			d[i].Value = to
		}
	}
	raw, err := bson.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.placed.UpdateOne(ctx, bson.D{{Key: "_id", Value: group}}, bson.D{{Key: "$set", Value: bson.D{{Key: "packed", Value: pack(append(g.Clusters, raw))}}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.batches.UpdateOne(ctx, bson.D{{Key: "_id", Value: group}}, bson.D{{Key: "$push", Value: bson.D{{Key: "clusters", Value: to}}}}); err != nil {
		t.Fatal(err)
	}
}

// keyOf names the key of a sealed value (seal's format: version, id length, id, ...).
func keyOf(sealed []byte) string {
	if len(sealed) < 2 || len(sealed) < 2+int(sealed[1]) {
		return ""
	}
	return string(sealed[2 : 2+int(sealed[1])])
}

// BenchmarkSecretsAtRest times storing and reading back one app of 30 objects, 3 of them
// Secrets: in clear (as before sealing) and sealed; on each backend, and the sealing alone.
func BenchmarkSecretsAtRest(b *testing.B) {
	var objs []Object
	filler := strings.Repeat("x", 1024) // about the size of a chart's Deployment
	for i := range 30 {
		if i%10 == 9 {
			objs = append(objs, secret(b, fmt.Sprint("s", i), fmt.Sprint(marker, i, filler[:256])))
			continue
		}
		objs = append(objs, object(b, map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"name": fmt.Sprint("cm", i), "namespace": "ns"}, "data": map[string]any{"k": filler}}))
	}
	ctx := context.Background()
	for _, be := range backends {
		for _, mode := range []struct {
			name string
			opts []Option
		}{{"clear", nil}, {"sealed", []Option{WithKeys(testKeys(b, "k1"))}}} {
			s := newStoreOn(b, be, mode.opts...)
			n := 0 // across -count's runs too: each of which reuses s
			b.Run(be.Name+"/"+mode.name, func(b *testing.B) {
				for b.Loop() { // a context of its own each time, as each revision has
					n++
					h := &Context{ID: fmt.Sprint("ctx", n), Apps: []string{"a"}}
					if err := s.PutApps(ctx, h.ID, []*App{{Name: "a", Objects: objs}}); err != nil {
						b.Fatal(err)
					}
					if _, err := s.Apps(ctx, h); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
	s := &Store{keys: testKeys(b, "k1")}
	b.Run("seal+open", func(b *testing.B) {
		for b.Loop() {
			a, err := s.sealApp("ctx1", &App{Name: "a", Context: "ctx1", Objects: objs})
			if err != nil {
				b.Fatal(err)
			}
			if err := s.openApp("ctx1", "a", a); err != nil {
				b.Fatal(err)
			}
		}
	})
}
