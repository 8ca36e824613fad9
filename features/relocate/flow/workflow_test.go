package flow

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"github.com/temco/temco/internal/core/lifecycle"
)

var dig = lifecycle.Target{Project: "p", CompositeApp: "ca", Version: "v1", DIG: "d"}

func params(kv ...string) Input {
	p := map[string]string{"project": "p", "compositeApp": "ca", "compositeAppVersion": "v1", "deploymentIntentGroup": "d",
		"app": "web", "from": "local+c1", "to": "local+c2"}
	for i := 0; i+1 < len(kv); i += 2 {
		p[kv[i]] = kv[i+1]
	}
	return Input{ActivityParams: map[string]map[string]string{ParamsKey: p}}
}

func TestParseInput(t *testing.T) {
	req, timeout, err := ParseInput(params())
	want := RelocateRequest{DIG: dig, App: "web", From: "local+c1", To: "local+c2"}
	if err != nil || req != want || timeout != DefaultReadyTimeout {
		t.Errorf("%+v, %s, %v; want %+v, %s", req, timeout, err, want, DefaultReadyTimeout)
	}
	if _, timeout, err := ParseInput(params("readyTimeout", "90s")); err != nil || timeout != 90*time.Second {
		t.Errorf("readyTimeout 90s: %s, %v", timeout, err)
	}
	for _, c := range []struct {
		in   Input
		want string
	}{
		{Input{}, "workflowParams.activityParams.relocate is missing"},
		{params("app", "", "to", ""), "lacks [app to]"},
		{params("from", "c1"), `from "c1" is not a cluster: write provider+cluster`},
		{params("to", "local+"), `to "local+" is not a cluster`},
		{params("to", "local+c1"), "from and to are both local+c1"},
		{params("readyTimeout", "soon"), `readyTimeout "soon" is not a positive duration`},
		{params("readyTimeout", "-1m"), "is not a positive duration"},
	} {
		_, _, err := ParseInput(c.in)
		var appErr *temporal.ApplicationError
		if !errors.As(err, &appErr) || appErr.Type() != lifecycle.ErrInvalidInput || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want an InvalidInput saying %q", c.in.ActivityParams, err, c.want)
		}
	}
}

func TestPlacements(t *testing.T) {
	for _, c := range []struct {
		now, both, final []string
		err              string
	}{
		{now: []string{"p+c1"}, both: []string{"p+c1", "p+c2"}, final: []string{"p+c2"}},
		{now: []string{"p+c1", "p+c3"}, both: []string{"p+c1", "p+c2", "p+c3"}, final: []string{"p+c2", "p+c3"}},
		{now: []string{"p+c3"}, err: "does not run on p+c1"},
		{now: []string{"p+c1", "p+c2"}, err: "runs on p+c2 already"},
	} {
		both, final, err := Placements(c.now, "p+c1", "p+c2")
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%v: %v, want %q", c.now, err, c.err)
			}
			continue
		}
		if err != nil || !slices.Equal(both, c.both) || !slices.Equal(final, c.final) {
			t.Errorf("%v: %v then %v (%v), want %v then %v", c.now, both, final, err, c.both, c.final)
		}
	}
}

// fakes are the activities of one run.
type fakes struct {
	clusters []string // where the app runs
	placed   [][]string
	updates  []string
	awaited  []AwaitAppReadyInput
	update   func(n int) error // the nth update's answer (from 0)
	ready    error
	steps    []string // answers to the step query during the wait
}

func run(t *testing.T, f *fakes, in Input) (Progress, error) {
	t.Helper()
	var s testsuite.WorkflowTestSuite
	s.SetLogger(log.NewStructuredLogger(slog.New(slog.DiscardHandler)))
	env := s.NewTestWorkflowEnvironment()
	lifecycle.Register(env, PlanRelocation, func(_ context.Context, req RelocateRequest) (RelocationPlan, error) {
		return RelocationPlan{ContextID: "c0", Clusters: f.clusters}, nil
	})
	lifecycle.RegisterNoResult(env, PlaceApp, func(_ context.Context, in PlaceAppInput) error {
		if in.DIG != dig || in.App != "web" {
			t.Errorf("placed %+v", in)
		}
		f.placed = append(f.placed, in.Clusters)
		return nil
	})
	lifecycle.RegisterNoResult(env, lifecycle.UpdateDIG, func(_ context.Context, in lifecycle.UpdateDIGInput) error {
		f.updates = append(f.updates, in.ContextID)
		if f.update != nil {
			return f.update(len(f.updates) - 1)
		}
		return nil
	})
	lifecycle.RegisterNoResult(env, AwaitAppReady, func(context.Context, AwaitAppReadyInput) error { return nil })
	env.OnActivity(AwaitAppReady.Name(), mock.Anything, mock.Anything).After(time.Minute).Return(
		func(_ context.Context, in AwaitAppReadyInput) error {
			f.awaited = append(f.awaited, in)
			return f.ready
		})
	env.RegisterDelayedCallback(func() {
		v, err := env.QueryWorkflow(QueryStep)
		if err != nil {
			t.Errorf("query step: %v", err)
			return
		}
		var p Progress
		if err := v.Get(&p); err != nil {
			t.Error(err)
		}
		f.steps = append(f.steps, p.Step)
	}, 30*time.Second)
	env.ExecuteWorkflow(Relocate, in)
	if !env.IsWorkflowCompleted() {
		t.Fatal("workflow did not complete")
	}
	var p Progress
	if err := env.GetWorkflowError(); err != nil {
		return p, err
	}
	if err := env.GetWorkflowResult(&p); err != nil {
		t.Fatal(err)
	}
	return p, nil
}

// The app is placed on both clusters, waited for on the new one, then placed on the new
// one alone: two DIG updates, and the step query follows.
func TestRelocateAddsWaitsThenRemoves(t *testing.T) {
	f := &fakes{clusters: []string{"local+c1", "local+c3"}}
	p, err := run(t, f, params("readyTimeout", "3m"))
	if err != nil {
		t.Fatal(err)
	}
	if want := [][]string{{"local+c1", "local+c2", "local+c3"}, {"local+c2", "local+c3"}}; !slices.EqualFunc(f.placed, want, slices.Equal) {
		t.Errorf("placed %v, want %v", f.placed, want)
	}
	if len(f.updates) != 2 || f.updates[0] == f.updates[1] {
		t.Fatalf("updates %v", f.updates)
	}
	if len(f.awaited) != 1 || f.awaited[0].ContextID != f.updates[0] || f.awaited[0].Cluster != "local+c2" || f.awaited[0].Timeout != 3*time.Minute {
		t.Errorf("awaited %+v", f.awaited)
	}
	if p.Step != StepDone || len(p.Updates) != 2 || p.Updates[1] != dig.OpWorkflowID(lifecycle.OpUpdate, f.updates[1]) {
		t.Errorf("result %+v", p)
	}
	if !slices.Equal(f.steps, []string{StepAwaitReady}) {
		t.Errorf("step during the wait: %v", f.steps)
	}
}

// An app that is not Ready in time is placed back where it ran, and the workflow fails.
func TestAnAppNotReadyIsPlacedBack(t *testing.T) {
	f := &fakes{clusters: []string{"local+c1"},
		ready: temporal.NewNonRetryableApplicationError("web is not Ready on local+c2 after 10m0s", ErrNotReady, nil)}
	_, err := run(t, f, params())
	var appErr *temporal.ApplicationError
	if !errors.As(err, &appErr) || appErr.Type() != ErrNotReady || !strings.Contains(err.Error(), "web placed back on [local+c1]") {
		t.Fatalf("workflow error %v", err)
	}
	if want := [][]string{{"local+c1", "local+c2"}, {"local+c1"}}; !slices.EqualFunc(f.placed, want, slices.Equal) || len(f.updates) != 2 {
		t.Errorf("placed %v, updates %v; want %v", f.placed, f.updates, want)
	}
}

// An update that fails on the new cluster is undone the same way, without waiting.
func TestAFailedAddIsPlacedBack(t *testing.T) {
	f := &fakes{clusters: []string{"local+c1"}, update: func(n int) error {
		if n == 0 {
			return temporal.NewNonRetryableApplicationError("the update ended UpdateFailed", lifecycle.ErrApplyFailed, nil)
		}
		return nil
	}}
	_, err := run(t, f, params())
	if err == nil || !strings.Contains(err.Error(), "UpdateFailed") || len(f.awaited) != 0 {
		t.Fatalf("workflow error %v, awaited %v", err, f.awaited)
	}
	if want := [][]string{{"local+c1", "local+c2"}, {"local+c1"}}; !slices.EqualFunc(f.placed, want, slices.Equal) {
		t.Errorf("placed %v, want %v", f.placed, want)
	}
}

// Once Ready on the new cluster, a failed removal from the old one is not undone.
func TestAFailedRemovalIsNotUndone(t *testing.T) {
	f := &fakes{clusters: []string{"local+c1"}, update: func(n int) error {
		if n == 1 {
			return temporal.NewNonRetryableApplicationError("the update ended UpdateFailed", lifecycle.ErrApplyFailed, nil)
		}
		return nil
	}}
	_, err := run(t, f, params())
	if err == nil || !strings.Contains(err.Error(), "web is Ready on local+c2, but its removal from local+c1 failed") {
		t.Fatalf("workflow error %v", err)
	}
	if len(f.placed) != 2 {
		t.Errorf("placed %v", f.placed)
	}
}

// A move already made is done at once; a bad input fails before any activity.
func TestNothingToDo(t *testing.T) {
	f := &fakes{clusters: []string{"local+c2"}}
	if p, err := run(t, f, params()); err != nil || p.Step != StepDone || len(f.placed) != 0 {
		t.Errorf("already relocated: %+v, %v, placed %v", p, err, f.placed)
	}
	f = &fakes{clusters: []string{"local+c1"}}
	if _, err := run(t, f, params("to", "nope")); err == nil || len(f.placed) != 0 {
		t.Errorf("bad input: %v, placed %v", err, f.placed)
	}
}
