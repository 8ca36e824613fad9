package work

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

	"github.com/temco/temco/features/policy/flow"
	"github.com/temco/temco/internal/adapters/egress"
	"github.com/temco/temco/internal/adapters/policyengine"
	"github.com/temco/temco/internal/adapters/policyevents"
	"github.com/temco/temco/internal/adapters/sandbox"
	"github.com/temco/temco/internal/core/appctx"
	"github.com/temco/temco/internal/core/digstate"
	"github.com/temco/temco/internal/core/lifecycle"
	"github.com/temco/temco/internal/core/model"
	"github.com/temco/temco/internal/core/seal"
	"github.com/temco/temco/internal/core/store"
	"github.com/temco/temco/internal/dev/devstack"
	"github.com/temco/temco/internal/dev/testenv"
	"github.com/temco/temco/internal/dev/testenv/poll"
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
	got []flow.PolicyEvent
}

func (s *signals) signal(_ context.Context, d lifecycle.Target, ev flow.PolicyEvent) error {
	if d != dig {
		return fmt.Errorf("signalled %s", d)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.got = append(s.got, ev)
	return nil
}

// atLeast is a poll check: n events were handed over.
func (s *signals) atLeast(n int) func(context.Context) error {
	return func(context.Context) error {
		if got := len(s.events()); got < n {
			return fmt.Errorf("%d events", got)
		}
		return nil
	}
}

func (s *signals) events() []flow.PolicyEvent {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]flow.PolicyEvent(nil), s.got...)
}

// other is a DIG of the same project placed on another cluster than the agents'.
var other = lifecycle.Target{Project: "p", CompositeApp: "ca", Version: "v1", DIG: "other"}

// newActivities stores DIG d, whose current context "c2" (an update of instance "c1")
// places web on cluster prov+edge1 and db on prov+edge2, and DIG other, whose context
// "c3" places web on prov+edge2; the project's EMCO policy, workflow intent mig and d's
// policy intents: "embedded" (any agent), "from-sampleagent" (registered agent
// sampleagent only), "from-other" (agent other only) and "external" (an OPA server at
// engine, "" for none); other's policy intent "embedded".
func newActivities(t *testing.T, engine string) (*Activities, *signals) {
	t.Helper()
	ctx := context.Background()
	db := testenv.Database(t, ferret, strings.ReplaceAll(t.Name(), "/", "_"))
	s := &signals{}
	keys, err := seal.NewKeyring([]string{"test"}, [][]byte{make([]byte, 32)})
	if err != nil {
		t.Fatal(err)
	}
	a := &Activities{Signal: s.signal, Engines: egress.MustParse("127.0.0.1"), OwnQueue: "temco", Keys: keys}
	if a.Store, err = store.New(ctx, db); err != nil {
		t.Fatal(err)
	}
	if a.Contexts, err = appctx.New(ctx, db); err != nil {
		t.Fatal(err)
	}
	intentOf := func(d lifecycle.Target, name, engineURL, agent string) *store.Doc {
		body, _ := json.Marshal(map[string]any{"metadata": map[string]any{"name": name}, "spec": map[string]any{
			"policy": map[string]any{"engineUrl": engineURL, "policyName": "data"}, "actor": "temporal",
			"actorArg": map[string]any{"workFlowName": "mig"}, "event": map[string]any{"id": "memory_usage_bytes", "agent": agent}}})
		return &store.Doc{ID: d.ID() + "/policy-intents/" + name, Parent: d.ID(), Kind: model.KindPolicyIntent, Name: name, Body: string(body)}
	}
	intent := func(name, engineURL, agent string) *store.Doc { return intentOf(dig, name, engineURL, agent) }
	history := func(ctxID string) string {
		return digstate.Encode(lifecycle.StateInfo{Actions: []lifecycle.Action{{State: lifecycle.StateInstantiated, ContextID: ctxID, Revision: 1}}})
	}
	docs := []*store.Doc{
		{ID: "/projects/p", Kind: model.KindProject, Name: "p", Body: `{"metadata":{"name":"p"},"spec":{}}`},
		{ID: "/projects/p/policies/migrate", Parent: "/projects/p", Kind: model.KindPolicy, Name: "migrate",
			Body: mustJSON(map[string]any{"metadata": map[string]any{"name": "migrate"}, "spec": map[string]any{"rego": testenv.EMCOMemoryPolicy}})},
		{ID: dig.ID(), Kind: model.KindDIG, Name: "d", Body: `{"metadata":{"name":"d"},"spec":{}}`, State: history("c2")},
		{ID: other.ID(), Kind: model.KindDIG, Name: "other", Body: `{"metadata":{"name":"other"},"spec":{}}`, State: history("c3")},
		intentOf(other, "embedded", "", ""),
		{ID: dig.ID() + "/temporal-workflow-intents/mig", Parent: dig.ID(), Kind: "temporal-workflow-intent", Name: "mig",
			Body: `{"metadata":{"name":"mig"},"spec":{"workflowClient":{},"temporal":{"workflowClientName":"migrate","workflowStartOptions":{"TaskQueue":"p","WorkflowRunTimeout":60000000000},"workflowParams":{"activityParams":{"migrate":{"app":"web"}}}}}}`},
		intent("embedded", "", ""), intent("from-sampleagent", "", "sampleagent"), intent("from-other", "", "other"),
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
	if err := a.Contexts.Create(ctx, &appctx.Context{ID: "c3", DIG: other.ID(), Instance: "c3", Revision: 1}); err != nil {
		t.Fatal(err)
	}
	place := func(ctxID string, placed ...*appctx.ClusterApp) {
		if err := a.Contexts.PutPlacement(ctx, ctxID, placed, map[string]int{}); err != nil {
			t.Fatal(err)
		}
	}
	place("c2", &appctx.ClusterApp{App: "web", Cluster: "prov+edge1"}, &appctx.ClusterApp{App: "db", Cluster: "prov+edge2"})
	place("c3", &appctx.ClusterApp{App: "web", Cluster: "prov+edge2"})
	return a, s
}

// registerAgent stores agent name at addr, reporting on cluster prov+edge1, with its
// token sealed as the api seals it ("" for none) and tls (nil for plain gRPC).
func registerAgent(t *testing.T, a *Activities, name, addr, token string, tls map[string]any) {
	t.Helper()
	id := flow.PolicyAgentInput{Name: name}.ID()
	body := map[string]any{"id": name, "addr": addr, "clusters": []any{map[string]any{"clusterProvider": "prov", "cluster": "edge1"}}}
	if tls != nil {
		body["tls"] = tls
	}
	d := &store.Doc{ID: id, Kind: model.KindPolicyAgent, Name: name}
	if token != "" {
		body["token"] = "********"
		var err error
		if d.Secret, err = a.Keys.Seal([]byte(mustJSON(map[string]string{"Token": token})), []byte(id)); err != nil {
			t.Fatal(err)
		}
	}
	d.Body = mustJSON(body)
	if err := a.Store.Create(context.Background(), d); err != nil {
		t.Fatal(err)
	}
}

// agentStatus is what the agent's listener last recorded.
func agentStatus(t *testing.T, a *Activities, name string) flow.PolicyAgentStatus {
	t.Helper()
	d, err := a.Store.Get(context.Background(), flow.PolicyAgentInput{Name: name}.ID())
	if err != nil {
		t.Fatal(err)
	}
	var st flow.PolicyAgentStatus
	if d.State != "" {
		if err := json.Unmarshal([]byte(d.State), &st); err != nil {
			t.Fatalf("status %q: %v", d.State, err)
		}
	}
	return st
}

// listen runs the agent's listener until stop is called; its error comes on the channel.
func listen(t *testing.T, a *Activities, name string) (stop func(), done <-chan error) {
	t.Helper()
	var s testsuite.WorkflowTestSuite
	env := s.NewTestActivityEnvironment()
	env.RegisterActivity(a)
	ch := make(chan error, 1)
	actx, cancel := context.WithCancel(context.Background())
	env.SetTestTimeout(time.Minute)
	env.SetWorkerOptions(worker.Options{BackgroundActivityContext: actx})
	go func() {
		_, err := env.ExecuteActivity(flow.ListenPolicyAgent.Name(), flow.PolicyAgentInput{Name: name})
		ch <- err
	}()
	return cancel, ch
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func memory(value string) flow.PolicyEvent {
	return flow.PolicyEvent{Intent: "embedded", EventID: "memory_usage_bytes", Agent: "EMCOTEST", ContextID: "c1", App: "web",
		AgentSpec: json.RawMessage(`{"agentId":"EMCOTEST"}`),
		Payload:   json.RawMessage(`{"metric":"memory_usage_bytes","value":{"items":[{"value":"` + value + `"}]}}`)}
}

func TestEmbeddedEngineEvaluatesEMCOsExamplePolicy(t *testing.T) {
	a, _ := newActivities(t, "")
	ctx := context.Background()
	v, err := a.EvaluatePolicy(ctx, flow.PolicyEvaluateInput{DIG: dig, Event: memory("1500000000")})
	if err != nil || !v.ActionRequired || v.Workflow != "mig" || v.Engine != "embedded" {
		t.Errorf("over the threshold: %+v %v", v, err)
	}
	if v, err := a.EvaluatePolicy(ctx, flow.PolicyEvaluateInput{DIG: dig, Event: memory("10")}); err != nil || v.ActionRequired {
		t.Errorf("under it: %+v %v", v, err)
	}
	gone := memory("1")
	gone.Intent = "deleted"
	if v, err := a.EvaluatePolicy(ctx, flow.PolicyEvaluateInput{DIG: dig, Event: gone}); err != nil || !v.Gone {
		t.Errorf("a deleted intent: %+v %v", v, err)
	}
	bad := memory("1")
	bad.Payload = json.RawMessage(`not json`)
	if _, err := a.EvaluatePolicy(ctx, flow.PolicyEvaluateInput{DIG: dig, Event: bad}); !nonRetryable(err) {
		t.Errorf("a payload that is not JSON: %v, want a non-retryable error", err)
	}
}

// An intent naming an agent is evaluated on the events its registered agent delivered,
// whatever agent id they claim.
func TestEvaluationMatchesTheRegisteredAgent(t *testing.T) {
	a, _ := newActivities(t, "")
	ctx := context.Background()
	ev := memory("1500000000")
	ev.Intent, ev.Agent, ev.Source = "from-sampleagent", "sampleagent", "other"
	if v, err := a.EvaluatePolicy(ctx, flow.PolicyEvaluateInput{DIG: dig, Event: ev}); err != nil || !v.Gone {
		t.Errorf("claiming the agent, delivered by another: %+v %v, want not evaluated", v, err)
	}
	ev.Agent, ev.Source = "EMCOTEST", "sampleagent"
	if v, err := a.EvaluatePolicy(ctx, flow.PolicyEvaluateInput{DIG: dig, Event: ev}); err != nil || v.Gone || !v.ActionRequired {
		t.Errorf("delivered by the agent: %+v %v, want evaluated", v, err)
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
	v, err := a.EvaluatePolicy(context.Background(), flow.PolicyEvaluateInput{DIG: dig, Event: ev})
	if err != nil || !v.ActionRequired || v.Workflow != "other" || v.Engine != opa.URL+"/v1/data" {
		t.Fatalf("verdict %+v %v", v, err)
	}
	if path != "/v1/data" || got.Input.IntentSpec["policyIntentID"] != "external" || got.Input.IntentSpec["project"] != "p" ||
		got.Input.IntentSpec["deploymentIntentGroup"] != "d" || got.Input.AgentSpec["agentId"] != "EMCOTEST" ||
		!strings.Contains(string(got.Input.Event), "memory_usage_bytes") {
		t.Errorf("the engine was asked %s with %+v", path, got.Input)
	}
	a.Engines = egress.MustParse("opa.example.com")
	if _, err := a.EvaluatePolicy(context.Background(), flow.PolicyEvaluateInput{DIG: dig, Event: ev}); !nonRetryable(err) ||
		!strings.Contains(err.Error(), "not on the hosts an admin allowed") {
		t.Errorf("an engine no longer allowed: %v", err)
	}
}

// An intent naming an OPA server the project's policies stand in for (EMCO's example
// intent, unchanged) is evaluated by the embedded engine, which no admin allowed and no
// server answers.
func TestPoliciesStandInForTheOPAServerAnIntentNames(t *testing.T) {
	a, _ := newActivities(t, "172.31.82.234:8181/v1")
	ctx := context.Background()
	ev := memory("1500000000")
	ev.Intent = "external"
	if _, err := a.EvaluatePolicy(ctx, flow.PolicyEvaluateInput{DIG: dig, Event: ev}); !nonRetryable(err) ||
		!strings.Contains(err.Error(), "not on the hosts an admin allowed") {
		t.Errorf("before the policies stand in for it: %v", err)
	}
	d, err := a.Store.Get(ctx, "/projects/p/policies/migrate")
	if err != nil {
		t.Fatal(err)
	}
	d.Body = mustJSON(map[string]any{"metadata": map[string]any{"name": "migrate"},
		"spec": map[string]any{"rego": testenv.EMCOMemoryPolicy, "standsInFor": []string{"172.31.82.234:8181"}}})
	if err := a.Store.Update(ctx, d); err != nil {
		t.Fatal(err)
	}
	for value, want := range map[string]bool{"1500000000": true, "10": false} {
		ev := memory(value)
		ev.Intent = "external"
		v, err := a.EvaluatePolicy(ctx, flow.PolicyEvaluateInput{DIG: dig, Event: ev})
		if err != nil || v.ActionRequired != want || v.Engine != "embedded, for 172.31.82.234:8181" || v.Workflow != "mig" {
			t.Errorf("%s bytes: %+v %v, want actionRequired %v from the embedded engine", value, v, err, want)
		}
	}
}

func TestPolicyActionIsTheWorkflowIntentsStart(t *testing.T) {
	a, _ := newActivities(t, "")
	w, err := a.PolicyAction(context.Background(), flow.PolicyActionInput{DIG: dig, Workflow: "mig"})
	if err != nil || w.Type != "migrate" || w.TaskQueue != "p" || w.ID != "user/p/ca/v1/d/mig" || w.RunTimeout != time.Minute ||
		string(w.Arg) != `{"activityParams":{"migrate":{"app":"web"}}}` {
		t.Errorf("workflow %+v %v", w, err)
	}
	if _, err := a.PolicyAction(context.Background(), flow.PolicyActionInput{DIG: dig, Workflow: "none"}); !nonRetryable(err) {
		t.Errorf("a missing workflow intent: %v", err)
	}
	// A queue the project was not granted is refused, whoever stored the intent; granted,
	// it is used.
	shared := &store.Doc{ID: dig.ID() + "/temporal-workflow-intents/shared", Parent: dig.ID(), Kind: "temporal-workflow-intent", Name: "shared",
		Body: `{"metadata":{"name":"shared"},"spec":{"workflowClient":{},"temporal":{"workflowClientName":"migrate","workflowStartOptions":{"TaskQueue":"shared"}}}}`}
	if err := a.Store.Create(context.Background(), shared); err != nil {
		t.Fatal(err)
	}
	if _, err := a.PolicyAction(context.Background(), flow.PolicyActionInput{DIG: dig, Workflow: "shared"}); !nonRetryable(err) ||
		!strings.Contains(err.Error(), `task queue "shared" is not granted to project "p"`) {
		t.Errorf("a queue not granted: %v", err)
	}
	a.Grants = map[string][]string{"p": {"shared"}}
	if w, err := a.PolicyAction(context.Background(), flow.PolicyActionInput{DIG: dig, Workflow: "shared"}); err != nil || w.TaskQueue != "shared" {
		t.Errorf("a granted queue: %+v %v", w, err)
	}
	a.OwnQueue = "p" // the intent's queue is now temco's: refused
	if _, err := a.PolicyAction(context.Background(), flow.PolicyActionInput{DIG: dig, Workflow: "mig"}); !nonRetryable(err) ||
		!strings.Contains(err.Error(), "temco's own task queue") {
		t.Errorf("temco's queue: %v", err)
	}
}

func TestRecordKeepsTheLastDecisions(t *testing.T) {
	a, _ := newActivities(t, "")
	ctx := context.Background()
	for i := range flow.PolicyDecisionsKept + 5 {
		d := flow.PolicyDecision{EventID: fmt.Sprint(i), ActionRequired: i%2 == 0, Outcome: "started"}
		if err := a.RecordPolicy(ctx, flow.PolicyRecord{DIG: dig, Intent: "embedded", Decision: d}); err != nil {
			t.Fatal(err)
		}
	}
	d, err := a.Store.Get(ctx, dig.ID()+"/policy-intents/embedded")
	if err != nil {
		t.Fatal(err)
	}
	var st flow.PolicyStatus
	if err := json.Unmarshal([]byte(d.State), &st); err != nil {
		t.Fatal(err)
	}
	if st.Evaluations != 55 || st.Actions != 28 || len(st.Decisions) != 28 || st.Last.EventID != "54" {
		t.Errorf("record: %d evaluations, %d actions, %d decisions, last %+v", st.Evaluations, st.Actions, len(st.Decisions), st.Last)
	}
	if err := a.RecordPolicy(ctx, flow.PolicyRecord{DIG: dig, Intent: "deleted"}); err != nil {
		t.Errorf("a deleted intent's record: %v", err)
	}
}

func TestListenerHandsEventsToTheirIntents(t *testing.T) {
	a, sig := newActivities(t, "")
	addr, events := testenv.PolicyAgent(t)
	registerAgent(t, a, "sampleagent", addr, "", nil)
	registerAgent(t, a, "other", "127.0.0.1:1", "", nil) // another registered agent, never listened to here
	metric := func(agentID, ctxID, app, payload string) policyevents.Event {
		return policyevents.Event{EventID: "memory_usage_bytes", AgentID: agentID, ContextID: ctxID, AppName: app,
			AgentSpec: json.RawMessage(`{"agentId":"` + agentID + `"}`), MetricList: []byte(payload)}
	}
	spec := metric("A", "c1", "web", `{"v":"spec"}`)
	spec.AgentSpec = json.RawMessage(`{"agentId":"other"}`)
	for _, ev := range []policyevents.Event{
		metric("A", "c1", "web", `{"v":1}`),       // embedded and from-sampleagent: the registered agent, whatever it claims
		metric("B", "c2", "web", `{"v":2}`),       // both, through a later context of the DIG
		metric("A", "unknown", "web", `{"v":3}`),  // no such context: unmatched
		metric("A", "c1", "web", `not json`),      // dropped
		metric("other", "c1", "web", `{"v":4}`),   // claims the other registered agent: spoofed
		spec,                                      // the same, in its spec only: spoofed
		metric("A", "c3", "web", `{"v":5}`),       // DIG other has nothing on edge1: foreign
		metric("A", "c1", "db", `{"v":6}`),        // d's db is on edge2 only: foreign
		metric("A", "c1", "", `{"v":7}`),          // no app named: d has web on edge1
		metric("A", "c1", "web", `{"last":true}`), // embedded and from-sampleagent
	} {
		events <- ev
	}
	stop, done := listen(t, a, "sampleagent")
	poll.Until(t, "8 events delivered", 20*time.Second, sig.atLeast(8))
	stop()
	<-done
	got := sig.events()
	var seen []string
	for _, ev := range got {
		seen = append(seen, ev.Intent+":"+string(ev.Payload))
	}
	want := []string{`embedded:{"v":1}`, `from-sampleagent:{"v":1}`, `embedded:{"v":2}`, `from-sampleagent:{"v":2}`,
		`embedded:{"v":7}`, `from-sampleagent:{"v":7}`, `embedded:{"last":true}`, `from-sampleagent:{"last":true}`}
	if strings.Join(seen, " ") != strings.Join(want, " ") {
		t.Errorf("handed %v, want %v", seen, want)
	}
	if len(got) > 0 && (got[0].Source != "sampleagent" || got[0].Agent != "A" || got[0].ContextID != "c1" || got[0].App != "web" ||
		string(got[0].AgentSpec) != `{"agentId":"A"}`) {
		t.Errorf("event %+v", got[0])
	}
	st := agentStatus(t, a, "sampleagent")
	if st.Addr != addr || st.Events != 10 || st.Delivered != 8 || st.Unmatched != 1 || st.Dropped != 1 || st.Spoofed != 2 || st.Foreign != 2 ||
		st.LastEvent.IsZero() {
		t.Errorf("agent status %+v", st)
	}
}

// An agent over TLS is reached with the CA an admin gave and sent its token; with another
// CA the listener fails, the reason in the agent's status.
func TestListenerDialsTheAgentOverTLSWithItsToken(t *testing.T) {
	a, sig := newActivities(t, "")
	addr, ca, events, auth := testenv.PolicyAgentTLS(t)
	registerAgent(t, a, "tls", addr, "s3cret", map[string]any{"ca": ca, "serverName": "agent.test"})
	events <- policyevents.Event{EventID: "memory_usage_bytes", ContextID: "c1", AppName: "web", MetricList: []byte(`{}`)}
	stop, done := listen(t, a, "tls")
	select {
	case h := <-auth:
		if h != "Bearer s3cret" {
			t.Errorf("the agent saw authorization %q, want the token", h)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the agent was not called")
	}
	poll.Until(t, "an event delivered over TLS", 20*time.Second, sig.atLeast(1))
	stop()
	<-done
	if n := len(sig.events()); n != 1 {
		t.Errorf("%d events delivered over TLS, want 1", n)
	}

	other, _ := testenv.TestCertificate(t, "agent.test")
	registerAgent(t, a, "wrong-ca", addr, "", map[string]any{"ca": other})
	stop, done = listen(t, a, "wrong-ca")
	defer stop()
	if err := <-done; err == nil || !strings.Contains(err.Error(), "certificate signed by unknown authority") {
		t.Errorf("listening with another CA: %v", err)
	}
	if st := agentStatus(t, a, "wrong-ca"); st.Connected || !strings.Contains(st.LastError, "certificate signed by unknown authority") {
		t.Errorf("status with another CA %+v, want the reason", st)
	}
}

// An agent registered without clusters (EMCO's registration, or one stored before they
// were asked for) is not listened to: it could deliver nothing. Its status says why.
func TestAnAgentWithoutClustersIsNotListenedTo(t *testing.T) {
	a, _ := newActivities(t, "")
	if err := a.Store.Create(context.Background(), &store.Doc{ID: "/policy/agents/old", Kind: model.KindPolicyAgent, Name: "old",
		Body: `{"id":"old","addr":"127.0.0.1:1"}`}); err != nil {
		t.Fatal(err)
	}
	_, done := listen(t, a, "old")
	if err := <-done; !nonRetryable(err) || !strings.Contains(err.Error(), "bound to no cluster") {
		t.Errorf("listening to an agent without clusters: %v", err)
	}
	if st := agentStatus(t, a, "old"); !strings.Contains(st.LastError, "once it is registered with clusters") {
		t.Errorf("status %+v", st)
	}
}

func TestADeregisteredAgentIsGone(t *testing.T) {
	a, _ := newActivities(t, "")
	var s testsuite.WorkflowTestSuite
	env := s.NewTestActivityEnvironment()
	env.RegisterActivity(a)
	v, err := env.ExecuteActivity(flow.ListenPolicyAgent.Name(), flow.PolicyAgentInput{Name: "none"})
	var out flow.PolicyListened
	if err != nil || v.Get(&out) != nil || !out.Gone {
		t.Errorf("listened %+v, %v", out, err)
	}
}
