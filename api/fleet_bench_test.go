package api

import (
	"context"
	"fmt"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/temco/temco/internal/core/appctx"
	"github.com/temco/temco/internal/core/digstate"
	"github.com/temco/temco/internal/core/lifecycle"
)

// The fleet's home with 1,000 DIGs in 10 projects, each instantiated on 10 clusters of
// its own (10,000 clusters), 3 objects per cluster, its batch counted; one DIG in ten with
// a cluster Retrying, one in twenty with a rollout waiting for an approval. On FerretDB
// with PostgreSQL, as every scale measurement: the API's answer (a page of 100, and the
// attention filter), and the first screen in Chromium. `make bench` records them.
func BenchmarkFleet(b *testing.B) {
	const projects, perProject, perDIG = 10, 100, 10
	defer onPostgres(b)()
	reads := &liveReads{}
	c := newClient(b, func(s *Server) { reads.contexts = s.Contexts; s.Ops = reads })
	ctx := context.Background()
	now := time.Now().UTC()
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
			if n%20 == 3 {
				h.Rollout = &lifecycle.RolloutStatus{State: lifecycle.RolloutRunning, Stages: []lifecycle.StageStatus{
					{Name: "canary", State: lifecycle.StageWaitingForApproval, Clusters: 1}, {Name: "rest", State: lifecycle.StagePending, Clusters: 9}}}
			}
			if err := reads.contexts.Create(ctx, h); err != nil {
				b.Fatal(err)
			}
			var placed []*appctx.ClusterApp
			batchOf := map[string]int{}
			for k := range perDIG {
				key := lifecycle.ClusterKey("cp1", fmt.Sprintf("c%05d", n*perDIG+k))
				batchOf[key] = 0
				r := res3("Applied", "Applied", "Applied")
				if n%10 == 7 && k == 0 {
					r[2].Status, r[2].Attempts, r[2].Error, r[2].Updated = lifecycle.ResRetrying, 4, "connection refused", now
				}
				placed = append(placed, &appctx.ClusterApp{App: "app1", Cluster: key, Resources: r})
			}
			if err := reads.contexts.PutPlacement(ctx, ctxID, placed, batchOf); err != nil {
				b.Fatal(err)
			}
			if err := reads.contexts.CountBatch(ctx, ctxID, 0); err != nil {
				b.Fatal(err)
			}
			n++
		}
	}
	b.Run("1000-digs-first-screen-in-chromium", func(b *testing.B) {
		firstScreen(b, c, "#/", `table[data-testid=fleet] tr[data-dig]`, fleetLimit)
	})
	for _, query := range []string{"", "?attention=true&sort=attention", "?q=fleet05/ca/v1/dig05"} {
		b.Run("1000-digs"+query, func(b *testing.B) {
			for b.Loop() {
				rec := httptest.NewRecorder()
				c.h.ServeHTTP(rec, httptest.NewRequest("GET", "/v2/fleet"+query, nil))
				if rec.Code != 200 {
					b.Fatalf("%d %s", rec.Code, rec.Body)
				}
				b.ReportMetric(float64(rec.Body.Len()), "bytes/answer")
			}
		})
	}
}
