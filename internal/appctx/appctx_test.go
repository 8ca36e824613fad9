package appctx

import (
	"context"
	"fmt"
	"maps"
	"testing"
	"time"

	"github.com/temco/temco/internal/devstack"
	"github.com/temco/temco/internal/lifecycle"
	"github.com/temco/temco/internal/testenv"
)

var ferret *devstack.FerretDB

func TestMain(m *testing.M) { testenv.MainWithFerretDB(m, &ferret) }

func newStore(t *testing.T) *Store {
	t.Helper()
	s, err := New(context.Background(), testenv.Database(t, ferret, "appctx"))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// place puts apps a and b (two objects each) on clusters c0..c5, two clusters per batch.
func place(t *testing.T, s *Store) {
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
	cas, err := s.ClusterApps(context.Background(), "ctx1", cluster)
	if err != nil {
		t.Fatal(err)
	}
	for _, ca := range cas {
		for i := range ca.Resources {
			ca.Resources[i].Status = status
		}
	}
	if err := s.SaveClusters(context.Background(), "ctx1", cas); err != nil {
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
