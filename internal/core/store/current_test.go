package store

import (
	"context"
	"fmt"
	"path"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// A cluster's registration and a cloud's members are read once while they stay as they
// are, and every change is seen by the next read, this process's or another's.
func TestCurrentCopiesFollowEveryChange(t *testing.T) {
	ctx := context.Background()
	s, other, must := twoProcesses(t)
	must(s.Create(ctx, &Doc{ID: "/p", Kind: "provider", Name: "p", Body: `{}`}))
	c := &Doc{ID: "/p/clusters/c", Parent: "/p", Kind: "cluster", Name: "c", Body: `{}`, Secret: []byte("one")}
	must(s.Create(ctx, c))
	first, err := s.GetCurrent(ctx, c.ID, "/p")
	must(err)
	if again, err := s.GetCurrent(ctx, c.ID, "/p"); err != nil || again != first {
		t.Errorf("an unchanged registration was read again (%v)", err)
	}
	c.Secret = []byte("two")
	must(s.Update(ctx, c))
	if got, err := s.GetCurrent(ctx, c.ID, "/p"); err != nil || string(got.Secret) != "two" {
		t.Errorf("after this process's change: %q (%v)", got.Secret, err)
	}
	d, err := other.Get(ctx, c.ID)
	must(err)
	d.Secret = []byte("three")
	must(other.Update(ctx, d))
	if got, err := s.GetCurrent(ctx, c.ID, "/p"); err != nil || string(got.Secret) != "three" {
		t.Errorf("after another process's change: %q (%v)", got.Secret, err)
	}

	must(s.Create(ctx, &Doc{ID: "/cloud", Kind: "logicalCloud", Name: "cloud", Body: `{}`}))
	ref := func(name string) *Doc {
		return &Doc{ID: "/cloud/refs/" + name, Parent: "/cloud", Kind: "clusterReference", Name: name, Body: `{}`}
	}
	must(s.CreateMany(ctx, []*Doc{ref("a"), ref("b")}))
	q := Query{Parent: "/cloud", Kind: "clusterReference"}
	if got, err := s.ListCurrent(ctx, q); err != nil || len(got) != 2 {
		t.Fatalf("members %d (%v)", len(got), err)
	}
	must(s.Create(ctx, ref("c")))
	if got, err := s.ListCurrent(ctx, q); err != nil || len(got) != 3 {
		t.Errorf("members after one more: %d (%v)", len(got), err)
	}
	must(s.Delete(ctx, "/cloud/refs/a"))
	if got, err := s.ListCurrent(ctx, q); err != nil || len(got) != 2 || got[0].Name != "b" {
		t.Errorf("members after a deletion: %d (%v)", len(got), err)
	}
	if got, err := s.ListCurrent(ctx, Query{Parent: "/cloud", Kind: "clusterReference", Name: "b"}); err != nil || len(got) != 1 {
		t.Errorf("the member named b: %d (%v)", len(got), err)
	}
	if _, err := s.ListCurrent(ctx, Query{Parent: "/cloud", Kind: "clusterReference", Fields: map[string]string{"x": "y"}}); err == nil {
		t.Error("a listing by fields was kept")
	}
}

// A provider's cluster labels (placement by label) are kept under the provider's epoch:
// a label added or removed below any of its clusters, by any process, is seen next.
func TestCurrentLabelsFollowEveryChange(t *testing.T) {
	ctx := context.Background()
	s, other, must := twoProcesses(t)
	const scope = "/cluster-providers/p"
	must(s.Create(ctx, &Doc{ID: scope, Scope: scope, Kind: "clusterProvider", Name: "p", Body: `{}`}))
	for _, c := range []string{"c1", "c2"} {
		must(s.Create(ctx, &Doc{ID: scope + "/clusters/" + c, Parent: scope, Scope: scope, Kind: "cluster", Name: c, Body: `{}`}))
	}
	label := func(cluster, name string) *Doc {
		parent := scope + "/clusters/" + cluster
		return &Doc{ID: parent + "/labels/" + name, Parent: parent, Scope: scope, Kind: "clusterLabel", Name: name, Body: `{}`}
	}
	must(s.Create(ctx, label("c1", "edge")))
	q := Query{Scope: scope, Kind: "clusterLabel", Name: "edge"}
	count := func(want int, when string) {
		t.Helper()
		if got, err := s.ListCurrent(ctx, q); err != nil || len(got) != want {
			t.Errorf("%s: %d labelled (%v), want %d", when, len(got), err, want)
		}
	}
	count(1, "first")
	count(1, "again")
	must(other.Create(ctx, label("c2", "edge")))
	count(2, "after another process labelled a cluster")
	must(other.Delete(ctx, label("c1", "edge").ID))
	count(1, "after another process removed a label")
	if _, err := s.ListCurrent(ctx, Query{Parent: scope + "/clusters/c1", Kind: "clusterLabel"}); err == nil {
		t.Error("labels listed below a cluster were kept, though their epoch is the provider's")
	}
}

// twoProcesses is a store and another process's on the same database, and a check that
// fails the test on an error.
func twoProcesses(t *testing.T) (s, other *Store, must func(error)) {
	s = newStore(t)
	other, err := New(context.Background(), s.Database())
	if err != nil {
		t.Fatal(err)
	}
	return s, other, func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
}

// A group's registrations missing from the copies kept are read in one find when there
// are many (Prefetch), secrets included, and kept under the provider's epoch like
// GetCurrent's; a few are left to GetCurrent; a change made since is seen all the same.
func TestPrefetchKeepsAProvidersRegistrations(t *testing.T) {
	ctx := context.Background()
	s, other, must := twoProcesses(t)
	const parent = "/cluster-providers/p"
	must(s.Create(ctx, &Doc{ID: parent, Scope: parent, Kind: "clusterProvider", Name: "p", Body: `{}`}))
	var docs []*Doc
	var ids []string
	for i := range PrefetchMin + 5 {
		id := fmt.Sprintf("%s/clusters/c%03d", parent, i)
		docs = append(docs, &Doc{ID: id, Parent: parent, Scope: parent, Kind: "cluster", Name: path.Base(id), Body: `{}`, Secret: []byte("kubeconfig " + id)})
		ids = append(ids, id)
	}
	must(s.CreateMany(ctx, docs))
	// Behind every store's back (no epoch renewed): only a copy kept shows the old secret.
	behind := func(id string) {
		t.Helper()
		if _, err := s.coll.UpdateOne(ctx, bson.D{{Key: "_id", Value: id}}, bson.D{{Key: "$set", Value: bson.D{{Key: "secret", Value: []byte("changed")}}}}); err != nil {
			t.Fatal(err)
		}
	}
	must(s.Prefetch(ctx, parent, "cluster", ids[:PrefetchMin-1]))
	behind(ids[0])
	if got, err := s.GetCurrent(ctx, ids[0], parent); err != nil || string(got.Secret) != "changed" {
		t.Fatalf("after a prefetch of %d, fewer than PrefetchMin: %q (%v); want a read of its own", PrefetchMin-1, got.Secret, err)
	}
	must(s.Prefetch(ctx, parent, "cluster", ids))
	behind(ids[1])
	behind(ids[len(ids)-1])
	for _, id := range ids[1:] {
		if got, err := s.GetCurrent(ctx, id, parent); err != nil || string(got.Secret) != "kubeconfig "+id {
			t.Fatalf("%s after the prefetch: %q (%v); want the copy it kept", id, got.Secret, err)
		}
	}
	d, err := other.Get(ctx, ids[2])
	must(err)
	d.Secret = []byte("rotated")
	must(other.Update(ctx, d))
	if got, err := s.GetCurrent(ctx, ids[2], parent); err != nil || string(got.Secret) != "rotated" {
		t.Errorf("after another process's change: %q (%v)", got.Secret, err)
	}
}

// A provider with more registrations than are kept is not prefetched: they would push out
// everything else; its clusters are read one by one.
func TestPrefetchLeavesAProviderTooLargeToKeep(t *testing.T) {
	defer func(m int) { maxCurrent = m }(maxCurrent)
	maxCurrent = 2 * (PrefetchMin - 1)
	ctx := context.Background()
	s, _, must := twoProcesses(t)
	const parent = "/cluster-providers/big"
	must(s.Create(ctx, &Doc{ID: parent, Scope: parent, Kind: "clusterProvider", Name: "big", Body: `{}`}))
	var docs []*Doc
	var ids []string
	for i := range PrefetchMin {
		id := fmt.Sprintf("%s/clusters/c%03d", parent, i)
		docs = append(docs, &Doc{ID: id, Parent: parent, Scope: parent, Kind: "cluster", Name: path.Base(id), Body: `{}`, Secret: []byte("one")})
		ids = append(ids, id)
	}
	must(s.CreateMany(ctx, docs))
	must(s.Prefetch(ctx, parent, "cluster", ids))
	if _, err := s.coll.UpdateOne(ctx, bson.D{{Key: "_id", Value: ids[0]}}, bson.D{{Key: "$set", Value: bson.D{{Key: "secret", Value: []byte("two")}}}}); err != nil {
		t.Fatal(err)
	}
	if got, err := s.GetCurrent(ctx, ids[0], parent); err != nil || string(got.Secret) != "two" {
		t.Fatalf("after a prefetch of a provider too large to keep: %q (%v); want a read of its own", got.Secret, err)
	}
}
