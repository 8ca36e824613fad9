package appctx

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/event"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/temco/temco/internal/core/store"
	"github.com/temco/temco/internal/dev/testenv"
)

// appsOf makes apps names, each holding one ConfigMap that says version.
func appsOf(version string, names ...string) []*App {
	out := make([]*App, len(names))
	for i, n := range names {
		out[i] = &App{Name: n, Objects: []Object{{Ref: Ref{Kind: "ConfigMap", Name: n}, Manifest: `{"version":"` + version + `"}`}}}
	}
	return out
}

// storedApps reads every app document of ctx1: its version, by app.
func storedApps(t *testing.T, s *Store) map[string]string {
	t.Helper()
	cur, err := s.apps.Find(context.Background(), bson.D{{Key: "ctx", Value: "ctx1"}})
	if err != nil {
		t.Fatal(err)
	}
	var docs []*App
	if err := cur.All(context.Background(), &docs); err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, d := range docs {
		out[d.Name] = d.Objects[0].Manifest
	}
	return out
}

func versions(version string, names ...string) map[string]string {
	out := map[string]string{}
	for _, n := range names {
		out[n] = `{"version":"` + version + `"}`
	}
	return out
}

var errKilled = errors.New("the worker died here")

// A replacement of a context's apps stopped after any of its steps (a worker killed
// there) leaves every app, the old ones and the new, each old or new: a header listing
// either set reads them all; the next attempt completes it.
func TestAnInterruptedReplacementOfAppsLeavesEveryApp(t *testing.T) {
	ctx := context.Background()
	for _, step := range []string{stepInserted, stepReplaced} {
		t.Run(step, func(t *testing.T) {
			s := newStore(t)
			if err := s.PutApps(ctx, "ctx1", appsOf("old", "a", "b")); err != nil {
				t.Fatal(err)
			}
			s.afterAppsStep = func(at string) error {
				if at == step {
					return errKilled
				}
				return nil
			}
			if err := s.PutApps(ctx, "ctx1", appsOf("new", "b", "c")); !errors.Is(err, errKilled) {
				t.Fatalf("the interrupted write: %v", err)
			}
			for _, header := range [][]string{{"a", "b"}, {"b", "c"}} {
				if _, err := s.Apps(ctx, &Context{ID: "ctx1", Apps: header}); err != nil {
					t.Errorf("stopped after %q, a header listing %v: %v (stored: %v)", step, header, err, storedApps(t, s))
				}
			}
			s.afterAppsStep = nil
			if err := s.PutApps(ctx, "ctx1", appsOf("new", "b", "c")); err != nil {
				t.Fatal(err)
			}
			if got := storedApps(t, s); !maps.Equal(got, versions("new", "b", "c")) {
				t.Errorf("after the next attempt: %v", got)
			}
		})
	}
}

// Two writers of a context's apps at once (a retried activity and the attempt it
// replaced) are serialised: the context ends with exactly one writer's apps, whatever the
// backend. One that waited too long is refused with ErrBusy and writes nothing.
func TestConcurrentWritersOfAContextsAppsLeaveOneWritersApps(t *testing.T) {
	ctx := context.Background()
	for _, b := range backends {
		t.Run(b.Name, func(t *testing.T) {
			s := newStoreOn(t, b)
			if err := s.PutApps(ctx, "ctx1", appsOf("start", "a", "b")); err != nil {
				t.Fatal(err)
			}
			mixed := 0
			for round := range raceRounds {
				first, second := fmt.Sprint("first ", round), fmt.Sprint("second ", round)
				errs := testenv.Race(
					func() error { return s.PutApps(ctx, "ctx1", appsOf(first, "a", "b")) },
					func() error { return s.PutApps(ctx, "ctx1", appsOf(second, "b", "c")) })
				for i, err := range errs {
					if err != nil && store.CodeOf(err) != store.ErrBusy {
						t.Fatalf("round %d, writer %d: %v", round, i, err)
					}
				}
				got := storedApps(t, s)
				if !maps.Equal(got, versions(first, "a", "b")) && !maps.Equal(got, versions(second, "b", "c")) {
					mixed++
					t.Logf("round %d left %v", round, got)
				}
			}
			if mixed > 0 {
				t.Errorf("%d of %d rounds left a mixture of both writers' apps", mixed, raceRounds)
			}
		})
	}
}

// A writer of a context's apps holding the claim (stalled mid-replacement) keeps another
// out: refused with ErrBusy, writing nothing; every app stays readable meanwhile.
func TestAStalledWriterOfAppsKeepsTheNextOut(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	if err := s.PutApps(ctx, "ctx1", appsOf("old", "a", "b")); err != nil {
		t.Fatal(err)
	}
	stalled, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	s.afterAppsStep = func(step string) error {
		if step == stepInserted {
			once.Do(func() { close(stalled) })
			<-release
		}
		return nil
	}
	done := make(chan error, 1)
	go func() { done <- s.PutApps(ctx, "ctx1", appsOf("stalled", "b", "c")) }()
	<-stalled
	if err := s.PutApps(ctx, "ctx1", appsOf("other", "d")); store.CodeOf(err) != store.ErrBusy {
		t.Errorf("a second writer while the first holds the claim: %v, want ErrBusy", err)
	}
	if _, err := s.Apps(ctx, &Context{ID: "ctx1", Apps: []string{"a", "b", "c"}}); err != nil {
		t.Errorf("while the writer is stalled: %v", err)
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if got := storedApps(t, s); !maps.Equal(got, versions("stalled", "b", "c")) {
		t.Errorf("after the stalled writer: %v", got)
	}
}

// What writing a context's apps costs in store round trips: the same for 1 app and for
// 50 (then one more update per 50), and nothing per cluster (apps are the context's).
// First write: the claim, the insert, the claim's release. A replacement: the claim, the
// insert refused, the replacement, the deletion of apps no longer listed, the release.
func TestWritingAppsCostsRoundTripsPerContext(t *testing.T) {
	ctx := context.Background()
	for _, n := range []int{1, 50} {
		s, count := countingStore(t)
		var names []string
		for i := range n {
			names = append(names, fmt.Sprint("app", i))
		}
		for _, tc := range []struct {
			what string
			want map[string]int
		}{
			{"first write", map[string]int{"insert": 2, "delete": 1}},
			{"replacement", map[string]int{"insert": 2, "update": 1, "delete": 2}},
		} {
			got := count(func() {
				if err := s.PutApps(ctx, "ctx1", appsOf(tc.what, names...)); err != nil {
					t.Fatal(err)
				}
			})
			if !maps.Equal(got, tc.want) {
				t.Errorf("%d apps, %s: round trips %v, want %v", n, tc.what, got, tc.want)
			}
		}
	}
}

// countingStore is a fresh store whose client counts the commands it sends; count runs f
// and returns the commands f sent, by name.
func countingStore(t *testing.T) (*Store, func(f func()) map[string]int) {
	t.Helper()
	var mu sync.Mutex
	counts := map[string]int{}
	monitor := &event.CommandMonitor{Started: func(_ context.Context, e *event.CommandStartedEvent) {
		mu.Lock()
		counts[e.CommandName]++
		mu.Unlock()
	}}
	client, err := mongo.Connect(options.Client().ApplyURI(backends[0].URI()).SetMonitor(monitor))
	if err != nil {
		t.Fatal(err)
	}
	db := client.Database(fmt.Sprintf("appctx%d", dbSeq.Add(1)))
	t.Cleanup(func() {
		_ = db.Drop(context.Background())
		_ = client.Disconnect(context.Background())
	})
	s, err := New(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	return s, func(f func()) map[string]int {
		mu.Lock()
		clear(counts)
		mu.Unlock()
		f()
		mu.Lock()
		defer mu.Unlock()
		out := maps.Clone(counts)
		for _, k := range slices.Collect(maps.Keys(out)) {
			if k == "endSessions" || k == "hello" || k == "isMaster" {
				delete(out, k)
			}
		}
		return out
	}
}
