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

	"github.com/temco/temco/internal/adapters/policyevents"
	"github.com/temco/temco/internal/core/lifecycle"
	"github.com/temco/temco/internal/dev/testenv"
)

// EMCO's example 05 and 06 (examples/test-policy) as an EMCO user brings them: the agent,
// then the intent naming the DIG's workflow intent; 06 without its engineUrl uses temco's
// embedded engine on the project's policies.
const policyAgentFile = `version: emco/v2
resourceContext:
  anchor: policy/agents/{{.Agent}}
addr: {{.Addr}}
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
	values := "ProjectName: " + d.project + "\nCompositeApp: ca\nDeploymentIntent: dig\nAgent: " + agentName + "\nAddr: " + addr + "\n"
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
	var agentStatus lifecycle.PolicyAgentStatus
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
	if agentStatus.Events != 2 || agentStatus.Delivered != 2 || agentStatus.Unmatched != 0 || agentStatus.Dropped != 0 || agentStatus.LastEvent.IsZero() {
		t.Errorf("the agent's counts: %+v", agentStatus)
	}

	// The Policy workflow ends after its idle time; its history is recorded now.
	recordHistory(t, lifecycle.Target{Project: d.project, CompositeApp: "ca", Version: "v1", DIG: "dig"}.PolicyWorkflowID(), "Policy-migrate-on-memory")
	// Deregistered, the agent's listener ends.
	c.do("DELETE", agentPath, nil).must(t, 200)
	tc := dialTemporal(t)
	defer tc.Close()
	listener := lifecycle.PolicyAgentInput{Name: agentName}.WorkflowID()
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
	Evaluations int64                      `json:"evaluations"`
	Actions     int64                      `json:"actions"`
	Last        *lifecycle.PolicyDecision  `json:"last"`
	Decisions   []lifecycle.PolicyDecision `json:"decisions"`
}
