package api_test

// The routes of features/policy, served by the api (export_features_test.go).

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/temco/temco/api"
	"github.com/temco/temco/features/policy"
	"github.com/temco/temco/features/policy/flow"
	"github.com/temco/temco/internal/adapters/auth/authtest"
	"github.com/temco/temco/internal/adapters/egress"
	"github.com/temco/temco/internal/core/store"
	"github.com/temco/temco/internal/dev/testenv"
)

const pPolicyIntents = pDIG + "/policy-intents"

// agents records what the API asks of the agents' listeners.
type agents struct{ wakes []string }

func (a *agents) WakePolicyAgent(_ context.Context, in flow.PolicyAgentInput, start bool) error {
	a.wakes = append(a.wakes, map[bool]string{true: "start", false: "stop"}[start]+" "+in.Name)
	return nil
}

// emcoPolicyIntent is EMCO's example 06.define_policy_intent.yaml as emcoctl sends it:
// metadata.name "policy", the path naming another.
func emcoPolicyIntent(engineURL string) map[string]any {
	return res("policy", map[string]any{
		"policy":   map[string]any{"engineUrl": engineURL, "namespace": "emco", "policyName": "data"},
		"actor":    "temporal",
		"actorArg": map[string]any{"workFlowMgr": "emco-workflowmgr:9095", "workFlowName": "dig1-workflow-intent"},
		"event":    map[string]any{"agent": "", "id": "memory_usage_bytes"},
	})
}

func TestPolicyAgentsAndIntentsAsEMCOsExample(t *testing.T) {
	ag := &agents{}
	c := api.NewFeatureClient(t, policy.Extension(ag, egress.MustParse("opa.example.com")))

	// 05.register_agent.yaml as EMCO has it, {addr} with its placeholder: stored unbound,
	// not listened to, its status saying why.
	r := c.Do("POST", "/policy/agents/sampleagent", map[string]any{"metadata": api.Meta(""), "addr": "<agent endpoint>"}).Must(t, http.StatusCreated)
	if strings.TrimSpace(string(r.Body())) != `{"id":"sampleagent","addr":"\u003cagent endpoint\u003e","clusters":[]}` {
		t.Errorf("EMCO's registration answered %s", r.Body())
	}
	unbound := func(what string) {
		t.Helper()
		var st flow.PolicyAgentStatus
		c.Do("GET", "/policy/agents/sampleagent/status", nil).Must(t, http.StatusOK).JSON(t, &st)
		if st.Connected || !strings.Contains(st.LastError, "bound to no cluster") {
			t.Errorf("%s: status %+v, want unbound", what, st)
		}
	}
	unbound("EMCO's registration")
	// With the clusters it reports on (temco apply sends its metadata too).
	cp1c1 := []any{map[string]any{"clusterProvider": "cp1", "cluster": "c1"}}
	r = c.Do("POST", "/policy/agents/sampleagent", map[string]any{"metadata": api.Meta(""), "addr": "10.0.0.9:9090", "clusters": cp1c1}).Must(t, http.StatusCreated)
	if strings.TrimSpace(string(r.Body())) != `{"id":"sampleagent","addr":"10.0.0.9:9090","clusters":[{"clusterProvider":"cp1","cluster":"c1"}]}` {
		t.Errorf("agent answer %s", r.Body())
	}
	c.Do("POST", "/policy/agents/sampleagent", map[string]any{"addr": "10.0.0.9:9091", "clusters": cp1c1}).Must(t, http.StatusCreated)
	if r := c.Do("GET", "/policy/agents", nil).Must(t, http.StatusOK); !strings.Contains(string(r.Body()), `"addr":"10.0.0.9:9091"`) {
		t.Errorf("agents %s", r.Body())
	}
	for _, bad := range []string{"", "10.0.0.9", "http://10.0.0.9:9090", "10.0.0.9:0"} {
		if r := c.Do("POST", "/policy/agents/bad", map[string]any{"addr": bad, "clusters": cp1c1}); r.Code() != http.StatusBadRequest || !strings.Contains(string(r.Body()), "addr") {
			t.Errorf("addr %q: %d %s, want 400 naming addr", bad, r.Code(), r.Body())
		}
	}
	for want, body := range map[string]map[string]any{
		`clusters[0]: cluster provider \"cp1\" has no cluster \"c9\"`: {"clusters": []any{map[string]any{"clusterProvider": "cp1", "cluster": "c9"}}},
		"clusters[1]: cp1/c1 is named twice":                          {"clusters": append(cp1c1, cp1c1...)},
		"clusters[0].cluster is required":                             {"clusters": []any{map[string]any{"clusterProvider": "cp1"}}},
		"tls.ca holds no PEM certificate":                             {"clusters": cp1c1, "tls": map[string]any{"ca": "not a certificate"}},
		"token must be printable ASCII":                               {"clusters": cp1c1, "token": "two words"},
		"no token is stored to keep":                                  {"clusters": cp1c1, "token": "********"},
	} {
		body["addr"] = "10.0.0.9:9090"
		if r := c.Do("POST", "/policy/agents/bad", body); r.Code() != http.StatusBadRequest || !strings.Contains(string(r.Body()), want) {
			t.Errorf("%s: %d %s, want 400 saying so", want, r.Code(), r.Body())
		}
	}
	c.Do("GET", "/policy/agents/bad", nil).Must(t, http.StatusNotFound)
	if r := c.Do("GET", "/policy/agents/sampleagent/status", nil).Must(t, http.StatusOK); !strings.Contains(string(r.Body()), `"connected":false`) ||
		strings.Contains(string(r.Body()), "lastError") {
		t.Errorf("status before any listener: %s", r.Body())
	}

	// The intent names a workflow intent of the DIG, which must exist.
	if r := c.Do("POST", pPolicyIntents+"/migrate-on-memory-policy", emcoPolicyIntent("")); r.Code() != http.StatusBadRequest ||
		!strings.Contains(string(r.Body()), "dig1-workflow-intent") {
		t.Errorf("without the workflow intent: %d %s", r.Code(), r.Body())
	}
	wf := pDIG + "/temporal-workflow-intents/dig1-workflow-intent"
	if err := c.Store().Create(context.Background(), &store.Doc{ID: wf, Parent: pDIG, Scope: api.PathP, Kind: "temporal-workflow-intent",
		Name: "dig1-workflow-intent", Body: `{"metadata":{"name":"dig1-workflow-intent"},"spec":{}}`}); err != nil {
		t.Fatal(err)
	}
	// An external engine only on the admin's list; none: the project's policies.
	if r := c.Do("POST", pPolicyIntents+"/migrate-on-memory-policy", emcoPolicyIntent("172.31.82.234:8181/v1")); r.Code() != http.StatusForbidden ||
		!strings.Contains(string(r.Body()), "172.31.82.234:8181") {
		t.Errorf("an engine not allowed: %d %s", r.Code(), r.Body())
	}
	c.Do("POST", pPolicyIntents+"/external", emcoPolicyIntent("opa.example.com:8181/v1")).Must(t, http.StatusCreated)
	r = c.Do("POST", pPolicyIntents+"/migrate-on-memory-policy", emcoPolicyIntent("")).Must(t, http.StatusCreated)
	if !strings.Contains(string(r.Body()), `"name":"migrate-on-memory-policy"`) {
		t.Errorf("the path names the intent, as in EMCO: %s", r.Body())
	}
	c.Do("POST", pPolicyIntents+"/migrate-on-memory-policy", emcoPolicyIntent("")).Must(t, http.StatusCreated) // again: replaced
	for name, spec := range map[string]map[string]any{
		"spec.actor":                 {"actor": "kafka", "actorArg": map[string]any{"workFlowName": "x"}, "event": map[string]any{"id": "m"}, "policy": map[string]any{"policyName": "data"}},
		"spec.event.id":              {"actor": "temporal", "actorArg": map[string]any{"workFlowName": "x"}, "policy": map[string]any{"policyName": "data"}},
		"spec.actorArg.workFlowName": {"actor": "temporal", "event": map[string]any{"id": "m"}, "policy": map[string]any{"policyName": "data"}},
		"spec.policy.policyName":     {"actor": "temporal", "actorArg": map[string]any{"workFlowName": "x"}, "event": map[string]any{"id": "m"}, "policy": map[string]any{"policyName": "emco/x"}},
	} {
		if r := c.Do("POST", pPolicyIntents, res("bad", spec)); r.Code() != http.StatusBadRequest || !strings.Contains(string(r.Body()), name) {
			t.Errorf("%s: %d %s, want 400 naming it", name, r.Code(), r.Body())
		}
	}
	// The workflow intent it names cannot go while it does.
	if err := c.Store().Delete(context.Background(), wf); err == nil || !strings.Contains(err.Error(), "policy-intents") {
		t.Errorf("delete the workflow intent a policy intent names: %v, want refused naming the policy intent", err)
	}

	// The project's policies: compiled when stored.
	c.Do("POST", api.PathP+"/policies", res("migrate", map[string]any{"rego": testenv.EMCOMemoryPolicy})).Must(t, http.StatusCreated)
	for what, rego := range map[string]string{
		"policies/broken:": "package emco\nactionRequired if {",
		"http.send":        "package emco\nimport rego.v1\nx := http.send({\"method\": \"get\", \"url\": \"http://169.254.169.254/\"})\n",
		"opa.runtime":      "package emco\nimport rego.v1\nenv := opa.runtime().env\n",
	} {
		name := map[bool]string{true: "broken", false: "evil"}[what == "policies/broken:"]
		if r := c.Do("POST", api.PathP+"/policies", res(name, map[string]any{"rego": rego})); r.Code() != http.StatusBadRequest || !strings.Contains(string(r.Body()), what) {
			t.Errorf("policy using %s: %d %s, want 400 naming it", what, r.Code(), r.Body())
		}
	}

	// Valid alone, but conflicting with the stored one (evaluated together): refused.
	if r := c.Do("POST", api.PathP+"/policies", res("conflict", map[string]any{"rego": "package emco\nimport rego.v1\ndefault actionRequired := true\n"})); r.Code() != http.StatusBadRequest ||
		!strings.Contains(string(r.Body()), "actionRequired") {
		t.Errorf("a policy conflicting with another: %d %s", r.Code(), r.Body())
	}
	c.Do("PUT", api.PathP+"/policies/migrate", res("migrate", map[string]any{"rego": testenv.EMCOMemoryPolicy})).Must(t, http.StatusOK) // itself: no conflict

	// Standing in for EMCO's OPA server, the project's policies take EMCO's intent as it is,
	// at OPA's Data API paths only.
	if r := c.Do("POST", api.PathP+"/policies", res("bad", map[string]any{"rego": "package other\n", "standsInFor": []string{"http://172.31.82.234:8181"}})); r.Code() != http.StatusBadRequest ||
		!strings.Contains(string(r.Body()), "spec.standsInFor[0]") {
		t.Errorf("standing in for a URL: %d %s, want 400 naming it", r.Code(), r.Body())
	}
	c.Do("PUT", api.PathP+"/policies/migrate", res("migrate", map[string]any{"rego": testenv.EMCOMemoryPolicy, "standsInFor": []string{"172.31.82.234:8181"}})).Must(t, http.StatusOK)
	c.Do("POST", pPolicyIntents+"/on-emcos-opa", emcoPolicyIntent("172.31.82.234:8181/v1")).Must(t, http.StatusCreated)
	if r := c.Do("POST", pPolicyIntents+"/not-data-api", emcoPolicyIntent("172.31.82.234:8181")); r.Code() != http.StatusBadRequest ||
		!strings.Contains(string(r.Body()), "not OPA's Data API") {
		t.Errorf("a path OPA does not answer, on the server stood in for: %d %s", r.Code(), r.Body())
	}

	// The status: nothing yet, then what the workflow recorded.
	if r := c.Do("GET", pPolicyIntents+"/migrate-on-memory-policy/status", nil).Must(t, http.StatusOK); strings.TrimSpace(string(r.Body())) !=
		`{"name":"migrate-on-memory-policy","evaluations":0,"actions":0,"decisions":[]}` {
		t.Errorf("status before any event: %s", r.Body())
	}
	d, err := c.Store().Get(context.Background(), pPolicyIntents+"/migrate-on-memory-policy")
	if err != nil {
		t.Fatal(err)
	}
	d.State = `{"evaluations":2,"actions":0,"last":{"outcome":"no action"}}` // evaluated, no action yet
	if err := c.Store().SetState(context.Background(), d); err != nil {
		t.Fatal(err)
	}
	if r := c.Do("GET", pPolicyIntents+"/migrate-on-memory-policy/status", nil).Must(t, http.StatusOK); !strings.Contains(string(r.Body()), `"decisions":[]`) {
		t.Errorf("status before any action: %s, want no decisions as []", r.Body())
	}
	if d, err = c.Store().Get(context.Background(), pPolicyIntents+"/migrate-on-memory-policy"); err != nil {
		t.Fatal(err)
	}
	dec := flow.PolicyDecision{At: time.Date(2026, 11, 28, 3, 0, 0, 0, time.UTC), EventID: "memory_usage_bytes", ActionRequired: true,
		Workflow: "dig1-workflow-intent", WorkflowID: "user/p1/ca/v1/dig1/dig1-workflow-intent", Outcome: "started"}
	state, _ := json.Marshal(flow.PolicyStatus{Evaluations: 3, Actions: 1, Last: &dec, Decisions: []flow.PolicyDecision{dec}})
	d.State = string(state)
	if err := c.Store().SetState(context.Background(), d); err != nil {
		t.Fatal(err)
	}
	var st struct {
		Name string `json:"name"`
		flow.PolicyStatus
	}
	c.Do("GET", pPolicyIntents+"/migrate-on-memory-policy/status", nil).Must(t, http.StatusOK).JSON(t, &st)
	if st.Evaluations != 3 || len(st.Decisions) != 1 || st.Decisions[0].WorkflowID != dec.WorkflowID {
		t.Errorf("status %+v", st)
	}

	// Deleted, the policy intent no longer holds its workflow intent.
	c.Do("DELETE", pPolicyIntents+"/migrate-on-memory-policy", nil).Must(t, http.StatusNoContent)
	c.Do("DELETE", pPolicyIntents+"/external", nil).Must(t, http.StatusNoContent)
	c.Do("DELETE", pPolicyIntents+"/on-emcos-opa", nil).Must(t, http.StatusNoContent)
	if err := c.Store().Delete(context.Background(), wf); err != nil {
		t.Errorf("delete the workflow intent no policy intent names: %v", err)
	}

	// Registered again as EMCO registers it, the agent is unbound: its listener stops.
	c.Do("POST", "/policy/agents/sampleagent", map[string]any{"addr": "10.0.0.9:9091"}).Must(t, http.StatusCreated)
	unbound("registered again without clusters")
	c.Do("DELETE", "/policy/agents/sampleagent", nil).Must(t, http.StatusOK)
	c.Do("GET", "/policy/agents/sampleagent", nil).Must(t, http.StatusNotFound)
	if want := []string{"stop sampleagent", "start sampleagent", "start sampleagent", "stop sampleagent", "stop sampleagent"}; !slices.Equal(ag.wakes, want) {
		t.Errorf("listeners asked %v, want %v", ag.wakes, want)
	}
}

func TestPolicyAgentsAreAdminOnly(t *testing.T) {
	iss, err := authtest.New(api.TestIssuer, api.TestAudience)
	if err != nil {
		t.Fatal(err)
	}
	c := api.NewFeatureAuthClient(t, iss, policy.Extension(&agents{}, nil))
	tenant := c.As(iss.Token("alice", []string{"project:p1"}, nil))
	for _, r := range []struct{ method, path string }{{"POST", "/policy/agents/a"}, {"GET", "/policy/agents"}, {"GET", "/policy/agents/a"},
		{"DELETE", "/policy/agents/a"}, {"GET", "/policy/agents/a/status"}} {
		if got := tenant.Do(r.method, r.path, map[string]any{"addr": "127.0.0.1:9090"}); got.Code() != http.StatusForbidden {
			t.Errorf("tenant %s %s: %d %s, want 403", r.method, r.path, got.Code(), got.Body())
		}
	}
}

// An agent's token is sealed in its document and masked in every answer; registering
// again with the mask keeps it, without one removes it. Its CA and server name are kept
// as given.
func TestPolicyAgentTokenIsSealedAndMasked(t *testing.T) {
	c := api.NewFeatureClient(t, policy.Extension(&agents{}, nil))
	ca, _ := testenv.TestCertificate(t, "agent.test")
	body := map[string]any{"addr": "10.0.0.9:9090", "clusters": []any{map[string]any{"clusterProvider": "cp1", "cluster": "c1"}},
		"tls": map[string]any{"ca": ca, "serverName": "agent.test"}, "token": "s3cret-token"}
	ctx := context.Background()
	stored := func() *store.Doc {
		t.Helper()
		d, err := c.Store().Get(ctx, "/policy/agents/a")
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	token := func() string {
		t.Helper()
		d := stored()
		if len(d.Secret) == 0 {
			return ""
		}
		plain, err := c.Keys().Open(d.Secret, []byte(d.ID))
		if err != nil {
			t.Fatal(err)
		}
		var v struct{ Token string }
		if err := json.Unmarshal(plain, &v); err != nil {
			t.Fatal(err)
		}
		return v.Token
	}
	answers := []api.Response{c.Do("POST", "/policy/agents/a", body).Must(t, http.StatusCreated), c.Do("GET", "/policy/agents/a", nil).Must(t, http.StatusOK),
		c.Do("GET", "/policy/agents", nil).Must(t, http.StatusOK)}
	for _, r := range answers {
		if strings.Contains(string(r.Body()), "s3cret") || !strings.Contains(string(r.Body()), `"token":"********"`) || !strings.Contains(string(r.Body()), `"serverName":"agent.test"`) {
			t.Errorf("an answer shows the token, or no mask: %s", r.Body())
		}
	}
	if d := stored(); strings.Contains(d.Body, "s3cret") || strings.Contains(string(d.Secret), "s3cret") || token() != "s3cret-token" {
		t.Errorf("stored body %s, the token not sealed", d.Body)
	}
	body["token"] = "********"
	c.Do("POST", "/policy/agents/a", body).Must(t, http.StatusCreated)
	if got := token(); got != "s3cret-token" {
		t.Errorf("the mask kept %q", got)
	}
	delete(body, "token")
	r := c.Do("POST", "/policy/agents/a", body).Must(t, http.StatusCreated)
	if got := token(); got != "" || strings.Contains(string(r.Body()), "token") {
		t.Errorf("without a token: %q stored, answer %s", got, r.Body())
	}
}
