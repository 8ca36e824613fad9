package api

import (
	"context"
	"fmt"
	"net/http/httptest"
	"os"
	"testing"
	"time"

	"github.com/temco/temco/internal/appctx"
	"github.com/temco/temco/internal/lifecycle"
	"github.com/temco/temco/internal/testenv"
)

// The dashboard's first screen of a DIG on 10,000 clusters (3 apps, 3 objects each, in
// batches of 50, one cluster in a hundred Retrying), answered from the stored context on
// FerretDB on PostgreSQL, its batches counted as batch workflows leave
// them: the unfiltered first page, a later page, and the state filter, which reads every
// cluster's document. `make bench` records them.
func BenchmarkDashboard(b *testing.B) {
	const clusters, perBatch = 10000, 50
	// PostgreSQL, as every scale measurement here: FerretDB's SQLite backend (temco dev's
	// default) answers each lookup by _id with a scan of the collection, which at 10,000
	// clusters takes tens of milliseconds per cluster document.
	dir, err := os.MkdirTemp("", "temco-dashboard-bench-")
	if err != nil {
		b.Fatal(err)
	}
	defer os.RemoveAll(dir)
	if err := os.Chmod(dir, 0o755); err != nil { // PostgreSQL runs as its own user
		b.Fatal(err)
	}
	pg, err := testenv.StartBackend(dir, "postgresql")
	if err != nil {
		b.Fatal(err)
	}
	defer pg.Stop()
	saved := ferret
	ferret = pg.Ferret
	defer func() { ferret = saved }()
	reads := &liveReads{}
	c := newClient(b, func(s *Server) { reads.contexts = s.Contexts; s.Ops = reads })
	tree(b, c)
	apps := map[string][]appctx.Object{}
	refs := res3("", "", "")
	for _, a := range []string{"app1", "app2", "app3"} {
		for _, r := range refs {
			apps[a] = append(apps[a], appctx.Object{Ref: r.Ref, Manifest: manifest("v1", r.Kind, r.Name, nil)})
		}
	}
	var placed []*appctx.ClusterApp
	batchOf := map[string]int{}
	now := time.Now().UTC()
	for i := range clusters {
		key := lifecycle.ClusterKey("cp1", fmt.Sprintf("c%05d", i))
		batchOf[key] = i / perBatch
		for a := range apps {
			r := res3("Applied", "Applied", "Applied")
			if i%100 == 7 && a == "app2" {
				r[2].Status, r[2].Attempts, r[2].Error, r[2].Updated = lifecycle.ResRetrying, 4, "connection refused", now
			}
			placed = append(placed, &appctx.ClusterApp{App: a, Cluster: key, Resources: r})
		}
	}
	ctx := context.Background()
	instantiated(b, c, reads, pDIG, "ctx-bench", apps, nil)
	if err := reads.contexts.PutPlacement(ctx, "ctx-bench", placed, batchOf); err != nil {
		b.Fatal(err)
	}
	for batch := range clusters / perBatch { // as each batch workflow does when it ends
		if err := reads.contexts.CountBatch(ctx, "ctx-bench", batch); err != nil {
			b.Fatal(err)
		}
	}
	for _, query := range []string{"", "?offset=5000", "?state=Retrying"} {
		b.Run("10000-clusters"+query, func(b *testing.B) {
			for b.Loop() {
				rec := httptest.NewRecorder()
				c.h.ServeHTTP(rec, httptest.NewRequest("GET", "/v2"+pDIG+"/dashboard"+query, nil))
				if rec.Code != 200 {
					b.Fatalf("%d %s", rec.Code, rec.Body)
				}
				b.ReportMetric(float64(rec.Body.Len()), "bytes/answer")
			}
		})
	}
}
