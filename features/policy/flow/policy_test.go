package flow

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/temco/temco/contract"
	"github.com/temco/temco/internal/core/lifecycle"
)

var dig = lifecycle.Target{Project: "p", CompositeApp: "ca", Version: "v1", DIG: "d"}

// fakes are one test's activities and the user's workflow a decision starts.
type fakes struct {
	mu        sync.Mutex
	verdict   func(ev PolicyEvent) (PolicyVerdict, error)
	evaluated []string // the payload of each event evaluated
	records   []PolicyRecord
	started   []string // the user's workflow's argument, per run
	block     chan struct{}
}

func (f *fakes) env(t *testing.T) *testsuite.TestWorkflowEnvironment {
	t.Helper()
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	env.RegisterWorkflowWithOptions(Policy, workflow.RegisterOptions{Name: WorkflowPolicy})
	// The workflow intent's workflow: it runs until the test lets it end.
	env.RegisterWorkflowWithOptions(func(ctx workflow.Context, arg json.RawMessage) error {
		f.mu.Lock()
		f.started = append(f.started, string(arg))
		f.mu.Unlock()
		return workflow.Sleep(ctx, time.Hour)
	}, workflow.RegisterOptions{Name: "migrate"})
	lifecycle.Register(env, EvaluatePolicy, func(_ context.Context, in PolicyEvaluateInput) (PolicyVerdict, error) {
		if in.DIG != dig {
			return PolicyVerdict{}, errors.New("another DIG")
		}
		f.mu.Lock()
		defer f.mu.Unlock()
		f.evaluated = append(f.evaluated, string(in.Event.Payload))
		return f.verdict(in.Event)
	})
	lifecycle.Register(env, PolicyAction, func(_ context.Context, in PolicyActionInput) (contract.Workflow, error) {
		if in.Workflow != "migrate-intent" {
			return contract.Workflow{}, temporal.NewNonRetryableApplicationError("no workflow intent "+in.Workflow, lifecycle.ErrInvalidInput, nil)
		}
		return contract.Workflow{Name: in.Workflow, Type: "migrate", TaskQueue: "p", ID: "user/p/ca/v1/d/migrate-intent",
			Arg: json.RawMessage(`{"activityParams":{"migrate":{"app":"web"}}}`)}, nil
	})
	lifecycle.RegisterNoResult(env, RecordPolicy, func(_ context.Context, rec PolicyRecord) error {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.records = append(f.records, rec)
		return nil
	})
	return env
}

func event(intent, payload string) PolicyEvent {
	return PolicyEvent{Intent: intent, EventID: "memory_usage_bytes", Agent: "EMCOTEST", ContextID: "42", App: "web",
		Payload: json.RawMessage(payload)}
}

// above asks for action when the payload's value is over 100.
func above(ev PolicyEvent) (PolicyVerdict, error) {
	var p struct{ Value int }
	_ = json.Unmarshal(ev.Payload, &p)
	return PolicyVerdict{ActionRequired: p.Value > 100, Workflow: "migrate-intent", Engine: "embedded"}, nil
}

func TestDecisionsStartTheWorkflowIntentOncePerDecision(t *testing.T) {
	f := &fakes{verdict: above}
	env := f.env(t)
	env.RegisterDelayedCallback(func() { env.SignalWorkflow(SignalPolicyEvent, event("mig", `{"value":5}`)) }, time.Second)
	env.RegisterDelayedCallback(func() { env.SignalWorkflow(SignalPolicyEvent, event("mig", `{"value":500}`)) }, 2*time.Second)
	// The run it started still runs: the next decision starts nothing and says so.
	env.RegisterDelayedCallback(func() { env.SignalWorkflow(SignalPolicyEvent, event("mig", `{"value":600}`)) }, 3*time.Second)
	env.ExecuteWorkflow(WorkflowPolicy, PolicyInput{DIG: dig})
	if err := env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	if len(f.records) != 3 {
		t.Fatalf("%d decisions recorded, want 3: %+v", len(f.records), f.records)
	}
	got := []string{f.records[0].Decision.Outcome, f.records[1].Decision.Outcome, f.records[2].Decision.Outcome}
	if got[0] != "no action" || got[1] != "started" || got[2] != "not started: a run of user/p/ca/v1/d/migrate-intent is still running" {
		t.Errorf("outcomes %q", got)
	}
	if d := f.records[1].Decision; d.WorkflowID != "user/p/ca/v1/d/migrate-intent" || d.RunID == "" || !d.ActionRequired || d.Workflow != "migrate-intent" ||
		d.EventID != "memory_usage_bytes" || d.ContextID != "42" || f.records[1].Intent != "mig" {
		t.Errorf("the started decision: %+v", f.records[1])
	}
	if len(f.started) != 1 || f.started[0] != `{"activityParams":{"migrate":{"app":"web"}}}` {
		t.Errorf("the workflow intent's workflow ran with %q, want once with its params", f.started)
	}
}

func TestAMissingWorkflowIntentIsRecordedNotRetried(t *testing.T) {
	f := &fakes{verdict: func(PolicyEvent) (PolicyVerdict, error) {
		return PolicyVerdict{ActionRequired: true, Workflow: "gone", Engine: "embedded"}, nil
	}}
	env := f.env(t)
	env.RegisterDelayedCallback(func() { env.SignalWorkflow(SignalPolicyEvent, event("mig", `{}`)) }, time.Second)
	env.ExecuteWorkflow(WorkflowPolicy, PolicyInput{DIG: dig})
	if err := env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	if len(f.records) != 1 || f.records[0].Decision.Outcome != "not started" || f.records[0].Decision.Error != "no workflow intent gone" {
		t.Errorf("records %+v", f.records)
	}
}

func TestAFailedEvaluationIsRecordedAndTheNextEventEvaluated(t *testing.T) {
	f := &fakes{verdict: func(ev PolicyEvent) (PolicyVerdict, error) {
		if string(ev.Payload) == `{"bad":true}` {
			return PolicyVerdict{}, temporal.NewNonRetryableApplicationError("result.emco is not a verdict", lifecycle.ErrInvalidInput, nil)
		}
		return above(ev)
	}}
	env := f.env(t)
	env.RegisterDelayedCallback(func() { env.SignalWorkflow(SignalPolicyEvent, event("mig", `{"bad":true}`)) }, time.Second)
	env.RegisterDelayedCallback(func() { env.SignalWorkflow(SignalPolicyEvent, event("mig", `{"value":1}`)) }, 2*time.Second)
	env.ExecuteWorkflow(WorkflowPolicy, PolicyInput{DIG: dig})
	if err := env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	if len(f.records) != 2 || f.records[0].Decision.Outcome != "not evaluated" || f.records[0].Decision.Error != "result.emco is not a verdict" ||
		f.records[1].Decision.Outcome != "no action" {
		t.Errorf("records %+v", f.records)
	}
}

func TestPendingEventsOfOneSourceKeepOnlyTheNewest(t *testing.T) {
	f := &fakes{}
	var env *testsuite.TestWorkflowEnvironment
	// Three events come while the first is evaluated, two of the same intent, agent,
	// context, app and id: the newer replaces the older before either is evaluated.
	f.verdict = func(ev PolicyEvent) (PolicyVerdict, error) {
		if ev.Intent == "first" {
			env.SignalWorkflow(SignalPolicyEvent, event("mig", `{"value":1}`))
			env.SignalWorkflow(SignalPolicyEvent, event("other", `{"value":2}`))
			env.SignalWorkflow(SignalPolicyEvent, event("mig", `{"value":3}`))
		}
		return above(ev)
	}
	env = f.env(t)
	env.RegisterDelayedCallback(func() { env.SignalWorkflow(SignalPolicyEvent, event("first", `{"value":0}`)) }, time.Second)
	env.ExecuteWorkflow(WorkflowPolicy, PolicyInput{DIG: dig})
	if err := env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	if len(f.evaluated) != 3 || f.evaluated[1] != `{"value":3}` || f.evaluated[2] != `{"value":2}` {
		t.Errorf("evaluated %q, want the first, then the newest of mig, then other", f.evaluated)
	}
}

func TestADeletedIntentRecordsNothingAndIdleEnds(t *testing.T) {
	f := &fakes{verdict: func(PolicyEvent) (PolicyVerdict, error) {
		return PolicyVerdict{Gone: true}, nil
	}}
	env := f.env(t)
	env.RegisterDelayedCallback(func() { env.SignalWorkflow(SignalPolicyEvent, event("mig", `{}`)) }, time.Second)
	env.ExecuteWorkflow(WorkflowPolicy, PolicyInput{DIG: dig})
	if !env.IsWorkflowCompleted() || env.GetWorkflowError() != nil {
		t.Fatalf("completed %v, error %v", env.IsWorkflowCompleted(), env.GetWorkflowError())
	}
	if len(f.evaluated) != 1 || len(f.records) != 0 {
		t.Errorf("evaluated %d, recorded %d; want 1 and 0", len(f.evaluated), len(f.records))
	}
}

func TestContinueAsNewCarriesPendingEvents(t *testing.T) {
	f := &fakes{verdict: above}
	env := f.env(t)
	env.RegisterDelayedCallback(func() {
		for i := 0; i <= evaluationsPerRun; i++ {
			ev := event("mig", `{"value":1}`)
			ev.App = "app" + string(rune('a'+i%26)) + string(rune('a'+i/26))
			env.SignalWorkflow(SignalPolicyEvent, ev)
		}
		env.SignalWorkflow(SignalPolicyEvent, event("last", `{"value":1}`))
	}, time.Second)
	env.ExecuteWorkflow(WorkflowPolicy, PolicyInput{DIG: dig})
	var can *workflow.ContinueAsNewError
	if err := env.GetWorkflowError(); !errors.As(err, &can) {
		t.Fatalf("error %v, want a continue-as-new", err)
	}
	var next PolicyInput
	if err := json.Unmarshal(can.Input.Payloads[0].Data, &next); err != nil {
		t.Fatal(err)
	}
	if len(f.evaluated) != evaluationsPerRun || len(next.Pending) != 2 || next.Pending[1].Intent != "last" {
		t.Errorf("evaluated %d, carried %d pending (%+v)", len(f.evaluated), len(next.Pending), next.Pending)
	}
}
