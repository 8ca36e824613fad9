package api

import (
	"context"
	"fmt"
	"net/http/httptest"
	"os"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/temco/temco/internal/core/appctx"
	"github.com/temco/temco/internal/core/lifecycle"
	"github.com/temco/temco/internal/dev/testenv"
)

// The dashboard's first screen of a DIG on 10,000 clusters (3 apps, 3 objects each, in
// batches of 50, one cluster in a hundred Retrying), answered from the stored context on
// FerretDB on PostgreSQL, its batches counted as batch workflows leave
// them: the unfiltered first page, a later page, and the state filter, which reads every
// cluster's document. `make bench` records them.
func BenchmarkDashboard(b *testing.B) {
	const clusters, perBatch = 10000, 50
	defer onPostgres(b)()
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
	b.Run("10000-clusters-first-screen-in-chromium", func(b *testing.B) {
		firstScreen(b, c, "#/p/p1/ca/ca/v1/dig/dig1", `table[data-testid=matrix] tr[data-cluster]`, dashboardLimit)
	})
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

// onPostgres makes the benchmark's clients use FerretDB on PostgreSQL, as every scale
// measurement here (FerretDB's SQLite backend, temco dev's default, answers each lookup
// by _id with a scan of the collection: tens of milliseconds per document at 10,000
// clusters), until the function it returns is called.
func onPostgres(b *testing.B) func() {
	_, stop := startPostgres(b)
	return stop
}

// startPostgres is onPostgres that also gives the backend (its PostgreSQL's port).
func startPostgres(b *testing.B) (*testenv.Backend, func()) {
	dir, err := os.MkdirTemp("", "temco-api-bench-")
	if err != nil {
		b.Fatal(err)
	}
	if err := os.Chmod(dir, 0o755); err != nil { // PostgreSQL runs as its own user
		b.Fatal(err)
	}
	pg, err := testenv.StartBackend(dir, "postgresql")
	if err != nil {
		b.Fatal(err)
	}
	saved := ferret
	ferret = pg.Ferret
	return pg, func() {
		ferret = saved
		pg.Stop()
		_ = os.RemoveAll(dir)
	}
}

// firstScreen times, in Debian's headless Chromium at 1280×800, a fresh load of the
// page's route until want rows show: static files, the session, the answers and the
// rendering.
func firstScreen(b *testing.B, c *client, route, rows string, want int) {
	srv := httptest.NewServer(c.h)
	defer srv.Close()
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath("/usr/bin/chromium"),
		chromedp.UserDataDir(b.TempDir()), chromedp.WindowSize(1280, 800), chromedp.NoSandbox,
		chromedp.Flag("disable-quic", true), chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true), chromedp.Flag("disable-sync", true))
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancelAlloc()
	ctx, cancel := chromedp.NewContext(alloc)
	defer cancel()
	if err := chromedp.Do(ctx); err != nil {
		b.Fatalf("start chromium: %v", err)
	}
	page := srv.URL + "/dashboard/" + route
	for b.Loop() {
		b.StopTimer()
		if err := chromedp.Do(ctx, chromedp.Navigate("about:blank")); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		wctx, wcancel := context.WithTimeout(ctx, time.Minute)
		err := chromedp.Do(wctx, chromedp.Navigate(page), chromedp.WaitVisible(chromedp.CSS(rows)))
		wcancel()
		if err != nil {
			b.Fatalf("the rows of %s did not show: %v", page, err)
		}
		b.StopTimer()
		n, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll("`+rows+`").length`))
		if err != nil || n != want {
			b.Fatalf("%d rows (%v), want %d", n, err, want)
		}
		b.StartTimer()
	}
}
