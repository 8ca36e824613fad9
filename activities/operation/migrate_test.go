package operation

import (
	"context"
	"errors"
	"strings"
	"testing"

	"go.temporal.io/sdk/temporal"

	"github.com/temco/temco/internal/core/appctx"
	"github.com/temco/temco/internal/core/digstate"
	"github.com/temco/temco/internal/core/lifecycle"
	"github.com/temco/temco/internal/core/store"
)

// migrateDIGs stores an admin cloud, an origin DIG in state from running context "o1" (of
// instance "i1") and a target DIG in state to, both in the cloud.
func migrateDIGs(t *testing.T, a *Activities, from, to string) (origin, target lifecycle.Target) {
	t.Helper()
	ctx := context.Background()
	origin = lifecycle.Target{Project: "p", CompositeApp: "ca", Version: "v1", DIG: "d"}
	target = lifecycle.Target{Project: "p", CompositeApp: "ca", Version: "v2", DIG: "d2"}
	body := `{"metadata":{"name":"d"},"spec":{"logicalCloud":"lc"}}`
	for _, d := range []*store.Doc{
		{ID: lifecycle.LogicalCloudID("p", "lc"), Kind: "logical-cloud", Name: "lc", Body: `{"metadata":{"name":"lc"},"spec":{"level":"0"}}`,
			State: history(lifecycle.StateInstantiated, "lc-1")},
		{ID: origin.ID(), Kind: "dig", Name: "d", Body: body, State: digstate.Encode(lifecycle.StateInfo{Actions: []lifecycle.Action{
			{State: lifecycle.StateInstantiated, ContextID: "i1", Revision: 1}, {State: lifecycle.StateUpdated, ContextID: "i1", Revision: 1},
			{State: from, ContextID: "o1", Revision: 2}}})},
		{ID: target.ID(), Kind: "dig", Name: "d2", Body: body, State: history(to, "")},
	} {
		if err := a.Store.Create(ctx, d); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []*appctx.Context{{ID: "lc-1", Status: lifecycle.StatusInstantiated},
		{ID: "o1", DIG: origin.ID(), Instance: "i1", Revision: 2, Status: lifecycle.StatusInstantiated, Namespace: "default"}} {
		if err := a.Contexts.Create(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	return origin, target
}

func invalidState(t *testing.T, what string, err error, says string) {
	t.Helper()
	var appErr *temporal.ApplicationError
	if !errors.As(err, &appErr) || appErr.Type() != lifecycle.ErrInvalidState || !appErr.NonRetryable() || !strings.Contains(err.Error(), says) {
		t.Errorf("%s: %v, want a non-retryable %s saying %q", what, err, lifecycle.ErrInvalidState, says)
	}
}

// A migrate begins from an instantiated origin into an approved target: the target's new
// context belongs to the origin's instance (same deployment-id labels), and the target
// records it Instantiated, once even when retried; the origin records nothing yet.
func TestBeginMigrate(t *testing.T) {
	ctx := context.Background()
	a := newActivities(t, "migratebegin")
	origin, target := migrateDIGs(t, a, lifecycle.StateInstantiated, lifecycle.StateApproved)
	held, err := a.BeginHold(ctx, lifecycle.BeginInput{Target: origin, Op: lifecycle.OpMigrate})
	if err != nil || held.ContextID != "o1" {
		t.Fatalf("hold: %+v, %v", held, err)
	}
	in := lifecycle.MigrateBegin{DIG: target, ContextID: "t1", Origin: origin, OriginContext: "o1"}
	for attempt := 1; attempt <= 2; attempt++ {
		res, err := a.BeginMigrate(ctx, in)
		if err != nil || res.ContextID != "t1" || res.Revision != 1 || res.Previous != "o1" {
			t.Fatalf("attempt %d: %+v, %v", attempt, res, err)
		}
	}
	c, err := a.Contexts.Get(ctx, "t1")
	if err != nil || c.Instance != "i1" || c.DIG != target.ID() || c.Revision != 1 || c.Status != lifecycle.StatusInstantiating || c.Namespace != "default" {
		t.Fatalf("target context %+v, %v", c, err)
	}
	_, info, _ := digstate.Load(ctx, a.Store, target.ID())
	if len(info.Actions) != 2 || info.Current() != lifecycle.StateInstantiated || info.ContextID() != "t1" {
		t.Errorf("target history %+v", info.Actions)
	}
	if _, info, _ := digstate.Load(ctx, a.Store, origin.ID()); info.Current() != lifecycle.StateInstantiated {
		t.Errorf("origin history %+v", info.Actions)
	}
}

// Refusals: an origin that cannot migrate, a target that is not approved, an origin
// whose running context changed; none leaves a context behind.
func TestBeginMigrateRefusals(t *testing.T) {
	ctx := context.Background()
	a := newActivities(t, "migraterefused")
	origin, target := migrateDIGs(t, a, lifecycle.StateTerminated, lifecycle.StateCreated)
	_, err := a.BeginHold(ctx, lifecycle.BeginInput{Target: origin, Op: lifecycle.OpMigrate})
	invalidState(t, "hold of a terminated origin", err, "is Terminated: migrate needs one of [Instantiated InstantiateStopped]")
	_, err = a.BeginMigrate(ctx, lifecycle.MigrateBegin{DIG: target, ContextID: "t1", Origin: origin, OriginContext: "o1"})
	invalidState(t, "migrate from a terminated origin", err, "migrate needs one of")

	b := newActivities(t, "migraterefused2")
	origin, target = migrateDIGs(t, b, lifecycle.StateInstantiateStopped, lifecycle.StateCreated)
	_, err = b.BeginMigrate(ctx, lifecycle.MigrateBegin{DIG: target, ContextID: "t1", Origin: origin, OriginContext: "o1"})
	invalidState(t, "migrate into a created target", err, "is Created: migrate into needs one of [Approved]")
	_, err = b.BeginMigrate(ctx, lifecycle.MigrateBegin{DIG: target, ContextID: "t1", Origin: origin, OriginContext: "o0"})
	invalidState(t, "migrate of a context the origin no longer runs", err, "now runs context o1, not o0")
	if _, err := b.Contexts.Get(ctx, "t1"); !errors.Is(err, appctx.ErrNotFound) {
		t.Errorf("a refused migrate left its context: %v", err)
	}
}

// FinishMigrate records a done migrate on both DIGs (the origin Migrated, its context
// Updated), and a rolled-back one on the target only (Approved again, its context failed
// with the reason); each once.
func TestFinishMigrate(t *testing.T) {
	ctx := context.Background()
	for _, outcome := range []string{lifecycle.MigrateDone, lifecycle.MigrateRolledBack, lifecycle.MigrateStopped} {
		t.Run(outcome, func(t *testing.T) {
			a := newActivities(t, "migratefinish"+strings.ReplaceAll(outcome, " ", ""))
			origin, target := migrateDIGs(t, a, lifecycle.StateInstantiated, lifecycle.StateApproved)
			begin := lifecycle.MigrateBegin{DIG: target, ContextID: "t1", Origin: origin, OriginContext: "o1"}
			if _, err := a.BeginMigrate(ctx, begin); err != nil {
				t.Fatal(err)
			}
			for range 2 {
				if err := a.FinishMigrate(ctx, lifecycle.MigrateFinish{MigrateBegin: begin, Outcome: outcome, Error: "why"}); err != nil {
					t.Fatal(err)
				}
			}
			_, from, _ := digstate.Load(ctx, a.Store, origin.ID())
			_, to, _ := digstate.Load(ctx, a.Store, target.ID())
			oc, _ := a.Contexts.Get(ctx, "o1")
			tc, _ := a.Contexts.Get(ctx, "t1")
			type want struct{ origin, target, originStatus, targetStatus, targetError string }
			got := want{from.Current(), to.Current(), oc.Status, tc.Status, tc.Error}
			expect := map[string]want{
				lifecycle.MigrateDone: {lifecycle.StateMigrated, lifecycle.StateInstantiated, lifecycle.StatusUpdated, lifecycle.StatusInstantiated, ""},
				lifecycle.MigrateRolledBack: {lifecycle.StateInstantiated, lifecycle.StateApproved, lifecycle.StatusInstantiated,
					lifecycle.StatusInstantiateFailed, "why"},
				lifecycle.MigrateStopped: {lifecycle.StateInstantiated, lifecycle.StateInstantiateStopped, lifecycle.StatusInstantiated,
					lifecycle.StatusInstantiateStopped, "why"},
			}[outcome]
			if got != expect {
				t.Errorf("after %s: %+v, want %+v", outcome, got, expect)
			}
			// One entry more, in the origin (Migrated) or the target (Approved, InstantiateStopped).
			if n := len(from.Actions) + len(to.Actions); n != 3+2+1 {
				t.Errorf("histories: origin %+v, target %+v", from.Actions, to.Actions)
			}
			if outcome == lifecycle.MigrateDone {
				if last := from.Actions[len(from.Actions)-1]; last.ContextID != "o1" || last.Revision != 2 {
					t.Errorf("origin's Migrated entry %+v", last)
				}
			}
		})
	}
}
