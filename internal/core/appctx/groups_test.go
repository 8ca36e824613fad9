package appctx

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sync"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/temco/temco/internal/core/lifecycle"
)

// placeN places apps a and b on n clusters of one batch in context ctx1.
func placeN(t *testing.T, s *Store, n int) []string {
	t.Helper()
	var placed []*ClusterApp
	var clusters []string
	batchOf := map[string]int{}
	for i := range n {
		c := fmt.Sprintf("p+c%02d", i)
		clusters, batchOf[c] = append(clusters, c), 0
		for _, app := range []string{"a", "b"} {
			placed = append(placed, &ClusterApp{App: app, Cluster: c, Resources: []ResourceStatus{
				{Ref: Ref{Kind: "ConfigMap", Name: "x"}, Status: lifecycle.ResPending}}})
		}
	}
	if err := s.PutPlacement(context.Background(), "ctx1", placed, batchOf); err != nil {
		t.Fatal(err)
	}
	return clusters
}

// Fifty clusters of a group that begin and save at once, as a group activity's do, cost
// round trips per group, not per cluster: their reads are one find, their saves a few
// writes of the group (each one conditional update), and
// every status is kept.
func TestAGroupsClustersReadAndSaveTogether(t *testing.T) {
	s, count := countingStore(t)
	clusters := placeN(t, s, 50)
	ctx := context.Background()
	placed := make([][]*ClusterApp, len(clusters))
	reads := count(func() {
		var wg sync.WaitGroup
		for i, c := range clusters {
			wg.Go(func() {
				var err error
				if placed[i], err = s.PlacedApps(ctx, "ctx1", c); err != nil || len(placed[i]) != 2 {
					t.Errorf("%s: %d apps, %v", c, len(placed[i]), err)
				}
			})
		}
		wg.Wait()
	})
	// The batches (the layout) and the group, each read by the first caller and once more
	// for those that came during that read (none is answered with a read older than its
	// question): about 4, never 50.
	if reads["find"] > 6 {
		t.Errorf("50 clusters read with %v", reads)
	}
	saves := count(func() {
		var wg sync.WaitGroup
		for i, c := range clusters {
			wg.Go(func() {
				for _, ca := range placed[i] {
					ca.Resources[0].Status = lifecycle.ResApplied
				}
				if err := s.SaveStatuses(ctx, "ctx1", Attempt{Activity: "run/" + c, Number: 1}, placed[i]); err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
	})
	if saves["update"] > 10 || saves["update"] < 1 {
		t.Errorf("50 clusters saved with %v, want at most 10 writes of their group", saves)
	}
	got, err := s.Summary(ctx, "ctx1", nil)
	if err != nil || !maps.Equal(got, map[string]int{lifecycle.ResApplied: 100}) {
		t.Errorf("summary %v (%v)", got, err)
	}
}

// A context placed before groups (a document per cluster, written here as the code of
// before wrote it) is read and written as it was; placed again, it is kept in groups and
// its documents per cluster are gone.
func TestAContextPlacedBeforeGroupsStillReads(t *testing.T) {
	s := newStore(t)
	s.groupBytes = -1 // the layout of before groups
	place(t, s)
	s.groupBytes = 0
	ctx := context.Background()
	if n, _ := s.clusters.CountDocuments(ctx, bson.D{{Key: "ctx", Value: "ctx1"}}); n != 6 {
		t.Fatalf("%d documents per cluster, want 6", n)
	}
	apply(t, s, "p+c0", lifecycle.ResApplied)
	if err := s.SaveStatuses(ctx, "ctx1", Attempt{"run/apply p+c1", 2}, mustApps(t, s, "p+c1", lifecycle.ResFailed)); err != nil {
		t.Fatal(err)
	}
	if err := s.SaveStatuses(ctx, "ctx1", Attempt{"run/apply p+c1", 1}, mustApps(t, s, "p+c1", lifecycle.ResRetrying)); !errors.Is(err, ErrSuperseded) {
		t.Errorf("a superseded attempt saved: %v", err)
	}
	cas := mustApps(t, s, "p+c2", lifecycle.ResPending)
	cas[0].Live = []Live{{State: LivePresent, Ready: true}, {State: LivePresent}}
	if err := s.SaveLive(ctx, "ctx1", "p+c2", cas); err != nil {
		t.Fatal(err)
	}
	if err := s.CountBatch(ctx, "ctx1", 0); err != nil {
		t.Fatal(err)
	}
	want := map[string]int{lifecycle.ResApplied: 4, lifecycle.ResFailed: 4, lifecycle.ResPending: 16}
	check := func(when string) {
		t.Helper()
		wantSummary(t, s, nil, want)
		all, err := s.Placements(ctx, "ctx1", Filter{})
		if err != nil || len(all) != 12 {
			t.Fatalf("%s: %d placements (%v)", when, len(all), err)
		}
		live, err := s.ClusterApps(ctx, "ctx1", "p+c2")
		if err != nil || len(live[0].Live) != 2 || !live[0].Live[0].Ready {
			t.Errorf("%s: live read of p+c2: %+v (%v)", when, live, err)
		}
		on, err := s.OnCluster(ctx, "p+c1", []string{"ctx1", "other"})
		if err != nil || len(on["ctx1"]) != 2 || on["ctx1"][0].Resources[0].Status != lifecycle.ResFailed {
			t.Errorf("%s: on p+c1: %v (%v)", when, on, err)
		}
	}
	check("before groups")
	all, err := s.Placements(ctx, "ctx1", Filter{})
	if err != nil {
		t.Fatal(err)
	}
	batchOf := map[string]int{}
	for i := range 6 {
		batchOf[fmt.Sprintf("p+c%d", i)] = i / 2
	}
	if err := s.PutPlacement(ctx, "ctx1", all, batchOf); err != nil {
		t.Fatal(err)
	}
	if n, _ := s.clusters.CountDocuments(ctx, bson.D{{Key: "ctx", Value: "ctx1"}}); n != 0 {
		t.Errorf("%d documents per cluster left", n)
	}
	if n, _ := s.placed.CountDocuments(ctx, bson.D{{Key: "ctx", Value: "ctx1"}}); n != 3 {
		t.Errorf("%d groups, want 3", n)
	}
	check("placed again in groups")
}

// mustApps reads the apps on cluster with every object set to status.
func mustApps(t *testing.T, s *Store, cluster, status string) []*ClusterApp {
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
	return cas
}

// Two processes writing one group in turn: each writes over the group as it last wrote
// it only while no one else has written since, so neither undoes the other's statuses.
func TestTwoProcessesWritingOneGroupKeepBothStatuses(t *testing.T) {
	ctx := context.Background()
	db := newDatabaseOn(t, backends[0])
	s1, err := New(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	s2, err := New(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	clusters := placeN(t, s1, 4)
	for i, c := range clusters {
		s := []*Store{s1, s2}[i%2]
		cas, err := s.PlacedApps(ctx, "ctx1", c)
		if err != nil {
			t.Fatal(err)
		}
		for _, ca := range cas {
			ca.Resources[0].Status = lifecycle.ResApplied
		}
		if err := s.SaveStatuses(ctx, "ctx1", Attempt{Activity: "run/" + c, Number: 1}, cas); err != nil {
			t.Fatal(err)
		}
	}
	for _, s := range []*Store{s1, s2} {
		got, err := s.Summary(ctx, "ctx1", nil)
		if err != nil || !maps.Equal(got, map[string]int{lifecycle.ResApplied: 8}) {
			t.Errorf("summary %v (%v)", got, err)
		}
	}
}

// Two processes saving the clusters of one group at the same moments take turns through
// the group's version (no claim): every status of both is kept.
func TestTwoProcessesSavingOneGroupAtOnceKeepEveryStatus(t *testing.T) {
	ctx := context.Background()
	db := newDatabaseOn(t, backends[0])
	var stores []*Store
	for range 2 {
		s, err := New(ctx, db)
		if err != nil {
			t.Fatal(err)
		}
		stores = append(stores, s)
	}
	clusters := placeN(t, stores[0], 40)
	var wg sync.WaitGroup
	for i, c := range clusters {
		s := stores[i%2]
		wg.Go(func() {
			cas, err := s.PlacedApps(ctx, "ctx1", c)
			if err != nil {
				t.Error(err)
				return
			}
			for _, ca := range cas {
				ca.Resources[0].Status = lifecycle.ResApplied
			}
			if err := s.SaveStatuses(ctx, "ctx1", Attempt{Activity: "run/" + c, Number: 1}, cas); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	got, err := stores[1].Summary(ctx, "ctx1", nil)
	if err != nil || !maps.Equal(got, map[string]int{lifecycle.ResApplied: 80}) {
		t.Errorf("summary %v (%v), want all 80 Applied", got, err)
	}
}

// A group written before packing (its entries an array of binary values, as stop 71's code
// wrote them) reads as it was; its next write stores it packed, every status kept.
func TestAGroupWrittenBeforePackingStillReads(t *testing.T) {
	s := newStore(t)
	clusters := placeN(t, s, 3)
	ctx := context.Background()
	id := batchID("ctx1", 0)
	g, err := s.fetchGroupDoc(ctx, id)
	if err != nil || g == nil || len(g.Clusters) != 3 {
		t.Fatalf("group %v (%v)", g, err)
	}
	if _, err := s.placed.UpdateOne(ctx, bson.D{{Key: "_id", Value: id}}, bson.D{
		{Key: "$set", Value: bson.D{{Key: "clusters", Value: g.Clusters}}},
		{Key: "$unset", Value: bson.D{{Key: "packed", Value: ""}}}}); err != nil {
		t.Fatal(err)
	}
	s.writer.known = nil // this process wrote it otherwise
	form := func() (packed, listed bool) {
		t.Helper()
		var raw bson.Raw
		if err := s.placed.FindOne(ctx, bson.D{{Key: "_id", Value: id}}).Decode(&raw); err != nil {
			t.Fatal(err)
		}
		_, _, p := raw.Lookup("packed").BinaryOK()
		_, l := raw.Lookup("clusters").ArrayOK()
		return p, l
	}
	if p, l := form(); p || !l {
		t.Fatalf("set up: packed %v, listed %v", p, l)
	}
	cas, err := s.PlacedApps(ctx, "ctx1", clusters[1])
	if err != nil || len(cas) != 2 {
		t.Fatalf("read before packing: %d apps (%v)", len(cas), err)
	}
	for _, ca := range cas {
		ca.Resources[0].Status = lifecycle.ResApplied
	}
	if err := s.SaveStatuses(ctx, "ctx1", Attempt{Activity: "run/x", Number: 1}, cas); err != nil {
		t.Fatal(err)
	}
	if p, l := form(); !p || l {
		t.Errorf("after a write: packed %v, listed %v; want packed alone", p, l)
	}
	got, err := s.Summary(ctx, "ctx1", nil)
	if err != nil || !maps.Equal(got, map[string]int{lifecycle.ResApplied: 2, lifecycle.ResPending: 4}) {
		t.Errorf("summary %v (%v)", got, err)
	}
}

// A group's first groupBurst writes go at once (the few clusters of a small group save
// without waiting); after them its writes start a gap apart, four times what a write took
// within 40-250 ms, after the one before ended; a group left alone for its spacing starts
// a burst again.
func TestAGroupsWritesGoAtOnceThenSpaced(t *testing.T) {
	var p spacing
	now := time.Unix(1_700_000_000, 0)
	// write writes as soon as the spacing lets it, asked at now; it returns its start.
	write := func(took time.Duration) time.Time {
		start := now.Add(max(p.wait(now), 0))
		now = start.Add(took)
		p.wrote(start, now)
		return start
	}
	burst := func(took time.Duration) {
		t.Helper()
		for i := range groupBurst {
			asked := now
			if start := write(took); start != asked {
				t.Fatalf("write %d of a burst waited %v", i+1, start.Sub(asked))
			}
		}
	}
	spaced := func(took, gap time.Duration) {
		t.Helper()
		for range groupBurst - 1 { // a longer gap allows a longer burst: the change settles
			write(took)
		}
		prev := write(took)
		for i := range 5 {
			if start := write(took); start.Sub(prev) != gap {
				t.Fatalf("writes of %v after a burst: write %d started %v after the one before, want %v", took, i+2, start.Sub(prev), gap)
			} else {
				prev = start
			}
		}
	}
	burst(5 * time.Millisecond)
	spaced(5*time.Millisecond, 5*time.Millisecond+minGroupGap)
	spaced(20*time.Millisecond, 20*time.Millisecond+80*time.Millisecond)
	spaced(time.Second, time.Second+maxGroupGap)
	now = p.due // left alone until its spacing is used up
	burst(5 * time.Millisecond)
}

// A group's index finds each cluster's entry as a scan does, and stays right in the
// versions the writer makes of it.
func TestAGroupsIndexFindsWhatAScanFinds(t *testing.T) {
	g := &groupDoc{}
	for _, c := range []string{"p+c3", "p+c1", "p+c2"} {
		e, err := entryOf(&clusterDoc{Cluster: c, Apps: []*ClusterApp{{App: "a"}}})
		if err != nil {
			t.Fatal(err)
		}
		g.Clusters = append(g.Clusters, e)
	}
	scan := *g
	g.index()
	for _, c := range []string{"p+c1", "p+c2", "p+c3", "p+c9"} {
		if i, want := g.find(c), scan.find(c); i != want || (c != "p+c9" && clusterOf(g.Clusters[i]) != c) {
			t.Errorf("%s: index %d, scan %d", c, i, want)
		}
	}
	next, err := merged(g, []*change{{cluster: "p+c2", apps: []*ClusterApp{{App: "b"}}}})
	if err != nil || next == nil {
		t.Fatalf("merged: %v %v", next, err)
	}
	var d clusterDoc
	if err := bson.Unmarshal(next.Clusters[next.find("p+c2")], &d); err != nil || d.Cluster != "p+c2" || d.Apps[0].App != "b" {
		t.Errorf("after a write, p+c2's entry: %+v %v", d, err)
	}
}
