package cluster

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/temco/temco/internal/core/appctx"
	"github.com/temco/temco/internal/dev/devstack"
	"github.com/temco/temco/internal/dev/testenv"
)

var ferret *devstack.FerretDB

func TestMain(m *testing.M) { testenv.MainWithFerretDB(m, &ferret) }

// The first activities of a context arrive together; they must share one load of its
// apps, and the ones after them the cached copy.
func TestActivitiesOfAContextShareOneLoad(t *testing.T) {
	ctx := context.Background()
	s, err := appctx.New(ctx, testenv.Database(t, ferret, "clusteractivities"))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Create(ctx, &appctx.Context{ID: "c1", Apps: []string{"a"}}); err != nil {
		t.Fatal(err)
	}
	if err := s.PutApps(ctx, "c1", []*appctx.App{{Name: "a", Objects: []appctx.Object{{Manifest: "{}"}}}}); err != nil {
		t.Fatal(err)
	}
	a := &Activities{Contexts: s}
	got := make([]map[string]*appctx.App, 50)
	var wg sync.WaitGroup
	for i := range got {
		wg.Go(func() {
			_, apps, err := a.context(ctx, "c1", true)
			if err != nil {
				t.Error(err)
			}
			got[i] = apps
		})
	}
	wg.Wait()
	_, later, err := a.context(ctx, "c1", true)
	if err != nil {
		t.Fatal(err)
	}
	for i, apps := range append(got, later) {
		if apps["a"] == nil || apps["a"] != got[0]["a"] {
			t.Fatalf("caller %d got apps %p, caller 0 %p: loaded more than once", i, apps["a"], got[0]["a"])
		}
	}
}

// The cache keeps the contexts most recently used, within its bounds of contexts and bytes.
func TestContextCacheKeepsTheMostRecentlyUsed(t *testing.T) {
	entry := func(id string, size int) *contextCacheEntry {
		return &contextCacheEntry{header: &appctx.Context{ID: id}, size: size}
	}
	a := &Activities{}
	for i := range maxCachedContexts + 10 {
		a.cache = append([]*contextCacheEntry{entry(fmt.Sprint(i), 0)}, a.cache...)
		a.evict()
	}
	if len(a.cache) != maxCachedContexts || a.cache[0].header.ID != fmt.Sprint(maxCachedContexts+9) {
		t.Fatalf("%d contexts cached, newest %s", len(a.cache), a.cache[0].header.ID)
	}
	oldest := a.cache[len(a.cache)-1].header.ID
	if h, _ := a.cached(oldest); h == nil || a.cache[0].header.ID != oldest {
		t.Fatalf("a hit did not make %s the most recent", oldest)
	}
	a.cache = []*contextCacheEntry{entry("big", maxCachedBytes+1), entry("a", 1), entry("b", 1)}
	a.evict()
	if len(a.cache) != 1 || a.cache[0].header.ID != "big" {
		t.Errorf("after a context larger than the bound: %d cached", len(a.cache))
	}
	a.cache = []*contextCacheEntry{entry("a", maxCachedBytes/2), entry("b", maxCachedBytes/2), entry("c", 1)}
	a.evict()
	if len(a.cache) != 2 {
		t.Errorf("%d cached, want the 2 within %d bytes", len(a.cache), maxCachedBytes)
	}
}

// A live read (or a drift check) that comes while a context is still being prepared —
// placed, its apps not rendered yet — keeps nothing of it: the apply that follows must see
// the prepared context. A kept copy of the header without its apps once made an
// instantiate end Instantiated with nothing applied (TestLiveReadsDuringOperationsLoseNoStatus).
func TestAReadDuringPreparationKeepsNothing(t *testing.T) {
	ctx := context.Background()
	s, err := appctx.New(ctx, testenv.Database(t, ferret, "clusteractivities"))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Create(ctx, &appctx.Context{ID: "c2"}); err != nil { // as its begin made it
		t.Fatal(err)
	}
	a := &Activities{Contexts: s}
	if h, err := a.header(ctx, "c2", false); err != nil || len(h.Apps) != 0 {
		t.Fatalf("header %+v, %v", h, err)
	}
	if _, apps, err := a.context(ctx, "c2", false); err != nil || len(apps) != 0 {
		t.Fatalf("apps %v, %v", apps, err)
	}
	// Rendered: the apps, then the header's list of them.
	if err := s.PutApps(ctx, "c2", []*appctx.App{{Name: "a", Objects: []appctx.Object{{Manifest: "{}"}}}}); err != nil {
		t.Fatal(err)
	}
	if err := s.Set(ctx, "c2", bson.D{{Key: "apps", Value: []string{"a"}}}); err != nil {
		t.Fatal(err)
	}
	h, apps, err := a.context(ctx, "c2", true)
	if err != nil {
		t.Fatal(err)
	}
	if len(h.Apps) != 1 || apps["a"] == nil {
		t.Fatalf("the apply sees apps %v and %d rendered: what the read found before was kept", h.Apps, len(apps))
	}
	// What the apply kept serves the readers after it.
	if _, later, err := a.context(ctx, "c2", false); err != nil || later["a"] != apps["a"] {
		t.Errorf("a read after the apply loaded its own copy (%v)", err)
	}
}
