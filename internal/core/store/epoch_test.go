package store

import (
	"context"
	"testing"
)

// A cluster's creation and every change of it give its provider a new epoch (a worker's
// copies of the provider's registrations are then stale); other kinds leave it.
func TestWritesOfClustersRenewTheirProvidersEpoch(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	epoch := func() string {
		t.Helper()
		e, err := s.Epoch(ctx, "/p")
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	if e := epoch(); e != "" {
		t.Fatalf("epoch %q before any write", e)
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(s.Create(ctx, &Doc{ID: "/p", Kind: "provider", Name: "p", Body: `{}`}))
	if e := epoch(); e != "" {
		t.Errorf("a provider's creation set its epoch %q", e)
	}
	c := &Doc{ID: "/p/clusters/c", Parent: "/p", Kind: "cluster", Name: "c", Body: `{}`}
	must(s.Create(ctx, c))
	created := epoch()
	if created == "" {
		t.Fatal("a cluster's creation left its provider's epoch")
	}
	c.Secret = []byte("another kubeconfig")
	must(s.Update(ctx, c))
	updated := epoch()
	if updated == created {
		t.Error("a cluster's update left its provider's epoch")
	}
	must(s.CreateMany(ctx, []*Doc{{ID: "/p/clusters/d", Parent: "/p", Kind: "cluster", Name: "d", Body: `{}`},
		{ID: "/p/clusters/e", Parent: "/p", Kind: "cluster", Name: "e", Body: `{}`}}))
	if e := epoch(); e == updated {
		t.Error("an import of clusters left their provider's epoch")
	}
	imported := epoch()
	must(s.Create(ctx, &Doc{ID: "/p/clusters/c/labels/l", Parent: "/p/clusters/c", Kind: "label", Name: "l", Body: `{}`}))
	if e := epoch(); e != imported {
		t.Error("a label's creation renewed the provider's epoch")
	}
}
