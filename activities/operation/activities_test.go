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
	"github.com/temco/temco/internal/core/model"
	"github.com/temco/temco/internal/core/snapshot"
	"github.com/temco/temco/internal/core/store"
	"github.com/temco/temco/internal/dev/devstack"
	"github.com/temco/temco/internal/dev/testenv"
)

var ferret *devstack.FerretDB

func TestMain(m *testing.M) { testenv.MainWithFerretDB(m, &ferret) }

// newActivities gives the activities a database of their own.
func newActivities(t *testing.T, name string) *Activities {
	t.Helper()
	db := testenv.Database(t, ferret, name)
	a := &Activities{}
	var err error
	if a.Store, err = store.New(context.Background(), db); err != nil {
		t.Fatal(err)
	}
	if a.Contexts, err = appctx.New(context.Background(), db); err != nil {
		t.Fatal(err)
	}
	a.Snapshots = snapshot.Open(db)
	return a
}

func history(state, contextID string) string {
	return digstate.Encode(lifecycle.StateInfo{Actions: []lifecycle.Action{{State: state, ContextID: contextID}}})
}

// An instantiate whose logical cloud is not ready is refused and leaves no context
// behind; once the cloud is ready it begins, and a retry of a begin that got through
// returns the same result.
func TestBeginInstantiateChecksTheLogicalCloudAndLeavesNothingWhenRefused(t *testing.T) {
	ctx := context.Background()
	a := newActivities(t, "operation")
	dig := lifecycle.Target{Project: "p", CompositeApp: "ca", Version: "v1", DIG: "d"}
	cloud := &store.Doc{ID: lifecycle.LogicalCloudID("p", "lc"), Kind: "logical-cloud", Name: "lc",
		Body: `{"metadata":{"name":"lc"},"spec":{"namespace":"team","level":"1"}}`, State: history(lifecycle.StateInstantiated, "lc-1")}
	for _, d := range []*store.Doc{cloud, {ID: dig.ID(), Kind: "dig", Name: "d",
		Body: `{"metadata":{"name":"d"},"spec":{"logicalCloud":"lc"}}`, State: history(lifecycle.StateApproved, "")}} {
		if err := a.Store.Create(ctx, d); err != nil {
			t.Fatal(err)
		}
	}
	// The cloud's own context is still being instantiated.
	if err := a.Contexts.Create(ctx, &appctx.Context{ID: "lc-1", Status: lifecycle.StatusInstantiating}); err != nil {
		t.Fatal(err)
	}
	in := lifecycle.BeginInput{Target: dig, Op: lifecycle.OpInstantiate, ContextID: "new"}
	_, err := a.BeginOperation(ctx, in)
	var appErr *temporal.ApplicationError
	if !errors.As(err, &appErr) || appErr.Type() != lifecycle.ErrInvalidState || !appErr.NonRetryable() ||
		!strings.Contains(err.Error(), "which is not instantiated") {
		t.Fatalf("begin while the cloud is not ready: %v, want a non-retryable %s", err, lifecycle.ErrInvalidState)
	}
	if _, err := a.Contexts.Get(ctx, "new"); !errors.Is(err, appctx.ErrNotFound) {
		t.Fatalf("the refused instantiate left its context: %v", err)
	}

	if err := a.Contexts.SetStatus(ctx, "lc-1", lifecycle.StatusInstantiated, ""); err != nil {
		t.Fatal(err)
	}
	for attempt := 1; attempt <= 2; attempt++ {
		res, err := a.BeginOperation(ctx, in)
		if err != nil || res.ContextID != "new" || res.Revision != 1 {
			t.Fatalf("attempt %d: %+v, %v", attempt, res, err)
		}
	}
	c, err := a.Contexts.Get(ctx, "new")
	if err != nil || c.Namespace != "team" || c.Credentials != cloud.ID {
		t.Fatalf("context %+v, %v: want the cloud's namespace and issued credentials", c, err)
	}
	_, info, err := digstate.Load(ctx, a.Store, dig.ID())
	if err != nil || info.Current() != lifecycle.StateInstantiated || info.ContextID() != "new" || len(info.Actions) != 2 {
		t.Fatalf("state %+v, %v: want one Instantiated entry naming the new context", info, err)
	}
}

// A logical cloud is not terminated while a DIG in it is still terminating: its objects
// are being deleted with the cloud's credentials, in the cloud's namespace.
func TestCloudTerminateWaitsForATerminatingDIG(t *testing.T) {
	ctx := context.Background()
	a := newActivities(t, "cloudterminate")
	cloud := lifecycle.Target{Project: "p", LogicalCloud: "lc"}
	dig := lifecycle.Target{Project: "p", CompositeApp: "ca", Version: "v1", DIG: "d"}
	for _, d := range []*store.Doc{
		{ID: cloud.ID(), Kind: "logical-cloud", Name: "lc", Body: `{"metadata":{"name":"lc"},"spec":{"level":"0"}}`,
			State: history(lifecycle.StateInstantiated, "lc-1")},
		{ID: dig.ID(), Kind: model.KindDIG, Name: "d", Refs: []string{cloud.ID()}, Body: `{"metadata":{"name":"d"},"spec":{"logicalCloud":"lc"}}`,
			State: history(lifecycle.StateTerminated, "d-1")},
	} {
		if err := a.Store.Create(ctx, d); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []*appctx.Context{{ID: "lc-1", Status: lifecycle.StatusInstantiated}, {ID: "d-1", Status: lifecycle.StatusTerminating}} {
		if err := a.Contexts.Create(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	in := lifecycle.BeginInput{Target: cloud, Op: lifecycle.OpTerminate}
	if _, err := a.BeginOperation(ctx, in); err == nil || !strings.Contains(err.Error(), "still terminating") {
		t.Fatalf("cloud terminate while its DIG terminates: %v", err)
	}
	if err := a.Contexts.SetStatus(ctx, "d-1", lifecycle.StatusTerminated, ""); err != nil {
		t.Fatal(err)
	}
	if _, err := a.BeginOperation(ctx, in); err != nil {
		t.Fatalf("cloud terminate once its DIG is terminated: %v", err)
	}
}

// A terminate's begin writes the state, then the context's status. An attempt that died
// in between (the worker or the database killed) is carried on by the retry, never
// refused: a refusal left a logical cloud Terminated with its namespace on the clusters
// (make chaos). A terminate that ended is still refused.
func TestBeginTerminateCarriesOnAnAttemptThatDiedHalfWay(t *testing.T) {
	ctx := context.Background()
	a := newActivities(t, "terminatehalfway")
	cloud := lifecycle.Target{Project: "p", LogicalCloud: "lc"}
	if err := a.Store.Create(ctx, &store.Doc{ID: cloud.ID(), Kind: "logical-cloud", Name: "lc",
		Body: `{"metadata":{"name":"lc"},"spec":{"level":"1"}}`, State: history(lifecycle.StateTerminated, "lc-1")}); err != nil {
		t.Fatal(err)
	}
	if err := a.Contexts.Create(ctx, &appctx.Context{ID: "lc-1", Status: lifecycle.StatusInstantiated}); err != nil {
		t.Fatal(err)
	}
	in := lifecycle.BeginInput{Target: cloud, Op: lifecycle.OpTerminate}
	res, err := a.BeginOperation(ctx, in)
	if err != nil || res.ContextID != "lc-1" {
		t.Fatalf("the retry of a half-done begin: %+v, %v", res, err)
	}
	if c, err := a.Contexts.Get(ctx, "lc-1"); err != nil || c.Status != lifecycle.StatusTerminating {
		t.Fatalf("context %+v, %v: want Terminating", c, err)
	}
	_, info, err := digstate.Load(ctx, a.Store, cloud.ID())
	if err != nil || len(info.Actions) != 1 {
		t.Fatalf("state %+v, %v: want the one Terminated entry the first attempt wrote", info, err)
	}

	if err := a.Contexts.SetStatus(ctx, "lc-1", lifecycle.StatusTerminated, ""); err != nil {
		t.Fatal(err)
	}
	_, err = a.BeginOperation(ctx, in)
	var appErr *temporal.ApplicationError
	if !errors.As(err, &appErr) || appErr.Type() != lifecycle.ErrInvalidState {
		t.Fatalf("terminate of a terminated cloud: %v, want %s", err, lifecycle.ErrInvalidState)
	}
}
