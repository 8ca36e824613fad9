package policy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/worker"

	"github.com/temco/temco/internal/adapters/egress"
	"github.com/temco/temco/internal/adapters/policyengine"
	"github.com/temco/temco/internal/adapters/policyevents"
	"github.com/temco/temco/internal/adapters/sandbox"
	"github.com/temco/temco/internal/core/appctx"
	"github.com/temco/temco/internal/core/lifecycle"
	"github.com/temco/temco/internal/core/model"
	"github.com/temco/temco/internal/core/store"
	"github.com/temco/temco/internal/dev/devstack"
	"github.com/temco/temco/internal/dev/testenv"
)

var ferret *devstack.FerretDB

// TestMain lets this test binary be the sandbox's child (policies evaluated as in the
// worker), then starts FerretDB.
func TestMain(m *testing.M) {
	sandbox.ChildMain(policyengine.SandboxJob)
	testenv.MainWithFerretDB(m, &ferret)
}

var dig = lifecycle.Target{Project: "p", CompositeApp: "ca", Version: "v1", DIG: "d"}

// signals records the events handed to Policy workflows.
type signals struct {
	mu  sync.Mutex
	got []lifecycle.PolicyEvent
}

func (s *signals) signal(_ context.Context, d lifecycle.Target, ev lifecycle.PolicyEvent) error {
	if d != dig {
		return fmt.Errorf("signalled %s", d)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.got = append(s.got, ev)
	return nil
}

func (s *signals) events() []lifecycle.PolicyEvent {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]lifecycle.PolicyEvent(nil), s.got...)
}

// newActivities stores DIG d with context "c1" (instance of "c2"), the project's EMCO
// policy, workflow intent mig and policy intents: "embedded" (any agent), "agent-b" (agent
// B only) and "external" (an OPA server at engine, "" for none).
func newActivities(t *testing.T, engine string) (*Activities, *signals) {
	t.Helper()
	ctx := context.Background()
	db := testenv.Database(t, ferret, strings.ReplaceAll(t.Name(), "/", "_"))
	s := &signals{}
	a := &Activities{Signal: s.signal, Engines: egress.MustParse("127.0.0.1"), OwnQueue: "temco"}
	var err error
	if a.Store, err = store.New(ctx, db); err != nil {
		t.Fatal(err)
	}
	if a.Contexts, err = appctx.New(ctx, db); err != nil {
		t.Fatal(err)
	}
	intent := func(name, engineURL, agent string) *store.Doc {
		body, _ := json.Marshal(map[string]any{"metadata": map[string]any{"name": name}, "spec": map[string]any{
			"policy": map[string]any{"engineUrl": engineURL, "policyName": "data"}, "actor": "temporal",
			"actorArg": map[string]any{"workFlowName": "mig"}, "event": map[string]any{"id": "memory_usage_bytes", "agent": agent}}})
		return &store.Doc{ID: dig.ID() + "/policy-intents/" + name, Parent: dig.ID(), Kind: model.KindPolicyIntent, Name: name, Body: string(body)}
	}
	docs := []*store.Doc{
		{ID: "/projects/p", Kind: model.KindProject, Name: "p", Body: `{"metadata":{"name":"p"},"spec":{}}`},
		{ID: "/projects/p/policies/migrate", Parent: "/projects/p", Kind: model.KindPolicy, Name: "migrate",
			Body: mustJSON(map[string]any{"metadata": map[string]any{"name": "migrate"}, "spec": map[string]any{"rego": testenv.EMCOMemoryPolicy}})},
		{ID: dig.ID(), Kind: model.KindDIG, Name: "d", Body: `{"metadata":{"name":"d"},"spec":{}}`},
		{ID: dig.ID() + "/temporal-workflow-intents/mig", Parent: dig.ID(), Kind: "temporal-workflow-intent", Name: "mig",
			Body: `{"metadata":{"name":"mig"},"spec":{"workflowClient":{},"temporal":{"workflowClientName":"migrate","workflowStartOptions":{"TaskQueue":"p","WorkflowRunTimeout":60000000000},"workflowParams":{"activityParams":{"migrate":{"app":"web"}}}}}}`},
		intent("embedded", "", ""), intent("agent-b", "", "B"),
	}
	if engine != "" {
		docs = append(docs, intent("external", engine, ""))
	}
	for _, d := range docs {
		d.LooseRefs = true
		if err := a.Store.Create(ctx, d); err != nil {
			t.Fatalf("%s: %v", d.ID, err)
		}
	}
	if err := a.Contexts.Create(ctx, &appctx.Context{ID: "c2", DIG: dig.ID(), Instance: "c1", Revision: 2}); err != nil {
		t.Fatal(err)
	}
	return a, s
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func memory(value string) lifecycle.PolicyEvent {
	return lifecycle.PolicyEvent{Intent: "embedded", EventID: "memory_usage_bytes", Agent: "EMCOTEST", ContextID: "c1", App: "web",
		AgentSpec: json.RawMessage(`{"agentId":"EMCOTEST"}`),
		Payload:   json.RawMessage(`{"metric":"memory_usage_bytes","value":{"items":[{"value":"` + value + `"}]}}`)}
}

func TestEmbeddedEngineEvaluatesEMCOsExamplePolicy(t *testing.T) {
	a, _ := newActivities(t, "")
	ctx := context.Background()
	v, err := a.EvaluatePolicy(ctx, lifecycle.PolicyEvaluateInput{DIG: dig, Event: memory("1500000000")})
	if err != nil || !v.ActionRequired || v.Workflow != "mig" || v.Engine != "embedded" {
		t.Errorf("over the threshold: %+v %v", v, err)
	}
	if v, err := a.EvaluatePolicy(ctx, lifecycle.PolicyEvaluateInput{DIG: dig, Event: memory("10")}); err != nil || v.ActionRequired {
		t.Errorf("under it: %+v %v", v, err)
	}
	gone := memory("1")
	gone.Intent = "deleted"
	if v, err := a.EvaluatePolicy(ctx, lifecycle.PolicyEvaluateInput{DIG: dig, Event: gone}); err != nil || !v.Gone {
		t.Errorf("a deleted intent: %+v %v", v, err)
	}
	bad := memory("1")
	bad.Payload = json.RawMessage(`not json`)
	if _, err := a.EvaluatePolicy(ctx, lifecycle.PolicyEvaluateInput{DIG: dig, Event: bad}); !nonRetryable(err) {
		t.Errorf("a payload that is not JSON: %v, want a non-retryable error", err)
	}
}

func nonRetryable(err error) bool {
	var app *temporal.ApplicationError
	return errors.As(err, &app) && app.NonRetryable()
}

func TestExternalEngineIsAskedAsEMCODoesAndOnlyWhenAllowed(t *testing.T) {
	var got struct {
		Input struct {
			IntentSpec map[string]any  `json:"intentSpec"`
			AgentSpec  map[string]any  `json:"agentSpec"`
			Event      json.RawMessage `json:"event"`
		} `json:"input"`
	}
	var path string
	opa := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		path = r.URL.Path
		body, _ := io.ReadAll(r.Body)
		_ = json.Unmarshal(body, &got)
		_, _ = w.Write([]byte(`{"result":{"emco":{"actionRequired":true,"workflowName":"other"}}}`))
	}))
	defer opa.Close()
	a, _ := newActivities(t, strings.TrimPrefix(opa.URL, "http://")+"/v1")
	ev := memory("1")
	ev.Intent = "external"
	v, err := a.EvaluatePolicy(context.Background(), lifecycle.PolicyEvaluateInput{DIG: dig, Event: ev})
	if err != nil || !v.ActionRequired || v.Workflow != "other" || v.Engine != opa.URL+"/v1/data" {
		t.Fatalf("verdict %+v %v", v, err)
	}
	if path != "/v1/data" || got.Input.IntentSpec["policyIntentID"] != "external" || got.Input.IntentSpec["project"] != "p" ||
		got.Input.IntentSpec["deploymentIntentGroup"] != "d" || got.Input.AgentSpec["agentId"] != "EMCOTEST" ||
		!strings.Contains(string(got.Input.Event), "memory_usage_bytes") {
		t.Errorf("the engine was asked %s with %+v", path, got.Input)
	}
	a.Engines = egress.MustParse("opa.example.com")
	if _, err := a.EvaluatePolicy(context.Background(), lifecycle.PolicyEvaluateInput{DIG: dig, Event: ev}); !nonRetryable(err) ||
		!strings.Contains(err.Error(), "not on the hosts an admin allowed") {
		t.Errorf("an engine no longer allowed: %v", err)
	}
}

func TestPolicyActionIsTheWorkflowIntentsStart(t *testing.T) {
	a, _ := newActivities(t, "")
	w, err := a.PolicyAction(context.Background(), lifecycle.PolicyActionInput{DIG: dig, Workflow: "mig"})
	if err != nil || w.Type != "migrate" || w.TaskQueue != "p" || w.ID != "user/p/ca/v1/d/mig" || w.RunTimeout != time.Minute ||
		string(w.Arg) != `{"activityParams":{"migrate":{"app":"web"}}}` {
		t.Errorf("workflow %+v %v", w, err)
	}
	if _, err := a.PolicyAction(context.Background(), lifecycle.PolicyActionInput{DIG: dig, Workflow: "none"}); !nonRetryable(err) {
		t.Errorf("a missing workflow intent: %v", err)
	}
	a.OwnQueue = "p" // the intent's queue is now temco's: refused
	if _, err := a.PolicyAction(context.Background(), lifecycle.PolicyActionInput{DIG: dig, Workflow: "mig"}); !nonRetryable(err) ||
		!strings.Contains(err.Error(), "temco's own task queue") {
		t.Errorf("temco's queue: %v", err)
	}
}

func TestRecordKeepsTheLastDecisions(t *testing.T) {
	a, _ := newActivities(t, "")
	ctx := context.Background()
	for i := range lifecycle.PolicyDecisionsKept + 5 {
		d := lifecycle.PolicyDecision{EventID: fmt.Sprint(i), ActionRequired: i%2 == 0, Outcome: "started"}
		if err := a.RecordPolicy(ctx, lifecycle.PolicyRecord{DIG: dig, Intent: "embedded", Decision: d}); err != nil {
			t.Fatal(err)
		}
	}
	d, err := a.Store.Get(ctx, dig.ID()+"/policy-intents/embedded")
	if err != nil {
		t.Fatal(err)
	}
	var st lifecycle.PolicyStatus
	if err := json.Unmarshal([]byte(d.State), &st); err != nil {
		t.Fatal(err)
	}
	if st.Evaluations != 55 || st.Actions != 28 || len(st.Decisions) != 28 || st.Last.EventID != "54" {
		t.Errorf("record: %d evaluations, %d actions, %d decisions, last %+v", st.Evaluations, st.Actions, len(st.Decisions), st.Last)
	}
	if err := a.RecordPolicy(ctx, lifecycle.PolicyRecord{DIG: dig, Intent: "deleted"}); err != nil {
		t.Errorf("a deleted intent's record: %v", err)
	}
}

func TestListenerHandsEventsToTheirIntents(t *testing.T) {
	a, sig := newActivities(t, "")
	addr, events := testenv.PolicyAgent(t)
	ctx := context.Background()
	if err := a.Store.Create(ctx, &store.Doc{ID: "/policy/agents/sampleagent", Kind: model.KindPolicyAgent, Name: "sampleagent",
		Body: mustJSON(map[string]any{"id": "sampleagent", "addr": addr})}); err != nil {
		t.Fatal(err)
	}
	metric := func(agentID, ctxID, payload string) policyevents.Event {
		return policyevents.Event{EventID: "memory_usage_bytes", AgentID: agentID, ContextID: ctxID, AppName: "web",
			AgentSpec: json.RawMessage(`{"agentId":"` + agentID + `"}`), MetricList: []byte(payload)}
	}
	events <- metric("A", "c1", `{"v":1}`)       // embedded only (agent-b wants B)
	events <- metric("B", "c2", `{"v":2}`)       // both, through a later context of the DIG
	events <- metric("A", "unknown", `{"v":3}`)  // no such context: unmatched
	events <- metric("A", "c1", `not json`)      // dropped
	events <- metric("A", "c1", `{"last":true}`) // embedded
	var s testsuite.WorkflowTestSuite
	env := s.NewTestActivityEnvironment()
	env.RegisterActivity(a)
	done := make(chan error, 1)
	actx, cancel := context.WithCancel(ctx)
	env.SetTestTimeout(time.Minute)
	env.SetWorkerOptions(worker.Options{BackgroundActivityContext: actx})
	go func() {
		_, err := env.ExecuteActivity(lifecycle.ActivityListenPolicyAgent, lifecycle.PolicyAgentInput{Name: "sampleagent"})
		done <- err
	}()
	deadline := time.Now().Add(20 * time.Second)
	for len(sig.events()) < 4 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond) // polling the fake's record, with a deadline
	}
	cancel()
	<-done
	got := sig.events()
	var seen []string
	for _, ev := range got {
		seen = append(seen, ev.Intent+":"+string(ev.Payload))
	}
	want := []string{`embedded:{"v":1}`, `agent-b:{"v":2}`, `embedded:{"v":2}`, `embedded:{"last":true}`}
	if strings.Join(seen, " ") != strings.Join(want, " ") {
		t.Errorf("handed %v, want %v", seen, want)
	}
	if len(got) > 0 && (got[0].Source != "sampleagent" || got[0].ContextID != "c1" || got[0].App != "web" || string(got[0].AgentSpec) != `{"agentId":"A"}`) {
		t.Errorf("event %+v", got[0])
	}
	d, err := a.Store.Get(ctx, "/policy/agents/sampleagent")
	if err != nil {
		t.Fatal(err)
	}
	var st lifecycle.PolicyAgentStatus
	if err := json.Unmarshal([]byte(d.State), &st); err != nil {
		t.Fatalf("status %q: %v", d.State, err)
	}
	if st.Addr != addr || st.Events != 5 || st.Delivered != 4 || st.Unmatched != 1 || st.Dropped != 1 || st.LastEvent.IsZero() {
		t.Errorf("agent status %+v", st)
	}
}

func TestADeregisteredAgentIsGone(t *testing.T) {
	a, _ := newActivities(t, "")
	var s testsuite.WorkflowTestSuite
	env := s.NewTestActivityEnvironment()
	env.RegisterActivity(a)
	v, err := env.ExecuteActivity(lifecycle.ActivityListenPolicyAgent, lifecycle.PolicyAgentInput{Name: "none"})
	var out lifecycle.PolicyListened
	if err != nil || v.Get(&out) != nil || !out.Gone {
		t.Errorf("listened %+v, %v", out, err)
	}
}
