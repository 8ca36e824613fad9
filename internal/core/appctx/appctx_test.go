package appctx

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sync/atomic"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/temco/temco/internal/core/lifecycle"
	"github.com/temco/temco/internal/dev/testenv"
)

var (
	backends []*testenv.Backend // SQLite first: the default of `make run`
	dbSeq    atomic.Int64
)

func TestMain(m *testing.M) { testenv.MainWithBackends(m, &backends) }

// newStore opens a fresh store on the default backend.
func newStore(t *testing.T) *Store { return newStoreOn(t, backends[0]) }

func newStoreOn(t testing.TB, b *testenv.Backend, opts ...Option) *Store {
	t.Helper()
	s, err := New(context.Background(), newDatabaseOn(t, b), opts...)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// newDatabaseOn opens a fresh database on backend b, dropped when the test ends.
func newDatabaseOn(t testing.TB, b *testenv.Backend) *mongo.Database {
	t.Helper()
	client, err := mongo.Connect(options.Client().ApplyURI(b.URI()))
	if err != nil {
		t.Fatal(err)
	}
	db := client.Database(fmt.Sprintf("appctx%d", dbSeq.Add(1)))
	t.Cleanup(func() {
		_ = db.Drop(context.Background())
		_ = client.Disconnect(context.Background())
	})
	return db
}

// place puts apps a and b (two objects each) on clusters c0..c5, two clusters per batch.
func place(t testing.TB, s *Store) {
	t.Helper()
	var placed []*ClusterApp
	batchOf := map[string]int{}
	for i := range 6 {
		cluster := fmt.Sprintf("p+c%d", i)
		batchOf[cluster] = i / 2
		for _, app := range []string{"a", "b"} {
			placed = append(placed, &ClusterApp{App: app, Cluster: cluster, Resources: []ResourceStatus{
				{Ref: Ref{Kind: "ConfigMap", Name: "x"}, Status: lifecycle.ResPending},
				{Ref: Ref{Kind: "Service", Name: "y"}, Status: lifecycle.ResPending},
			}})
		}
	}
	if err := s.PutPlacement(context.Background(), "ctx1", placed, batchOf); err != nil {
		t.Fatal(err)
	}
}

// apply marks every object of a cluster with status, as a cluster activity does.
func apply(t *testing.T, s *Store, cluster, status string) {
	t.Helper()
	if err := s.SaveClusters(context.Background(), "ctx1", mustApps(t, s, cluster, status)); err != nil {
		t.Fatal(err)
	}
}

func wantSummary(t *testing.T, s *Store, apps []string, want map[string]int) {
	t.Helper()
	got, err := s.Summary(context.Background(), "ctx1", apps)
	if err != nil {
		t.Fatal(err)
	}
	if !maps.Equal(got, want) {
		t.Errorf("summary of %v = %v, want %v", apps, got, want)
	}
}

func TestSummaryAddsStoredCountsToLiveOnes(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	place(t, s)
	wantSummary(t, s, nil, map[string]int{lifecycle.ResPending: 24}) // nothing counted yet: all live

	// Batch 0 runs to the end and is counted; batch 1 is running.
	for b, status := range []string{lifecycle.ResApplied, lifecycle.ResFailed} {
		clusters, err := s.StartBatch(ctx, "ctx1", b)
		if err != nil || len(clusters) != 2 {
			t.Fatalf("batch %d: %v, %v", b, clusters, err)
		}
		for _, c := range clusters {
			apply(t, s, c, status)
		}
	}
	if err := s.CountBatch(ctx, "ctx1", 0); err != nil {
		t.Fatal(err)
	}
	wantSummary(t, s, nil, map[string]int{lifecycle.ResApplied: 8, lifecycle.ResFailed: 8, lifecycle.ResPending: 8})
	wantSummary(t, s, []string{"b"}, map[string]int{lifecycle.ResApplied: 4, lifecycle.ResFailed: 4, lifecycle.ResPending: 4})

	// A new run over batch 0 drops its counts: what it writes shows at once.
	if _, err := s.StartBatch(ctx, "ctx1", 0); err != nil {
		t.Fatal(err)
	}
	apply(t, s, "p+c0", lifecycle.ResDeleted)
	wantSummary(t, s, nil, map[string]int{lifecycle.ResApplied: 4, lifecycle.ResDeleted: 4, lifecycle.ResFailed: 8, lifecycle.ResPending: 8})
}

func TestPlacementsOfNamedClusters(t *testing.T) {
	s := newStore(t)
	place(t, s)
	got, err := s.Placements(context.Background(), "ctx1", Filter{Clusters: []string{"p+c4", "p+c1", "p+missing", "p+c4"}, Apps: []string{"b"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Cluster != "p+c1" || got[1].Cluster != "p+c4" || got[0].App != "b" {
		t.Errorf("placements %+v", got)
	}
}

func TestUnlistedPlacementsAreListedFromTheRenderedApps(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	// Placement ran beside rendering: it stored only which app goes where.
	var placed []*ClusterApp
	for _, c := range []string{"p+c0", "p+c1"} {
		for _, app := range []string{"a", "b"} {
			placed = append(placed, &ClusterApp{App: app, Cluster: c, Unlisted: true})
		}
	}
	if err := s.PutPlacement(ctx, "ctx1", placed, map[string]int{"p+c0": 0, "p+c1": 0}); err != nil {
		t.Fatal(err)
	}
	// Until an app is rendered its objects are unknown; then each is Pending.
	a := func() *App {
		return &App{Name: "a", Objects: []Object{
			{Ref: Ref{Kind: "ConfigMap", Name: "x"}}, {Ref: Ref{Kind: "Service", Name: "y"}}, {Ref: Ref{Kind: "Secret", Name: "z"}}}}
	}
	if err := s.PutApps(ctx, "ctx1", []*App{a()}); err != nil {
		t.Fatal(err)
	}
	wantSummary(t, s, nil, map[string]int{lifecycle.ResPending: 6})
	if err := s.PutApps(ctx, "ctx1", []*App{a(), {Name: "b", Objects: []Object{{Ref: Ref{Kind: "Deployment", Name: "w"}}}}}); err != nil {
		t.Fatal(err)
	}
	wantSummary(t, s, nil, map[string]int{lifecycle.ResPending: 8})
	got, err := s.Placements(ctx, "ctx1", Filter{Apps: []string{"a"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || len(got[0].Resources) != 3 || got[0].Unlisted || got[0].Resources[2].Ref.Name != "z" ||
		got[0].Resources[2].Status != lifecycle.ResPending {
		t.Fatalf("placements of a: %+v", got)
	}

	// A cluster activity's write stores the list; the other cluster stays unlisted.
	apply(t, s, "p+c0", lifecycle.ResApplied)
	d, err := s.clusterDoc(ctx, "ctx1", "p+c0")
	if err != nil || d.Apps[0].Unlisted || len(d.Apps[0].Resources) != 3 {
		t.Fatalf("stored after a write: %+v, %v", d, err)
	}
	if d, _ := s.clusterDoc(ctx, "ctx1", "p+c1"); !d.Apps[0].Unlisted || d.Apps[0].Resources != nil {
		t.Fatalf("p+c1 is no longer unlisted: %+v", d.Apps[0])
	}
	wantSummary(t, s, nil, map[string]int{lifecycle.ResApplied: 4, lifecycle.ResPending: 4})
	if err := s.CountBatch(ctx, "ctx1", 0); err != nil {
		t.Fatal(err)
	}
	wantSummary(t, s, []string{"b"}, map[string]int{lifecycle.ResApplied: 1, lifecycle.ResPending: 1})
}

// A live read that began before an apply saved its statuses, and ends after, records what
// it read and keeps the apply's statuses (it once wrote back the Pending it had read).
func TestSaveLiveKeepsStatusesSavedMeanwhile(t *testing.T) {
	s := newStore(t)
	place(t, s)
	ctx := context.Background()
	read, err := s.ClusterApps(ctx, "ctx1", "p+c1")
	if err != nil {
		t.Fatal(err)
	}
	apply(t, s, "p+c1", lifecycle.ResApplied)
	at := time.Now().UTC().Truncate(time.Millisecond)
	for _, ca := range read {
		ca.Live, ca.LiveAt = []Live{{State: LivePresent, Ready: true}, {State: LiveNotPresent}}, at
	}
	if err := s.SaveLive(ctx, "ctx1", "p+c1", read); err != nil {
		t.Fatal(err)
	}
	got, err := s.ClusterApps(ctx, "ctx1", "p+c1")
	if err != nil {
		t.Fatal(err)
	}
	for _, ca := range got {
		if ca.Resources[0].Status != lifecycle.ResApplied || ca.Resources[1].Status != lifecycle.ResApplied {
			t.Errorf("app %s: statuses %+v, want Applied kept", ca.App, ca.Resources)
		}
		if len(ca.Live) != 2 || !ca.Live[0].Ready || ca.Live[1].State != LiveNotPresent || !ca.LiveAt.Equal(at) {
			t.Errorf("app %s: live %+v at %v", ca.App, ca.Live, ca.LiveAt)
		}
	}
	// Apps no longer where the read found them: nothing is written.
	read[0].App, read[0].LiveAt = "gone", at.Add(time.Hour)
	if err := s.SaveLive(ctx, "ctx1", "p+c1", read); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.ClusterApps(ctx, "ctx1", "p+c1"); !got[0].LiveAt.Equal(at) {
		t.Errorf("a read of another shape was written: %v", got[0].LiveAt)
	}
}

// An apply that read the cluster before a live read saved keeps what the read found: the
// statuses it writes back do not carry the live state it read.
func TestAnApplyKeepsALiveReadSavedMeanwhile(t *testing.T) {
	s := newStore(t)
	place(t, s)
	ctx := context.Background()
	applying, err := s.PlacedApps(ctx, "ctx1", "p+c1")
	if err != nil {
		t.Fatal(err)
	}
	read, err := s.ClusterApps(ctx, "ctx1", "p+c1")
	if err != nil {
		t.Fatal(err)
	}
	at := time.Now().UTC().Truncate(time.Millisecond)
	for _, ca := range read {
		ca.Live, ca.LiveAt = []Live{{State: LivePresent, Ready: true}, {State: LiveNotPresent}}, at
	}
	if err := s.SaveLive(ctx, "ctx1", "p+c1", read); err != nil {
		t.Fatal(err)
	}
	for _, ca := range applying {
		ca.Resources[0].Status = lifecycle.ResApplied
	}
	if err := s.SaveStatuses(ctx, "ctx1", Attempt{Activity: "run/apply p+c1", Number: 1}, applying); err != nil {
		t.Fatal(err)
	}
	got, err := s.Placements(ctx, "ctx1", Filter{Clusters: []string{"p+c1"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, ca := range got {
		if ca.Resources[0].Status != lifecycle.ResApplied || !ca.LiveAt.Equal(at) || len(ca.Live) != 2 || !ca.Live[0].Ready {
			t.Errorf("app %s: statuses %+v, live %+v at %v", ca.App, ca.Resources, ca.Live, ca.LiveAt)
		}
	}
}

// A cluster activity's attempt that a later attempt superseded saves nothing more; other
// activities (a terminate's delete, a stop's bookkeeping) still write the cluster.
func TestASupersededAttemptSavesNoStatuses(t *testing.T) {
	s := newStore(t)
	place(t, s)
	ctx := context.Background()
	save := func(by Attempt, status string) error {
		cas, err := s.PlacedApps(ctx, "ctx1", "p+c0")
		if err != nil {
			t.Fatal(err)
		}
		for _, ca := range cas {
			ca.Resources[0].Status = status
		}
		if by == (Attempt{}) {
			return s.SaveClusters(ctx, "ctx1", cas)
		}
		return s.SaveStatuses(ctx, "ctx1", by, cas)
	}
	want := func(status string) {
		t.Helper()
		got, err := s.ClusterApps(ctx, "ctx1", "p+c0")
		if err != nil || got[0].Resources[0].Status != status {
			t.Fatalf("status %+v (%v), want %s", got[0].Resources[0], err, status)
		}
	}
	apply := "run/apply p+c0"
	for _, step := range []struct {
		by      Attempt
		status  string
		refused bool
	}{
		{Attempt{apply, 2}, lifecycle.ResApplied, false},
		{Attempt{apply, 1}, lifecycle.ResRetrying, true}, // the zombie
		{Attempt{}, lifecycle.ResFailed, false},          // not an attempt: the fence stays
		{Attempt{apply, 1}, lifecycle.ResRetrying, true},
		{Attempt{"run/delete p+c0", 1}, lifecycle.ResDeleted, false},
		{Attempt{apply, 3}, lifecycle.ResApplied, false},
	} {
		err := save(step.by, step.status)
		switch {
		case step.refused && !errors.Is(err, ErrSuperseded):
			t.Fatalf("%+v saved %s: %v", step.by, step.status, err)
		case !step.refused && err != nil:
			t.Fatalf("%+v: %v", step.by, err)
		case !step.refused:
			want(step.status)
		}
	}
	want(lifecycle.ResApplied)
	// A cluster the context does not have: nothing to write, nothing refused.
	if err := s.SaveStatuses(ctx, "ctx1", Attempt{apply, 1}, []*ClusterApp{{App: "a", Cluster: "p+none"}}); err != nil {
		t.Fatal(err)
	}
}
