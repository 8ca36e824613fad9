package store

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/temco/temco/internal/dev/testenv"
)

var (
	backends []*testenv.Backend // SQLite first: the default of `make run`
	dbSeq    atomic.Int64
)

func TestMain(m *testing.M) { testenv.MainWithBackends(m, &backends) }

// newStore opens a fresh database on the default backend.
func newStore(t *testing.T) *Store { return newStoreOn(t, backends[0]) }

func newStoreOn(t testing.TB, b *testenv.Backend) *Store {
	t.Helper()
	ctx := context.Background()
	db := fmt.Sprintf("store%d", dbSeq.Add(1))
	s, client, err := Open(ctx, b.URI(), db)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = client.Database(db).Drop(context.Background())
		_ = client.Disconnect(context.Background())
	})
	return s
}

// forEachBackend runs test as a parallel subtest on a fresh store of each backend.
func forEachBackend(t *testing.T, name string, test func(t *testing.T, s *Store)) {
	for _, b := range backends {
		t.Run(strings.Trim(name+"/"+b.Name, "/"), func(t *testing.T) {
			t.Parallel()
			test(t, newStoreOn(t, b))
		})
	}
}

func doc(id, parent string, refs ...string) *Doc {
	return &Doc{ID: id, Parent: parent, Kind: "k", Name: id, Body: `{}`, Refs: refs}
}

func wantCode(t *testing.T, err error, code Code) {
	t.Helper()
	if CodeOf(err) != code {
		t.Fatalf("error %v, want code %d", err, code)
	}
}

func TestCreateGetListDelete(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	if err := s.Create(ctx, doc("/p", "")); err != nil {
		t.Fatal(err)
	}
	wantCode(t, s.Create(ctx, doc("/p", "")), ErrExists)
	wantCode(t, s.Create(ctx, doc("/x/c", "/x")), ErrParentMissing)
	wantCode(t, s.Create(ctx, doc("/p/c", "/p", "/nope")), ErrRefMissing)
	if _, err := s.Get(ctx, "/p/c"); CodeOf(err) != ErrNotFound {
		t.Fatalf("a refused create left a document behind: %v", err)
	}
	for _, id := range []string{"/p/b", "/p/a"} {
		if err := s.Create(ctx, doc(id, "/p")); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Create(ctx, doc("/q", "", "/p/a")); err != nil {
		t.Fatal(err)
	}
	docs, err := s.List(ctx, Query{Parent: "/p", Kind: "k"})
	if err != nil || len(docs) != 2 || docs[0].ID != "/p/a" {
		t.Fatalf("list = %v, %v", docs, err)
	}
	wantCode(t, s.Delete(ctx, "/p"), ErrHasChildren)
	wantCode(t, s.Delete(ctx, "/p/a"), ErrReferenced)
	if err := s.Delete(ctx, "/q"); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"/p/a", "/p/b", "/p"} {
		if err := s.Delete(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	wantCode(t, s.Delete(ctx, "/p"), ErrNotFound)
}

func TestUpdateIsOptimistic(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	if err := s.Create(ctx, doc("/p", "")); err != nil {
		t.Fatal(err)
	}
	a, _ := s.Get(ctx, "/p")
	b, _ := s.Get(ctx, "/p")
	a.Body, b.Body = `{"a":1}`, `{"b":1}`
	if err := s.Update(ctx, a); err != nil {
		t.Fatal(err)
	}
	wantCode(t, s.Update(ctx, b), ErrConflict)
	got, _ := s.Get(ctx, "/p")
	if got.Body != `{"a":1}` || got.Rev != 2 {
		t.Fatalf("after update: %+v", got)
	}
	// An update may not add a reference to a missing resource.
	got.Refs = []string{"/nope"}
	wantCode(t, s.Update(ctx, got), ErrRefMissing)
}

func TestSetStateWritesOnlyTheStateAtItsRevision(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	if err := s.Create(ctx, doc("/p", "")); err != nil {
		t.Fatal(err)
	}
	stale, _ := s.Get(ctx, "/p")
	cur, _ := s.Get(ctx, "/p")
	cur.Body = `{"a":1}`
	if err := s.Update(ctx, cur); err != nil {
		t.Fatal(err)
	}
	stale.State, stale.Body = "old", `{"lost":1}`
	wantCode(t, s.SetState(ctx, stale), ErrConflict)
	cur.State, cur.Body = "new", `{"ignored":1}`
	if err := s.SetState(ctx, cur); err != nil {
		t.Fatal(err)
	}
	got, _ := s.Get(ctx, "/p")
	if got.State != "new" || got.Body != `{"a":1}` || got.Rev != 3 || cur.Rev != 3 {
		t.Fatalf("after SetState: %+v (caller's rev %d)", got, cur.Rev)
	}
}

// Concurrent child creation and parent deletion never leave a child without its parent.
func TestNoOrphansUnderConcurrency(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	const rounds = 40
	for i := range rounds {
		parent := fmt.Sprintf("/p%d", i)
		if err := s.Create(ctx, doc(parent, "")); err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		for j := range 3 {
			wg.Go(func() { _ = s.Create(ctx, doc(fmt.Sprintf("%s/c%d", parent, j), parent)) })
		}
		wg.Go(func() { _ = s.Delete(ctx, parent) })
		wg.Wait()
		children, err := s.List(ctx, Query{Parent: parent, Kind: "k"})
		if err != nil {
			t.Fatal(err)
		}
		ok, err := s.Exists(ctx, parent)
		if err != nil {
			t.Fatal(err)
		}
		if len(children) > 0 && !ok {
			t.Fatalf("round %d: %d children outlived their parent", i, len(children))
		}
	}
}

// A process that died between insert and commit leaves a pending child: invisible,
// holding its parent's delete off only within the lease, and replaceable after it.
func TestDeadWritersAreRecovered(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	if err := s.Create(ctx, doc("/p", "")); err != nil {
		t.Fatal(err)
	}
	fresh := time.Now().UTC()
	orphan := doc("/p/c", "/p")
	orphan.PendingSince = &fresh
	if _, err := s.coll.InsertOne(ctx, orphan); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(ctx, "/p/c"); CodeOf(err) != ErrNotFound {
		t.Fatalf("a pending document is visible: %v", err)
	}
	// Its parent's delete waits for it to be committed or withdrawn, then gives up.
	s.claimWait = 50 * time.Millisecond
	wantCode(t, s.Delete(ctx, "/p"), ErrBusy)

	stale := fresh.Add(-2 * lease)
	if _, err := s.coll.UpdateOne(ctx, bson.D{{Key: "_id", Value: "/p/c"}}, bson.D{{Key: "$set", Value: bson.D{{Key: "pendingSince", Value: stale}}}}); err != nil {
		t.Fatal(err)
	}
	if err := s.Create(ctx, doc("/p/c", "/p")); err != nil {
		t.Fatalf("a stale pending document blocks re-creation: %v", err)
	}
	if err := s.Delete(ctx, "/p/c"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.coll.InsertOne(ctx, &Doc{ID: "/p/d", Parent: "/p", Kind: "k", PendingSince: &stale}); err != nil {
		t.Fatal(err)
	}
	// A stale deleting mark of a dead deleter does not block either.
	if _, err := s.coll.UpdateOne(ctx, bson.D{{Key: "_id", Value: "/p"}}, bson.D{{Key: "$set", Value: bson.D{{Key: "deletingSince", Value: stale}}}}); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(ctx, "/p"); err != nil {
		t.Fatalf("delete with a stale pending child and a stale mark: %v", err)
	}
	n, err := s.coll.CountDocuments(ctx, bson.D{}, options.Count())
	if err != nil || n != 0 {
		t.Fatalf("%d documents left (%v)", n, err)
	}
}

// Loose references may name resources that do not exist yet; once they exist, they
// cannot be deleted while referenced.
func TestLooseReferencesMayComeFirst(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	if err := s.Create(ctx, doc("/p", "")); err != nil {
		t.Fatal(err)
	}
	user := doc("/p/user", "/p", "/p/later")
	user.LooseRefs = true
	if err := s.Create(ctx, user); err != nil {
		t.Fatalf("a loose reference to a missing resource: %v", err)
	}
	wantCode(t, s.Create(ctx, doc("/x/c", "/x")), ErrParentMissing) // parents stay strict
	if err := s.Create(ctx, doc("/p/later", "/p")); err != nil {
		t.Fatal(err)
	}
	wantCode(t, s.Delete(ctx, "/p/later"), ErrReferenced)
	got, _ := s.Get(ctx, "/p/user")
	got.Refs, got.LooseRefs = []string{"/p/other"}, true
	if err := s.Update(ctx, got); err != nil {
		t.Fatalf("an update adding a loose reference to a missing resource: %v", err)
	}
	if err := s.Delete(ctx, "/p/later"); err != nil {
		t.Fatalf("no longer referenced: %v", err)
	}
}

// Names lists what List does, by _id, names alone: pending documents, other kinds and
// other parents left out, on each backend.
func TestNamesAreListsNames(t *testing.T) {
	forEachBackend(t, "", func(t *testing.T, s *Store) {
		ctx := context.Background()
		for _, d := range []*Doc{doc("/p", ""), doc("/q", ""), doc("/p/b", "/p"), doc("/p/a", "/p"), doc("/q/z", "/q"),
			{ID: "/p/o", Parent: "/p", Kind: "other", Name: "o", Body: `{}`}} {
			if err := s.Create(ctx, d); err != nil {
				t.Fatal(err)
			}
		}
		now := time.Now().UTC()
		if _, err := s.coll.InsertOne(ctx, &Doc{ID: "/p/c", Parent: "/p", Kind: "k", Name: "/p/c", PendingSince: &now}); err != nil {
			t.Fatal(err)
		}
		for _, q := range []Query{{Parent: "/p", Kind: "k"}, {Parent: "/q", Kind: "k"}, {Parent: "/p", Kind: "other"},
			{Parent: "/p", Kind: "k", Name: "/p/b"}, {Parent: "/x", Kind: "k"}} {
			docs, err := s.List(ctx, q)
			if err != nil {
				t.Fatal(err)
			}
			want := []string{}
			for _, d := range docs {
				want = append(want, d.Name)
			}
			names, err := s.Names(ctx, q)
			if err != nil || fmt.Sprint(names) != fmt.Sprint(want) || len(names) != len(want) {
				t.Fatalf("Names(%+v) = %q, %v; List's names: %q", q, names, err, want)
			}
		}
		if names, _ := s.Names(ctx, Query{Parent: "/p", Kind: "k"}); fmt.Sprint(names) != "[/p/a /p/b]" {
			t.Fatalf("Names = %q, want [/p/a /p/b]", names)
		}
	})
}

// An update over a document read just before writes without reading it again, and fails
// as a conflict when another write came in between.
func TestUpdateOverWhatWasReadRefusesAnInterveningWrite(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	if err := s.Create(ctx, &Doc{ID: "/p", Kind: "project", Name: "p", Body: `{"v":1}`}); err != nil {
		t.Fatal(err)
	}
	old, err := s.Get(ctx, "/p")
	if err != nil {
		t.Fatal(err)
	}
	next := *old
	next.Body = `{"v":2}`
	if err := s.UpdateOver(ctx, &next, old); err != nil {
		t.Fatalf("update over what was read: %v", err)
	}
	stale := *old // read before that write
	stale.Body = `{"v":3}`
	if err := s.UpdateOver(ctx, &stale, old); CodeOf(err) != ErrConflict {
		t.Errorf("an update over a stale read: %v, want a conflict", err)
	}
	if got, _ := s.Get(ctx, "/p"); got.Body != `{"v":2}` {
		t.Errorf("stored %s, want the first update's", got.Body)
	}
}

// CreateChecked's check sees the parent as the create reads it after its pending insert,
// owner and what is above it included: its error withdraws the document (a create right
// after it succeeds) and comes back as is; what it records above the document is written
// by the commit.
func TestCreateCheckedLetsItsCallerCheckTheParent(t *testing.T) {
	forEachBackend(t, "", func(t *testing.T, s *Store) {
		ctx := context.Background()
		p := doc("/p", "")
		p.Owner, p.Above, p.AboveV = "hub", "/x", 1
		if err := s.Create(ctx, p); err != nil {
			t.Fatal(err)
		}
		refused := errors.New("refused")
		var seen Doc
		if err := s.CreateChecked(ctx, doc("/p/c", "/p"), func(_ context.Context, parent *Doc) error {
			seen = *parent
			return refused
		}); !errors.Is(err, refused) {
			t.Fatalf("error %v, want the check's", err)
		}
		if seen.ID != "/p" || seen.Owner != "hub" || seen.Above != "/x" || seen.AboveV != 1 || seen.Parent != "" {
			t.Errorf("the check saw %+v", seen)
		}
		wantCode(t, func() error { _, err := s.Get(ctx, "/p/c"); return err }(), ErrNotFound)
		c := doc("/p/c", "/p")
		if err := s.CreateChecked(ctx, c, func(context.Context, *Doc) error {
			c.Above, c.AboveV = "/p", 1
			return nil
		}); err != nil {
			t.Fatalf("created again at once: %v", err)
		}
		got, err := s.Ownership(ctx, "/p/c")
		if err != nil || got.Above != "/p" || got.AboveV != 1 {
			t.Fatalf("committed %+v (%v), want above /p", got, err)
		}
		calls := 0
		wantCode(t, s.CreateChecked(ctx, doc("/q/c", "/q"), func(context.Context, *Doc) error { calls++; return nil }), ErrParentMissing)
		if calls != 0 {
			t.Errorf("the check ran %d times without a parent", calls)
		}
	})
}
