package events

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/temco/temco/internal/core/model"
	"github.com/temco/temco/internal/core/store"
	"github.com/temco/temco/internal/dev/devstack"
	"github.com/temco/temco/internal/dev/testenv"
)

var ferret *devstack.FerretDB

func TestMain(m *testing.M) { testenv.MainWithFerretDB(m, &ferret) }

func ids(evs []Event) []string {
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
	f := OpenFeed(testenv.Database(t, ferret, strings.ToLower(t.Name())))
	if err := f.EnsureIndexes(ctx); err != nil {
		t.Fatal(err)
	}
	ev := func(id, project, typ string, minute int) Event {
		e := Event{ID: id, Type: typ, Time: at.Add(time.Duration(minute) * time.Minute), Summary: id}
		if project != "" {
			e.About("/projects/" + project + "/composite-apps/ca/v1/deployment-intent-groups/d")
		}
		return e
	}
	first := []Event{ev("a1", "p1", OperationStarted, 1), ev("a2", "p1", OperationFailed, 2), ev("b1", "p2", OperationFailed, 3), ev("f1", "", ClusterUnreachable, 4)}
	if err := f.Record(ctx, first); err != nil {
		t.Fatal(err)
	}
	// Raised again, with a new one among them: the new one kept, the others as they were.
	again := []Event{ev("a2", "p1", OperationFailed, 2), ev("a3", "p1", DriftFound, 5), ev("a1", "p1", OperationStarted, 1)}
	again[0].Summary = "changed"
	if err := f.Record(ctx, again); err != nil {
		t.Fatalf("recording events kept already: %v", err)
	}
	if err := f.Record(ctx, first[:1]); err != nil {
		t.Fatalf("recording one event kept already: %v", err)
	}
	for i := 4; i < 9; i++ { // more of p1's, for paging
		if err := f.Record(ctx, []Event{ev(fmt.Sprintf("a%d", i), "p1", OperationSucceeded, 5+i)}); err != nil {
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
		{"by type", Page{Project: "p1", Limit: 100, Types: []string{OperationFailed, DriftFound}}, []string{"a3", "a2"}},
		{"by type, every one's", Page{All: true, Limit: 100, Types: []string{OperationFailed, ClusterUnreachable}}, []string{"f1", "b1", "a2"}},
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
	got, err := f.List(ctx, Page{Project: "p1", Limit: 100, Types: []string{OperationFailed}})
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
	if st.State != StateIdle || st.Delivered != 0 || st.LastErrors == nil || len(st.LastErrors) != 0 {
		t.Errorf("a receiver never tried: %+v", st)
	}

	attempt := func(ev string, n int32, errMsg string) Attempt {
		return Attempt{Event: ev, Type: OperationFailed, Time: at, Attempt: n, Error: errMsg}
	}
	if err := s.Record(ctx, r, attempt("e1", 1, ""), 2, false); err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= errorsKept+3; i++ {
		if err := s.Record(ctx, r, attempt("e2", int32(i), fmt.Sprintf("answered 500 (%d)", i)), 1, false); err != nil {
			t.Fatal(err)
		}
	}
	st, err = s.Get(ctx, r)
	if err != nil {
		t.Fatal(err)
	}
	if st.State != StateRetrying || st.Delivered != 1 || st.Failed != 0 || st.Queued != 1 || st.LastDelivered == nil || st.LastDelivered.Event != "e1" {
		t.Errorf("retrying e2 after delivering e1: %+v", st)
	}
	if len(st.LastErrors) != errorsKept || st.LastErrors[0].Attempt != 4 || st.LastErrors[errorsKept-1].Error != fmt.Sprintf("answered 500 (%d)", errorsKept+3) {
		t.Errorf("last errors %+v, want the newest %d", st.LastErrors, errorsKept)
	}

	// Refused for good: failed, counted once; then the next delivered.
	if err := s.Record(ctx, r, attempt("e2", 14, "refused: 400"), 1, true); err != nil {
		t.Fatal(err)
	}
	if err := s.Record(ctx, r, attempt("e3", 1, ""), 0, false); err != nil {
		t.Fatal(err)
	}
	st, err = s.Get(ctx, r)
	if err != nil {
		t.Fatal(err)
	}
	if st.State != StateDelivering || st.Delivered != 2 || st.Failed != 1 || st.Queued != 0 || st.LastDelivered.Event != "e3" ||
		st.LastErrors[len(st.LastErrors)-1].Error != "refused: 400" || st.Updated.IsZero() {
		t.Errorf("after a refusal and a delivery: %+v", st)
	}

	other, err := s.Get(ctx, "/notification-receivers/r1")
	if err != nil {
		t.Fatal(err)
	}
	if other.Delivered != 0 || other.State != StateIdle {
		t.Errorf("another receiver's status: %+v", other)
	}
	if err := s.Forget(ctx, r); err != nil {
		t.Fatal(err)
	}
	if st, err = s.Get(ctx, r); err != nil || st.State != StateIdle || st.Delivered != 0 {
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
	receivers := map[string]Filter{
		"/projects/p1/notification-receivers/drift": {Events: []string{"drift.*"}},
		"/projects/p2/notification-receivers/all":   {},
		"/notification-receivers/p1":                {Projects: []string{"p1"}},
		"/notification-receivers/fleet":             {Events: []string{"cluster.*"}},
	}
	for id, f := range receivers {
		body, err := json.Marshal(model.Resource[Receiver]{Metadata: model.Metadata{Name: id[strings.LastIndex(id, "/")+1:]},
			Spec: Receiver{Format: FormatSlack, URL: "https://hooks.example.com/" + Mask, Filter: f}})
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
	evs := []Event{*(&Event{ID: "drift", Type: DriftFound}).About(dig), *(&Event{ID: "failed", Type: OperationFailed}).About(dig),
		*(&Event{ID: "down", Type: ClusterUnreachable}).AboutCluster("cp+c1", nil)}

	handed := map[string][]string{}
	em := &Emitter{Store: st, Feed: OpenFeed(db), Deliver: func(_ context.Context, receiver string, e Event) error {
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
	em.Deliver = func(context.Context, string, Event) error { return errors.New("temporal unavailable") }
	if err := em.Emit(ctx, evs[0]); err == nil || !strings.Contains(err.Error(), "temporal unavailable") {
		t.Errorf("a failed hand-over: %v", err)
	}
	// Notify off: kept only.
	off := &Emitter{Store: st, Feed: em.Feed}
	if err := off.Emit(ctx, Event{ID: "later", Type: DriftCorrected, Project: "p1"}); err != nil {
		t.Fatal(err)
	}
	if kept, _ := em.Feed.List(ctx, Page{Project: "p1", Types: []string{DriftCorrected}, Limit: 10}); len(kept) != 1 {
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
	em := &Emitter{Feed: OpenFeed(db)}
	var evs []Event
	for i := range 5 {
		evs = append(evs, *(&Event{ID: fmt.Sprint("e", i), Type: ClusterUnreachable, Time: at}).AboutCluster(fmt.Sprint("cp+c", i), nil))
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
