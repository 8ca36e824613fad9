package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/temco/temco/features/policy/flow"
	"github.com/temco/temco/internal/adapters/policyevents"
	"github.com/temco/temco/internal/core/lifecycle"
	"github.com/temco/temco/internal/dev/testenv"
	"github.com/temco/temco/internal/dev/testenv/poll"
)

// memoryBombPolicy asks for 4 GiB in one concat(): the sandbox refuses it at once, having
// touched next to nothing. A bomb that grows its string step by step (replace(), as
// internal/adapters/policyengine's unit test has) writes a gigabyte before it is refused,
// a second of CPU that the suite's load on two cores stretched past the 10 s time limit:
// the evaluation then failed for its time, not its memory.
func memoryBombPolicy() string {
	return `package emco

s0 := "xxxxxxxx"
s1 := concat("", [s0 | some _ in numbers.range(1, 32768)])
s2 := concat("", [s1 | some _ in numbers.range(1, 16384)])
actionRequired := count(s2) > 0
`
}

// registerPolicyAgent registers the agent serving EMCO's events protocol at addr for d's
// DIG and waits for its listener to connect; it is deregistered when the test ends. The
// one place this test registers an agent.
func registerPolicyAgent(t *testing.T, d *deployment, name, addr string) {
	t.Helper()
	path := "/policy/agents/" + name
	d.c.do("POST", path, map[string]any{"metadata": map[string]any{"name": name}, "addr": addr,
		"clusters": []any{map[string]any{"clusterProvider": provider, "cluster": "cluster1"}}}).must(t, 201)
	t.Cleanup(func() { d.c.do("DELETE", path, nil) })
	awaitValue(t, "agent "+name+" connected", time.Minute, func() flow.PolicyAgentStatus {
		return getAs[flow.PolicyAgentStatus](t, d.c, path+"/status")
	}, func(s flow.PolicyAgentStatus) bool { return s.Connected && s.Addr == addr })
}

// A tenant's embedded policy that takes all the memory it can fails its evaluation with
// the reason, recorded in its intent's status, while another project's DIG instantiates
// beside it on the same worker, which lives on: the policy was evaluated in a child
// process with its memory bounded (internal/adapters/policyengine/sandbox.go), not in the
// worker.
func TestAPolicyThatEatsMemoryFailsItsEvaluationAlone(t *testing.T) {
	worker := stack.Worker.Cmd.Process.Pid
	d := newDeployment(t, app{name: "web", chart: webChart("web"), placement: clusterNamed("cluster1")})
	d.create()
	t.Cleanup(d.terminateIfRunning)
	acc := d.operate(lifecycle.OpInstantiate)
	d.await("Instantiated", 2*time.Minute, "", func(s status) bool { return s.Status == lifecycle.StatusInstantiated })
	beside := newDeployment(t, app{name: "beside", chart: webChart("beside"), placement: clusterLabel("edge")})
	beside.project += "-beside"
	beside.create()
	t.Cleanup(beside.terminateIfRunning)

	// The project's policy, a workflow intent for it to start, and the intent.
	c := d.c
	c.do("POST", "/projects/"+d.project+"/policies", res("bomb", map[string]any{"rego": memoryBombPolicy()})).must(t, 201)
	c.do("POST", d.dig()+"/temporal-workflow-intents", res("relocate-web", map[string]any{"workflowClient": map[string]any{}, "temporal": map[string]any{
		"workflowClientName":   lifecycle.WorkflowRelocate,
		"workflowStartOptions": map[string]any{"TaskQueue": "temco", "WorkflowExecutionTimeout": int64(10 * time.Minute)},
		"workflowParams": map[string]any{"activityParams": map[string]any{"relocate": map[string]string{"project": d.project, "compositeApp": "ca",
			"compositeAppVersion": "v1", "deploymentIntentGroup": "dig", "app": "web", "from": provider + "+cluster1", "to": provider + "+cluster2"}}},
	}})).must(t, 201)
	intent := d.dig() + "/policy-intents/on-memory"
	c.do("POST", d.dig()+"/policy-intents", res("on-memory", map[string]any{
		"policy": map[string]any{"namespace": "emco", "policyName": "data"}, "actor": "temporal",
		"actorArg": map[string]any{"workFlowName": "relocate-web"}, "event": map[string]any{"id": "memory_usage_bytes", "agent": ""},
	})).must(t, 201)
	addr, events := testenv.PolicyAgent(t)
	agent := d.project + "-agent"
	registerPolicyAgent(t, d, agent, addr)

	metric, _ := json.Marshal(map[string]any{"metric": "memory_usage_bytes", "contextId": acc.ContextID, "appName": "web",
		"value": map[string]any{"items": []any{map[string]any{"value": "1500000000"}}}})
	events <- policyevents.Event{EventID: "memory_usage_bytes", AgentID: agent, ContextID: acc.ContextID, AppName: "web",
		AgentSpec: json.RawMessage(`{"agentId":"` + agent + `"}`), MetricList: metric}
	beside.operate(lifecycle.OpInstantiate)

	st := awaitValue(t, "the evaluation recorded", 2*time.Minute, func() policyStatusView {
		return getAs[policyStatusView](t, c, intent+"/status")
	}, func(s policyStatusView) bool { return s.Evaluations >= 1 })
	want := "the policy needs more than 1024 MiB of memory to evaluate, the most a policy may take"
	if st.Last == nil || st.Last.Outcome != "not evaluated" || !strings.Contains(st.Last.Error, want) || st.Actions != 0 {
		t.Errorf("the policy intent's status %+v (last %+v): want its evaluation failed saying %q", st, st.Last, want)
	}
	beside.await("Instantiated", 2*time.Minute, "", func(s status) bool { return s.Status == lifecycle.StatusInstantiated })
	if pid := stack.Worker.Cmd.Process.Pid; pid != worker || stack.Worker.Cmd.ProcessState != nil {
		t.Fatalf("the worker was %d, is %d (%v): want it alive, the same process", worker, pid, stack.Worker.Cmd.ProcessState)
	}
	// Spare children wait for evaluations to come without using CPU; none works on.
	poll.Until(t, "no evaluation still running", time.Minute, func(context.Context) error {
		if kids, err := testenv.WorkingChildren(worker, 200*time.Millisecond); err != nil || len(kids) > 0 {
			return fmt.Errorf("the worker's children %v use CPU (%v)", kids, err)
		}
		return nil
	})
}
