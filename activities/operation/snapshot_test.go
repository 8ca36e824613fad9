package operation

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/temco/temco/internal/core/appctx"
	"github.com/temco/temco/internal/core/lifecycle"
	"github.com/temco/temco/internal/core/store"
)

// revisionsOf lists dig's snapshots, newest first, as "id:[revisions]".
func revisionsOf(t *testing.T, a *Activities, dig string) []string {
	t.Helper()
	list, err := a.Snapshots.List(context.Background(), dig)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, s := range list {
		var revs []int64
		for _, r := range s.Revisions {
			revs = append(revs, r.Revision)
		}
		out = append(out, fmt.Sprintf("%s:%v", s.ID, revs))
	}
	return out
}

// Each begin that decides a DIG's revision records it on a snapshot: an instantiate and
// an update on the configuration stored then (a new snapshot once it changed), a
// rollback on the snapshot of the revision it copies; a retried begin records nothing
// twice, and a logical cloud's operations record none.
func TestBeginRecordsEachRevisionsSnapshot(t *testing.T) {
	ctx := context.Background()
	a := newActivities(t, "snapshots")
	dig := lifecycle.Target{Project: "p", CompositeApp: "ca", Version: "v1", DIG: "d"}
	cloud := lifecycle.Target{Project: "p", LogicalCloud: "lc"}
	for _, d := range []*store.Doc{
		{ID: cloud.ID(), Kind: "logical-cloud", Name: "lc", Body: `{"metadata":{"name":"lc"},"spec":{"level":"0"}}`,
			State: history(lifecycle.StateInstantiated, "lc-1")},
		{ID: dig.ID(), Kind: "dig", Name: "d", Body: `{"metadata":{"name":"d"},"spec":{"logicalCloud":"lc","version":"r1"}}`,
			State: history(lifecycle.StateApproved, "")},
	} {
		if err := a.Store.Create(ctx, d); err != nil {
			t.Fatal(err)
		}
	}
	if err := a.Contexts.Create(ctx, &appctx.Context{ID: "lc-1", Status: lifecycle.StatusInstantiated}); err != nil {
		t.Fatal(err)
	}
	begin := func(op, ctxID string, rev int64) {
		t.Helper()
		for attempt := 1; attempt <= 2; attempt++ { // the second as a retry would
			if _, err := a.BeginOperation(ctx, lifecycle.BeginInput{Target: dig, Op: op, ContextID: ctxID, Revision: rev}); err != nil {
				t.Fatalf("%s, attempt %d: %v", op, attempt, err)
			}
		}
	}
	begin(lifecycle.OpInstantiate, "c1", 0)
	first := revisionsOf(t, a, dig.ID())
	if len(first) != 1 || !strings.HasSuffix(first[0], ":[1]") {
		t.Fatalf("after an instantiate: %v, want one snapshot of revision 1", first)
	}
	begin(lifecycle.OpUpdate, "c2", 0) // nothing changed
	if got := revisionsOf(t, a, dig.ID()); len(got) != 1 || !strings.HasSuffix(got[0], ":[1 2]") {
		t.Fatalf("after an update of the same configuration: %v, want its snapshot with revisions 1 and 2", got)
	}
	d, err := a.Store.Get(ctx, dig.ID())
	if err != nil {
		t.Fatal(err)
	}
	d.Body = strings.Replace(d.Body, `"r1"`, `"r2"`, 1)
	if err := a.Store.Update(ctx, d); err != nil {
		t.Fatal(err)
	}
	begin(lifecycle.OpUpdate, "c3", 0)
	got := revisionsOf(t, a, dig.ID())
	if len(got) != 2 || !strings.HasSuffix(got[0], ":[3]") || got[1] != strings.TrimSuffix(first[0], "]")+" 2]" {
		t.Fatalf("after an update of a changed DIG: %v, want a new snapshot of revision 3 first", got)
	}
	begin(lifecycle.OpRollback, "c4", 1)
	got = revisionsOf(t, a, dig.ID())
	if len(got) != 2 || got[0] != strings.TrimSuffix(first[0], "]")+" 2 4]" {
		t.Fatalf("after a rollback to revision 1: %v, want revision 4 on revision 1's snapshot, listed first", got)
	}
	if list, err := a.Snapshots.List(ctx, cloud.ID()); err != nil || len(list) != 0 {
		t.Errorf("a logical cloud's snapshots: %+v, %v", list, err)
	}
	var ops []string
	list, _ := a.Snapshots.List(ctx, dig.ID())
	for _, r := range list[0].Revisions {
		ops = append(ops, r.Operation+"@"+r.ContextID)
	}
	if fmt.Sprint(ops) != "[instantiate@c1 update@c2 rollback@c4]" {
		t.Errorf("revisions of the first snapshot: %v", ops)
	}
}

// A migrate's target records its revision 1 on the snapshot of its own configuration.
func TestBeginMigrateRecordsTheTargetsSnapshot(t *testing.T) {
	ctx := context.Background()
	a := newActivities(t, "migratesnapshot")
	origin, target := migrateDIGs(t, a, lifecycle.StateInstantiated, lifecycle.StateApproved)
	if _, err := a.BeginMigrate(ctx, lifecycle.MigrateBegin{DIG: target, ContextID: "t1", Origin: origin, OriginContext: "o1"}); err != nil {
		t.Fatal(err)
	}
	list, err := a.Snapshots.List(ctx, target.ID())
	if err != nil || len(list) != 1 || len(list[0].Revisions) != 1 || list[0].Operation != lifecycle.OpMigrate ||
		list[0].Revisions[0].ContextID != "t1" || list[0].Revisions[0].Revision != 1 {
		t.Fatalf("the target's snapshots: %+v, %v", list, err)
	}
	snap, err := a.Snapshots.Get(ctx, target.ID(), list[0].ID)
	if err != nil || !strings.Contains(snap.Document, `"`+target.ID()+`"`) {
		t.Errorf("the target's snapshot %+v, %v: want the target DIG's configuration", snap, err)
	}
	if list, _ := a.Snapshots.List(ctx, origin.ID()); len(list) != 0 {
		t.Errorf("the origin recorded snapshots: %+v", list)
	}
}
