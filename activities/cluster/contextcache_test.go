package cluster

import (
	"context"
	"sync"
	"testing"

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
			_, apps, err := a.context(ctx, "c1")
			if err != nil {
				t.Error(err)
			}
			got[i] = apps
		})
	}
	wg.Wait()
	_, later, err := a.context(ctx, "c1")
	if err != nil {
		t.Fatal(err)
	}
	for i, apps := range append(got, later) {
		if apps["a"] == nil || apps["a"] != got[0]["a"] {
			t.Fatalf("caller %d got apps %p, caller 0 %p: loaded more than once", i, apps["a"], got[0]["a"])
		}
	}
}
