package api

import (
	"context"
	"fmt"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/temco/temco/internal/core/appctx"
	"github.com/temco/temco/internal/core/digstate"
	"github.com/temco/temco/internal/core/lifecycle"
)

// The fleet's grid of 10,000 registered clusters and 1,000 DIGs in 10 projects, each DIG
// on 20 clusters (every cluster has two), 3 objects per cluster: one DIG in ten with a
// cluster Retrying, one in a hundred with one Failed, one in fifty running (its batch not
// counted: read from its clusters' documents). On FerretDB with PostgreSQL, as every
// scale measurement: the API's answer, and the home's first screen with its 10,000 cells
// in Chromium.
func BenchmarkFleetClusters(b *testing.B) {
	const projects, perProject, clusters, perDIG = 10, 100, 10000, 20
	defer onPostgres(b)()
	reads := &liveReads{}
	c := newClient(b, func(s *Server) { reads.contexts = s.Contexts; s.Ops = reads })
	ctx := context.Background()
	now := time.Now().UTC()
	c.do("POST", "/cluster-providers", res("cp1", nil)).must(b, 201)
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			for i := w; i < clusters; i += 8 {
				c.multipart("POST", "/cluster-providers/cp1/clusters", res(fmt.Sprintf("c%05d", i), nil), []byte(testKubeconfig)).must(b, 201)
			}
		})
	}
	wg.Wait()
	n := 0
	for p := range projects {
		project := fmt.Sprintf("fleet%02d", p)
		c.do("POST", "/projects", res(project, nil)).must(b, 201)
		ca := "/projects/" + project + "/composite-apps/ca/v1"
		c.do("POST", "/projects/"+project+"/composite-apps", res("ca", map[string]any{"compositeAppVersion": "v1"})).must(b, 201)
		for d := range perProject {
			name := fmt.Sprintf("dig%03d", d)
			dig := ca + "/deployment-intent-groups/" + name
			c.do("POST", ca+"/deployment-intent-groups", res(name, map[string]any{"compositeProfile": "prof", "version": "1", "logicalCloud": "lc"})).must(b, 201)
			ctxID := fmt.Sprintf("ctx-%d", n)
			if _, err := digstate.Change(ctx, c.store, dig, func(lifecycle.StateInfo) ([]lifecycle.Action, error) {
				return []lifecycle.Action{{State: lifecycle.StateApproved, TimeStamp: now},
					{State: lifecycle.StateInstantiated, ContextID: ctxID, Revision: 1, TimeStamp: now}}, nil
			}); err != nil {
				b.Fatal(err)
			}
			h := &appctx.Context{ID: ctxID, DIG: dig, Instance: ctxID, Revision: 1, Status: lifecycle.StatusInstantiated, Apps: []string{"app1"}}
			if err := reads.contexts.Create(ctx, h); err != nil {
				b.Fatal(err)
			}
			var placed []*appctx.ClusterApp
			batchOf := map[string]int{}
			for k := range perDIG {
				key := lifecycle.ClusterKey("cp1", fmt.Sprintf("c%05d", (n*perDIG/2+k)%clusters))
				batchOf[key] = 0
				r := res3("Applied", "Applied", "Applied")
				switch {
				case n%100 == 42 && k == 1:
					r[1].Status, r[1].Error = lifecycle.ResFailed, "forbidden"
				case n%10 == 7 && k == 0:
					r[2].Status, r[2].Attempts, r[2].Error, r[2].Updated = lifecycle.ResRetrying, 4, "connection refused", now
				}
				placed = append(placed, &appctx.ClusterApp{App: "app1", Cluster: key, Resources: r})
			}
			if err := reads.contexts.PutPlacement(ctx, ctxID, placed, batchOf); err != nil {
				b.Fatal(err)
			}
			if n%50 != 13 {
				if err := reads.contexts.CountBatch(ctx, ctxID, 0); err != nil {
					b.Fatal(err)
				}
			}
			n++
		}
	}
	b.Run("10000-clusters-1000-digs", func(b *testing.B) {
		for b.Loop() {
			rec := httptest.NewRecorder()
			c.h.ServeHTTP(rec, httptest.NewRequest("GET", "/v2/fleet/clusters", nil))
			if rec.Code != 200 {
				b.Fatalf("%d %s", rec.Code, rec.Body)
			}
			b.ReportMetric(float64(rec.Body.Len()), "bytes/answer")
		}
	})
	b.Run("10000-clusters-first-screen-in-chromium", func(b *testing.B) {
		firstScreen(b, c, "#/clusters", `[data-testid=cluster-grid][data-cells='10000']`, 1)
	})
}
