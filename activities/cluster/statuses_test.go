package cluster

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/temco/temco/internal/core/appctx"
	"github.com/temco/temco/internal/core/lifecycle"
	"github.com/temco/temco/internal/dev/testenv"
)

// A cluster's statuses are written while its objects are still being applied, each
// write from a copy taken while the other goroutines go on; whatever the interleaving,
// what is stored in the end is every object's final status. (Run with -race too.)
func TestStatusesWrittenDuringTheApplyEndComplete(t *testing.T) {
	ctx := context.Background()
	s, err := appctx.New(ctx, testenv.Database(t, ferret, "clustersaves"))
	if err != nil {
		t.Fatal(err)
	}
	const n = 48
	p := &appctx.ClusterApp{App: "a", Cluster: "p+c1", Resources: make([]appctx.ResourceStatus, n)}
	for i := range p.Resources {
		p.Resources[i] = appctx.ResourceStatus{Ref: appctx.Ref{Version: "v1", Kind: "ConfigMap", Name: fmt.Sprint("cm", i)},
			Status: lifecycle.ResPending}
	}
	header := &appctx.Context{ID: "c1", Apps: []string{"a"}}
	if err := s.Create(ctx, header); err != nil {
		t.Fatal(err)
	}
	if err := s.PutPlacement(ctx, "c1", []*appctx.ClusterApp{p}, map[string]int{"p+c1": 0}); err != nil {
		t.Fatal(err)
	}
	r := &run{ctx: ctx, contexts: s, header: header, byApp: map[string]*appctx.ClusterApp{"a": p}}
	idx := make([]int, n-1)
	for i := range idx {
		idx[i] = i
	}
	err = forEach(idx, func(i int) error {
		r.settle(&p.Resources[i], lifecycle.ResApplied, "")
		if i%3 == 0 { // make a write due now and then, while others settle
			r.mu.Lock()
			r.saved = time.Time{}
			r.mu.Unlock()
		}
		return r.progress(ctx)
	})
	if err != nil {
		t.Fatal(err)
	}
	// The last object settles when no write is due: only the final flush stores it.
	r.mu.Lock()
	r.saved = time.Now()
	r.mu.Unlock()
	r.settle(&p.Resources[n-1], lifecycle.ResApplied, "")
	if err := r.progress(ctx); err != nil {
		t.Fatal(err)
	}
	if err := r.flush(ctx); err != nil {
		t.Fatal(err)
	}
	stored, err := s.ClusterApps(ctx, "c1", "p+c1")
	if err != nil {
		t.Fatal(err)
	}
	if len(stored) != 1 || len(stored[0].Resources) != n {
		t.Fatalf("stored %d apps, want 1 with %d resources", len(stored), n)
	}
	for _, res := range stored[0].Resources {
		if res.Status != lifecycle.ResApplied {
			t.Errorf("%s stored %s, want %s", res.Name, res.Status, lifecycle.ResApplied)
		}
	}
	if r.result.Done != n {
		t.Errorf("result counts %d done, want %d", r.result.Done, n)
	}
}
