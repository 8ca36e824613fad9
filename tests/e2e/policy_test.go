package e2e

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/temco/temco/features/policy/flow"
	"github.com/temco/temco/internal/adapters/policyevents"
	"github.com/temco/temco/internal/core/lifecycle"
	"github.com/temco/temco/internal/dev/testenv"
)

// EMCO's example 05 and 06 (examples/test-policy) with the values templated: the agent,
// with the cluster it reports on (temco's addition: EMCO's addr alone registers it
// unbound), then the intent naming the DIG's workflow intent; 06 without its engineUrl
// uses temco's embedded engine on the project's policies. policy_example_test.go runs
// EMCO's files as they are.
const policyAgentFile = `version: emco/v2
resourceContext:
  anchor: policy/agents/{{.Agent}}
addr: {{.Addr}}
clusters:
  - clusterProvider: {{.Provider}}
    cluster: cluster1
`

const policyIntentFile = `version: emco/v2
resourceContext:
  anchor: projects/{{.ProjectName}}/composite-apps/{{.CompositeApp}}/v1/deployment-intent-groups/{{.DeploymentIntent}}/policy-intents/migrate-on-memory-policy
metadata:
  name: policy
  description: 'Migrate policy intent'
spec:
  policy:
    engineUrl: '{{.Engine}}'
    namespace: emco
    policyName: data
  actor: temporal
  actorArg:
    workFlowMgr: emco-workflowmgr:9095
    workFlowName: {{.DeploymentIntent}}-workflow-intent
  event:
    agent: ''
    id: memory_usage_bytes
`

// An agent speaking EMCO's events protocol (as EMCO's metrics collector does) reports the
// memory of web's pods, naming the context from their emco/deployment-id label. Below
// the policy's threshold nothing happens; above it the policy intent starts the DIG's
// workflow intent, a Relocate of web from cluster1 to cluster2, once for that decision;
// the decision is in the intent's status and the Policy workflow's history. An engine not
// on the admin's list is refused at apply; deregistering the agent ends its listener.
func TestPolicyIntentMigratesOnMemoryEvents(t *testing.T) {
	d := newDeployment(t, app{name: "web", chart: webChart("web"), placement: clusterNamed("cluster1")})
	d.create()
	d.operate(lifecycle.OpInstantiate)
	d.await("Instantiated", 2*time.Minute, "", func(s status) bool { return s.Status == lifecycle.StatusInstantiated })
	c := d.c
	deploy, err := dynClientNamed(t, "cluster1").Resource(schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}).
		Namespace("default").Get(context.Background(), "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	contextID, _, _ := strings.Cut(deploy.GetLabels()[lifecycle.DeploymentIDLabel], "-") // as EMCO's collector reads it

	// The workflow intent the policy starts, and the project's policy.
	p := map[string]string{"project": d.project, "compositeApp": "ca", "compositeAppVersion": "v1", "deploymentIntentGroup": "dig",
		"app": "web", "from": provider + "+cluster1", "to": provider + "+cluster2"}
	c.do("POST", d.dig()+"/temporal-workflow-intents", res("dig-workflow-intent", map[string]any{"workflowClient": map[string]any{}, "temporal": map[string]any{
		"workflowClientName":   lifecycle.WorkflowRelocate,
		"workflowStartOptions": map[string]any{"TaskQueue": "temco", "WorkflowExecutionTimeout": int64(10 * time.Minute)},
		"workflowParams":       map[string]any{"activityParams": map[string]any{"relocate": p}},
	}})).must(t, 201)
	c.do("POST", "/projects/"+d.project+"/policies", res("migrate", map[string]any{"rego": testenv.EMCOMemoryPolicy})).must(t, 201)

	// The agent, then the intent, through temco apply.
	addr, events := testenv.PolicyAgent(t)
	agentName := d.project + "-agent"
	dir := t.TempDir()
	values := "ProjectName: " + d.project + "\nCompositeApp: ca\nDeploymentIntent: dig\nAgent: " + agentName + "\nAddr: " + addr +
		"\nProvider: " + provider + "\n"
	for name, data := range map[string]string{"05.register_agent.yaml": policyAgentFile, "06.define_policy_intent.yaml": policyIntentFile,
		"values.yaml": values + "Engine: ''\n", "values-external.yaml": values + "Engine: '172.31.82.234:8181/v1'\n"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	out, err := temco(t, dir, "apply", "-f", "05.register_agent.yaml", "-f", "06.define_policy_intent.yaml", "-v", "values-external.yaml")
	if err == nil || !strings.Contains(out, "172.31.82.234:8181") || !strings.Contains(out, "403") {
		t.Errorf("EMCO's unchanged intent, naming an OPA server no admin allowed: %v\n%s", err, out)
	}
	if out, err := temco(t, dir, "apply", "-f", "05.register_agent.yaml", "-f", "06.define_policy_intent.yaml", "-v", "values.yaml"); err != nil {
		t.Fatalf("temco apply: %v\n%s", err, out)
	}
	agentPath := "/policy/agents/" + agentName
	t.Cleanup(func() { c.do("DELETE", agentPath, nil) })
	intent := d.dig() + "/policy-intents/migrate-on-memory-policy"
	var agentStatus flow.PolicyAgentStatus
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(200 * time.Millisecond) {
		c.do("GET", agentPath+"/status", nil).must(t, 200).json(t, &agentStatus)
		if agentStatus.Connected || time.Now().After(deadline) {
			break
		}
	}
	if !agentStatus.Connected || agentStatus.Addr != addr {
		t.Fatalf("the agent's listener: %+v", agentStatus)
	}

	memory := func(value string) policyevents.Event {
		m, _ := json.Marshal(map[string]any{"metric": "memory_usage_bytes", "contextId": contextID, "appName": "web",
			"value": map[string]any{"items": []any{map[string]any{"describedObject": map[string]any{"kind": "Pod", "name": "web-0"}, "value": value}}}})
		return policyevents.Event{EventID: "memory_usage_bytes", AgentID: "EMCOTEST", ContextID: contextID, AppName: "web",
			AgentSpec: json.RawMessage(`{"agentId":"EMCOTEST"}`), MetricList: m}
	}
	awaitPolicy := func(what string, cond func(policyStatusView) bool) policyStatusView {
		t.Helper()
		var st policyStatusView
		for deadline := time.Now().Add(time.Minute); ; time.Sleep(200 * time.Millisecond) {
			c.do("GET", intent+"/status", nil).must(t, 200).json(t, &st)
			if cond(st) {
				return st
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: policy intent status %+v", what, st)
			}
		}
	}
	events <- memory("52000000") // below the threshold
	st := awaitPolicy("the first evaluation", func(s policyStatusView) bool { return s.Evaluations >= 1 })
	if st.Actions != 0 || st.Last == nil || st.Last.Outcome != "no action" || st.Last.Engine != "embedded" || st.Last.ContextID != contextID {
		t.Fatalf("below the threshold: %+v (last %+v)", st, st.Last)
	}
	events <- memory("1500000000")
	st = awaitPolicy("the decision", func(s policyStatusView) bool { return s.Actions >= 1 })
	dec := st.Decisions[0]
	if dec.Outcome != "started" || dec.Workflow != "dig-workflow-intent" || dec.RunID == "" ||
		dec.WorkflowID != "user/"+d.project+"/ca/v1/dig/dig-workflow-intent" {
		t.Fatalf("the decision: %+v", dec)
	}
	// The relocation it started moves web to cluster2.
	var rel relocation
	c.do("GET", d.dig()+"/temporal-workflow-intents/dig-workflow-intent/status?waitForResult=true&runID="+dec.RunID, nil).must(t, 200).json(t, &rel)
	var progress relocateProgress
	if err := json.Unmarshal(rel.Result, &progress); err != nil || progress.Step != "done" || rel.Error != "" {
		t.Fatalf("the relocation the policy started: %s (%v), error %q", rel.Result, err, rel.Error)
	}
	if got := keys(snapshot(t, contextID, "web")); len(got) != 3 || !strings.HasPrefix(got[0], "cluster2/") {
		t.Errorf("web after the relocation: %v", got)
	}
	// One run per started decision, and none else.
	runs := runsOf(t, "WorkflowId = '"+dec.WorkflowID+"'")
	st = awaitPolicy("the record", func(s policyStatusView) bool { return s.Evaluations >= 2 })
	started := 0
	for _, d := range st.Decisions {
		if d.Outcome == "started" {
			started++
		}
	}
	if len(runs) != started || started != 1 {
		t.Errorf("%d runs of %s, %d decisions that started one: %+v", len(runs), dec.WorkflowID, started, st.Decisions)
	}
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(200 * time.Millisecond) { // recorded every few seconds
		c.do("GET", agentPath+"/status", nil).must(t, 200).json(t, &agentStatus)
		if agentStatus.Events >= 2 && agentStatus.Delivered >= 2 || time.Now().After(deadline) {
			break
		}
	}
	if agentStatus.Events != 2 || agentStatus.Delivered != 2 || agentStatus.Unmatched != 0 || agentStatus.Dropped != 0 ||
		agentStatus.Foreign != 0 || agentStatus.Spoofed != 0 || agentStatus.LastEvent.IsZero() {
		t.Errorf("the agent's counts: %+v", agentStatus)
	}

	// The Policy workflow ends after its idle time; its history is recorded now.
	recordHistory(t, flow.WorkflowID(lifecycle.Target{Project: d.project, CompositeApp: "ca", Version: "v1", DIG: "dig"}), "Policy-migrate-on-memory")
	// Deregistered, the agent's listener ends.
	c.do("DELETE", agentPath, nil).must(t, 200)
	tc := dialTemporal(t)
	defer tc.Close()
	listener := flow.PolicyAgentInput{Name: agentName}.WorkflowID()
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(200 * time.Millisecond) {
		desc, err := tc.DescribeWorkflowExecution(context.Background(), listener, "")
		if err == nil && desc.WorkflowExecutionInfo.Status == enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the listener of a deregistered agent: %v %v", desc, err)
		}
	}
	recordHistory(t, listener, "PolicyAgent-deregistered")
	if r := c.do("GET", "/policy/agents", nil).must(t, 200); slices.Contains(strings.Split(string(r.body), `"`), agentName) {
		t.Errorf("agents after the delete: %s", r.body)
	}
}

type policyStatusView struct {
	Evaluations int64                 `json:"evaluations"`
	Actions     int64                 `json:"actions"`
	Last        *flow.PolicyDecision  `json:"last"`
	Decisions   []flow.PolicyDecision `json:"decisions"`
}

// An agent's events reach only the DIGs placed on the clusters it is registered for, and
// an intent naming an agent matches the registered agent, not the id events claim. An
// agent registered for cluster1 sends three events: one claiming to come from another
// registered agent (spoofed), one naming the context of another project's DIG placed on
// cluster2 (foreign), and one for its own DIG. Only the last is evaluated; the agent's
// status counts the other two, and the other DIG's policy intent never evaluates.
func TestPolicyEventsReachOnlyTheirAgentsDIGs(t *testing.T) {
	bound := newDeployment(t, app{name: "bound", chart: webChart("bound"), placement: clusterNamed("cluster1")})
	foreign := &deployment{t: t, c: &client{t: t}, project: projectName(t) + "-foreign",
		apps: []app{{name: "foreign", chart: webChart("foreign"), placement: clusterNamed("cluster2")}}}
	c := bound.c
	contexts := map[*deployment]string{}
	for d, cluster := range map[*deployment]string{bound: "cluster1", foreign: "cluster2"} {
		d.create()
		d.operate(lifecycle.OpInstantiate)
		d.await("Instantiated", 2*time.Minute, "", func(s status) bool { return s.Status == lifecycle.StatusInstantiated })
		obj, err := dynClientNamed(t, cluster).Resource(schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}).
			Namespace("default").Get(context.Background(), d.apps[0].name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		contexts[d], _, _ = strings.Cut(obj.GetLabels()[lifecycle.DeploymentIDLabel], "-")
		c.do("POST", d.dig()+"/temporal-workflow-intents", res("act", map[string]any{"workflowClient": map[string]any{}, "temporal": map[string]any{
			"workflowClientName": "act", "workflowStartOptions": map[string]any{"TaskQueue": d.project}}})).must(t, 201)
		c.do("POST", "/projects/"+d.project+"/policies", res("migrate", map[string]any{"rego": testenv.EMCOMemoryPolicy})).must(t, 201)
	}

	// The agent, for cluster1; another registered agent, for cluster2, whose name the
	// first one claims.
	addr, events := testenv.PolicyAgent(t)
	otherAddr, _ := testenv.PolicyAgent(t)
	agentName, otherName := bound.project+"-agent", bound.project+"-other"
	for name, body := range map[string]map[string]any{
		agentName: {"addr": addr, "clusters": []any{map[string]any{"clusterProvider": provider, "cluster": "cluster1"}}},
		otherName: {"addr": otherAddr, "clusters": []any{map[string]any{"clusterProvider": provider, "cluster": "cluster2"}}},
	} {
		c.do("POST", "/policy/agents/"+name, body).must(t, 201)
		t.Cleanup(func() { c.do("DELETE", "/policy/agents/"+name, nil) })
	}
	for d, agent := range map[*deployment]string{bound: agentName, foreign: ""} {
		c.do("POST", d.dig()+"/policy-intents/on-memory", res("on-memory", map[string]any{
			"policy": map[string]any{"policyName": "data"}, "actor": "temporal", "actorArg": map[string]any{"workFlowName": "act"},
			"event": map[string]any{"id": "memory_usage_bytes", "agent": agent}})).must(t, 201)
	}
	agentStatus := func() flow.PolicyAgentStatus {
		return getAs[flow.PolicyAgentStatus](t, c, "/policy/agents/"+agentName+"/status")
	}
	awaitValue(t, "the agent's listener", time.Minute, agentStatus, func(s flow.PolicyAgentStatus) bool { return s.Connected })

	memory := func(agentID, contextID, app string) policyevents.Event {
		m, _ := json.Marshal(map[string]any{"metric": "memory_usage_bytes", "value": map[string]any{"items": []any{map[string]any{"value": "52000000"}}}})
		return policyevents.Event{EventID: "memory_usage_bytes", AgentID: agentID, ContextID: contextID, AppName: app,
			AgentSpec: json.RawMessage(`{"agentId":"` + agentID + `"}`), MetricList: m}
	}
	events <- memory(otherName, contexts[bound], "bound")      // spoofed
	events <- memory("EMCOTEST", contexts[foreign], "foreign") // foreign
	events <- memory("EMCOTEST", contexts[bound], "bound")     // the agent's own

	st := awaitValue(t, "the agent's counts", time.Minute, agentStatus, func(s flow.PolicyAgentStatus) bool {
		return s.Events >= 3 && s.Delivered+s.Spoofed+s.Foreign+s.Unmatched+s.Dropped >= 3
	})
	if st.Events != 3 || st.Delivered != 1 || st.Spoofed != 1 || st.Foreign != 1 || st.Unmatched != 0 || st.Dropped != 0 {
		t.Errorf("the agent's counts: %+v, want 1 delivered, 1 spoofed, 1 foreign", st)
	}
	intentStatus := func(d *deployment) policyStatusView {
		return getAs[policyStatusView](t, c, d.dig()+"/policy-intents/on-memory/status")
	}
	got := awaitValue(t, "the bound DIG's evaluation", time.Minute, func() policyStatusView { return intentStatus(bound) },
		func(s policyStatusView) bool { return s.Evaluations >= 1 })
	if got.Evaluations != 1 || got.Last == nil || got.Last.Agent != "EMCOTEST" || got.Last.Source != agentName || got.Last.Outcome != "no action" ||
		got.Last.ContextID != contexts[bound] {
		t.Errorf("the bound DIG's policy intent: %+v (last %+v), want the agent's own event alone", got, got.Last)
	}
	if other := intentStatus(foreign); other.Evaluations != 0 || other.Last != nil {
		t.Errorf("the foreign DIG's policy intent evaluated %+v", other)
	}
}
