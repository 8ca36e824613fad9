package feed

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/temco/temco/internal/core/events"
	"github.com/temco/temco/internal/core/model"
	"github.com/temco/temco/internal/core/store"
	"github.com/temco/temco/internal/dev/devstack"
	"github.com/temco/temco/internal/dev/testenv"
)

var ferret *devstack.FerretDB

var at = time.Date(2026, 12, 7, 10, 30, 0, 0, time.UTC)

func TestMain(m *testing.M) { testenv.MainWithFerretDB(m, &ferret) }

func ids(evs []events.Event) []string {
	out := make([]string, len(evs))
	for i, e := range evs {
		out[i] = e.ID
	}
	return out
}

// The feed keeps an event raised twice (its activity retried) once, even when it comes
// with others; reads are newest first, a project's own events only (the fleet's and every
// project's for admins), by type, and page on with before.
func TestFeedKeepsEachEventOnceAndPagesAProjectsEvents(t *testing.T) {
	ctx := context.Background()
	f := Open(testenv.Database(t, ferret, strings.ToLower(t.Name())))
	if err := f.EnsureIndexes(ctx); err != nil {
		t.Fatal(err)
	}
	ev := func(id, project, typ string, minute int) events.Event {
		e := events.Event{ID: id, Type: typ, Time: at.Add(time.Duration(minute) * time.Minute), Summary: id}
		if project != "" {
			e.About("/projects/" + project + "/composite-apps/ca/v1/deployment-intent-groups/d")
		}
		return e
	}
	first := []events.Event{ev("a1", "p1", events.OperationStarted, 1), ev("a2", "p1", events.OperationFailed, 2), ev("b1", "p2", events.OperationFailed, 3), ev("f1", "", events.ClusterUnreachable, 4)}
	if err := f.Record(ctx, first); err != nil {
		t.Fatal(err)
	}
	// Raised again, with a new one among them: the new one kept, the others as they were.
	again := []events.Event{ev("a2", "p1", events.OperationFailed, 2), ev("a3", "p1", events.DriftFound, 5), ev("a1", "p1", events.OperationStarted, 1)}
	again[0].Summary = "changed"
	if err := f.Record(ctx, again); err != nil {
		t.Fatalf("recording events kept already: %v", err)
	}
	if err := f.Record(ctx, first[:1]); err != nil {
		t.Fatalf("recording one event kept already: %v", err)
	}
	for i := 4; i < 9; i++ { // more of p1's, for paging
		if err := f.Record(ctx, []events.Event{ev(fmt.Sprintf("a%d", i), "p1", events.OperationSucceeded, 5+i)}); err != nil {
			t.Fatal(err)
		}
	}

	for _, c := range []struct {
		name string
		page Page
		want []string
	}{
		{"a project's, newest first", Page{Project: "p1", Limit: 100}, []string{"a8", "a7", "a6", "a5", "a4", "a3", "a2", "a1"}},
		{"another project's", Page{Project: "p2", Limit: 100}, []string{"b1"}},
		{"the fleet's own under no project", Page{Limit: 100}, []string{"f1"}},
		{"a project that has none", Page{Project: "p3", Limit: 100}, []string{}},
		{"every one's", Page{All: true, Project: "p2", Limit: 100}, []string{"a8", "a7", "a6", "a5", "a4", "a3", "f1", "b1", "a2", "a1"}},
		{"a limit", Page{Project: "p1", Limit: 3}, []string{"a8", "a7", "a6"}},
		{"the next page: before the last one read", Page{Project: "p1", Limit: 3, Before: at.Add(11 * time.Minute)}, []string{"a5", "a4", "a3"}},
		{"the last page", Page{Project: "p1", Limit: 3, Before: at.Add(5 * time.Minute)}, []string{"a2", "a1"}},
		{"by type", Page{Project: "p1", Limit: 100, Types: []string{events.OperationFailed, events.DriftFound}}, []string{"a3", "a2"}},
		{"by type, every one's", Page{All: true, Limit: 100, Types: []string{events.OperationFailed, events.ClusterUnreachable}}, []string{"f1", "b1", "a2"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := f.List(ctx, c.page)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(ids(got), c.want) {
				t.Errorf("events %v, want %v", ids(got), c.want)
			}
		})
	}
	got, err := f.List(ctx, Page{Project: "p1", Limit: 100, Types: []string{events.OperationFailed}})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Summary != "a2" || got[0].DIG != "d" || !got[0].Time.Equal(at.Add(2*time.Minute)) {
		t.Errorf("the event kept first is not as it was raised first: %+v", got)
	}
}

// A receiver's status counts its deliveries, keeps the last one delivered and its last
// errors (at most errorsKept, the newest), and says whether it is retrying; a deleted
// receiver's is forgotten.
func TestStatusRecordsDeliveriesAndBoundsItsErrors(t *testing.T) {
	ctx := context.Background()
	s := OpenStatuses(testenv.Database(t, ferret, strings.ToLower(t.Name())))
	const r = "/projects/p1/notification-receivers/r1"
	st, err := s.Get(ctx, r)
	if err != nil {
		t.Fatal(err)
	}
	if st.State != events.StateIdle || st.Delivered != 0 || st.LastErrors == nil || len(st.LastErrors) != 0 {
		t.Errorf("a receiver never tried: %+v", st)
	}

	attempt := func(ev string, n int32, errMsg string) events.Attempt {
		return events.Attempt{Event: ev, Type: events.OperationFailed, Time: at, Attempt: n, Error: errMsg}
	}
	if err := s.Record(ctx, r, attempt("e1", 1, ""), events.Waiting{Queued: 2}, false); err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= errorsKept+3; i++ {
		if err := s.Record(ctx, r, attempt("e2", int32(i), fmt.Sprintf("answered 500 (%d)", i)), events.Waiting{Queued: 1, Dropped: 3}, false); err != nil {
			t.Fatal(err)
		}
	}
	st, err = s.Get(ctx, r)
	if err != nil {
		t.Fatal(err)
	}
	// Each retried attempt carries the same total dropped: counted once.
	if st.State != events.StateRetrying || st.Delivered != 1 || st.Failed != 0 || st.Queued != 1 || st.Dropped != 3 ||
		st.LastDelivered == nil || st.LastDelivered.Event != "e1" {
		t.Errorf("retrying e2 after delivering e1: %+v", st)
	}
	if len(st.LastErrors) != errorsKept || st.LastErrors[0].Attempt != 4 || st.LastErrors[errorsKept-1].Error != fmt.Sprintf("answered 500 (%d)", errorsKept+3) {
		t.Errorf("last errors %+v, want the newest %d", st.LastErrors, errorsKept)
	}

	// Refused for good: failed, counted once; then the next delivered.
	if err := s.Record(ctx, r, attempt("e2", 14, "refused: 400"), events.Waiting{Queued: 1}, true); err != nil {
		t.Fatal(err)
	}
	if err := s.Record(ctx, r, attempt("e3", 1, ""), events.Waiting{Queued: 0}, false); err != nil {
		t.Fatal(err)
	}
	st, err = s.Get(ctx, r)
	if err != nil {
		t.Fatal(err)
	}
	if st.State != events.StateDelivering || st.Delivered != 2 || st.Failed != 1 || st.Queued != 0 || st.Dropped != 3 || st.LastDelivered.Event != "e3" ||
		st.LastErrors[len(st.LastErrors)-1].Error != "refused: 400" || st.Updated.IsZero() {
		t.Errorf("after a refusal and a delivery: %+v", st)
	}

	other, err := s.Get(ctx, "/notification-receivers/r1")
	if err != nil {
		t.Fatal(err)
	}
	if other.Delivered != 0 || other.State != events.StateIdle {
		t.Errorf("another receiver's status: %+v", other)
	}
	if err := s.Forget(ctx, r); err != nil {
		t.Fatal(err)
	}
	if st, err = s.Get(ctx, r); err != nil || st.State != events.StateIdle || st.Delivered != 0 {
		t.Errorf("forgotten: %+v %v", st, err)
	}
}

// Emit keeps the events in the feed and hands each to every receiver whose filter takes
// it, a project's receivers their project's only; without Deliver (notify off) it only
// keeps them.
func TestEmitHandsEachEventToTheReceiversThatTakeIt(t *testing.T) {
	ctx := context.Background()
	db := testenv.Database(t, ferret, strings.ToLower(t.Name()))
	st, err := store.New(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"p1", "p2"} {
		if err := st.Create(ctx, &store.Doc{ID: "/projects/" + p, Kind: "project", Name: p, Body: `{"metadata":{"name":"` + p + `"}}`}); err != nil {
			t.Fatal(err)
		}
	}
	receivers := map[string]events.Filter{
		"/projects/p1/notification-receivers/drift": {Events: []string{"drift.*"}},
		"/projects/p2/notification-receivers/all":   {},
		"/notification-receivers/p1":                {Projects: []string{"p1"}},
		"/notification-receivers/fleet":             {Events: []string{"cluster.*"}},
	}
	for id, f := range receivers {
		body, err := json.Marshal(model.Resource[events.Receiver]{Metadata: model.Metadata{Name: id[strings.LastIndex(id, "/")+1:]},
			Spec: events.Receiver{Format: events.FormatSlack, URL: "https://hooks.example.com/" + events.Mask, Filter: f}})
		if err != nil {
			t.Fatal(err)
		}
		parent := strings.TrimSuffix(strings.TrimSuffix(id, "/"+id[strings.LastIndex(id, "/")+1:]), "/notification-receivers")
		if err := st.Create(ctx, &store.Doc{ID: id, Parent: parent, Scope: parent, Kind: model.KindNotificationReceiver,
			Name: id[strings.LastIndex(id, "/")+1:], Body: string(body)}); err != nil {
			t.Fatal(err)
		}
	}
	dig := "/projects/p1/composite-apps/ca/v1/deployment-intent-groups/d"
	evs := []events.Event{*(&events.Event{ID: "drift", Type: events.DriftFound}).About(dig), *(&events.Event{ID: "failed", Type: events.OperationFailed}).About(dig),
		*(&events.Event{ID: "down", Type: events.ClusterUnreachable}).AboutCluster("cp+c1", nil)}

	handed := map[string][]string{}
	em := &Emitter{Store: st, Feed: Open(db), Deliver: func(_ context.Context, receiver string, e events.Event) error {
		if e.Time.IsZero() {
			t.Errorf("event %s handed without its time", e.ID)
		}
		handed[receiver] = append(handed[receiver], e.ID)
		return nil
	}}
	if err := em.Emit(ctx, evs...); err != nil {
		t.Fatal(err)
	}
	want := map[string][]string{
		"/projects/p1/notification-receivers/drift": {"drift"},
		"/notification-receivers/p1":                {"drift", "failed"},
		"/notification-receivers/fleet":             {"down"},
	}
	for id := range receivers {
		if !slices.Equal(handed[id], want[id]) {
			t.Errorf("%s was handed %q, want %q", id, handed[id], want[id])
		}
	}
	kept, err := em.Feed.List(ctx, Page{All: true, Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	if len(kept) != 3 {
		t.Errorf("the feed kept %q", ids(kept))
	}

	// A hand-over that fails is the caller's error (its activity is retried).
	em.Deliver = func(context.Context, string, events.Event) error { return errors.New("temporal unavailable") }
	if err := em.Emit(ctx, evs[0]); err == nil || !strings.Contains(err.Error(), "temporal unavailable") {
		t.Errorf("a failed hand-over: %v", err)
	}
	// Notify off: kept only.
	off := &Emitter{Store: st, Feed: em.Feed}
	if err := off.Emit(ctx, events.Event{ID: "later", Type: events.DriftCorrected, Project: "p1"}); err != nil {
		t.Fatal(err)
	}
	if kept, _ := em.Feed.List(ctx, Page{Project: "p1", Types: []string{events.DriftCorrected}, Limit: 10}); len(kept) != 1 {
		t.Errorf("without Deliver the event is not kept: %q", ids(kept))
	}
	var none *Emitter
	if err := none.Emit(ctx, evs...); err != nil {
		t.Errorf("a nil Emitter: %v", err)
	}
}

// Events raised together, or found at the same time, each get a time of their own, in the
// order raised: the feed pages through them with before= and loses none.
func TestFeedPagesThroughEventsRaisedAtOnce(t *testing.T) {
	ctx := context.Background()
	db := testenv.Database(t, ferret, strings.ToLower(t.Name()))
	em := &Emitter{Feed: Open(db)}
	var evs []events.Event
	for i := range 5 {
		evs = append(evs, *(&events.Event{ID: fmt.Sprint("e", i), Type: events.ClusterUnreachable, Time: at}).AboutCluster(fmt.Sprint("cp+c", i), nil))
	}
	if err := em.Emit(ctx, evs...); err != nil {
		t.Fatal(err)
	}
	var got []string
	p := Page{All: true, Limit: 2}
	for range 5 {
		page, err := em.Feed.List(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		if len(page) == 0 {
			break
		}
		got = append(got, ids(page)...)
		p.Before = page[len(page)-1].Time
	}
	if want := []string{"e4", "e3", "e2", "e1", "e0"}; !slices.Equal(got, want) {
		t.Errorf("paged %q, want %q", got, want)
	}
}
