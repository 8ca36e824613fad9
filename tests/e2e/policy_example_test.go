package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/temco/temco/features/policy/flow"
	"github.com/temco/temco/internal/core/lifecycle"
	"github.com/temco/temco/internal/dev/devstack"
	"github.com/temco/temco/internal/dev/testenv"
)

// EMCO's examples/test-policy files 05.register_agent.yaml and 06.define_policy_intent.yaml
// as EMCO has them (their licence header left out): the agent's address a placeholder,
// the intent naming EMCO's lab OPA server.
const (
	emcoRegisterAgent = `#create the workflow intent
version: emco/v2
resourceContext:
  anchor: policy/agents/sampleagent
addr: <agent endpoint>`

	emcoDefinePolicyIntent = `#create the workflow intent
version: emco/v2
resourceContext:
  anchor: projects/{{.ProjectName}}/composite-apps/{{.CompositeApp}}/v1/deployment-intent-groups/{{.DeploymentIntent}}/policy-intents/migrate-on-memory-policy
metadata:
  name: policy
  description: 'Migrate policy intent'
spec:
  policy:
    engineUrl: '172.31.82.234:8181/v1'
    namespace: emco
    policyName: data
  actor: temporal
  actorArg:
    workFlowMgr: <workflow_mgr_endpoint>
    workFlowName: {{.DeploymentIntent}}-workflow-intent
  event:
    agent: ''
    id: memory_usage_bytes`
)

// EMCO's test-policy flow on the stack, as docs/policy.md runs it: examples/policy-migrate
// plays the migrate-workflow sample's part (the DIG, placed on cluster1, and its workflow
// intent, temco's Relocate to cluster2) and EMCO's OPA (the project's policy standing in
// for it); EMCO's 05 and 06 run unchanged, 05's agent bound by the example's second
// registration to cluster1, where the example's metricsagent reports the DIG's memory
// over the policy's threshold. The policy fires, the workflow intent runs once and web
// moves to cluster2; temco delete then removes everything.
func TestPolicyExampleRunsEMCOsFiles(t *testing.T) {
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	example := filepath.Join(root, "examples", "policy-migrate")
	agentBin := buildExample(t, example, "metricsagent")
	port, err := devstack.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	agentAddr := fmt.Sprintf("127.0.0.1:%d", port)
	startAgent(t, agentBin, "--kubeconfig", stack.Clusters[0].Kubeconfig(), "--listen", agentAddr, "--every", "2s")

	project := projectName(t)
	dir := t.TempDir()
	override := "ProjectName: " + project + "\nClusterProvider1: " + project + "-1\nClusterProvider2: " + project + "-2\n" +
		"KubeConfig1: " + stack.Clusters[0].Kubeconfig() + "\nKubeConfig2: " + stack.Clusters[1].Kubeconfig() + "\nAgentAddr: " + agentAddr + "\n"
	for name, data := range map[string]string{"05.register_agent.yaml": emcoRegisterAgent, "06.define_policy_intent.yaml": emcoDefinePolicyIntent,
		"stack.yaml": override} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	// Run from the repository root, as docs/policy.md does: every document must succeed.
	e := func(f string) string { return filepath.Join("examples", "policy-migrate", f) }
	sample := []string{e("00.define-clusters-proj.yaml"), e("01.instantiate-lc.yaml"), e("02.define-app-dig.yaml"), e("03.instantiate-dig.yaml"),
		e("04.define-workflow-1.yaml")}
	policyFlow := []string{e("policy.yaml"), filepath.Join(dir, "05.register_agent.yaml"), e("agent-clusters.yaml"), filepath.Join(dir, "06.define_policy_intent.yaml")}
	values := []string{"-v", e("values.yaml"), "-v", filepath.Join(dir, "stack.yaml")}
	apply := func(files ...string) {
		t.Helper()
		args := append(append(append([]string{"apply"}, fileArgs(files)...), values...), "--wait")
		if out, err := temco(t, root, args...); err != nil {
			t.Fatalf("temco %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	// Deleting 05 deregisters the agent; agent-clusters.yaml, the same agent, is left out.
	deleted := append(append([]string{}, sample...), policyFlow[0], policyFlow[1], policyFlow[3])
	t.Cleanup(func() {
		if out, err := temco(t, root, append(append([]string{"delete"}, fileArgs(deleted)...), values...)...); err != nil {
			t.Errorf("temco delete: %v\n%s", err, out)
		}
	})

	apply(sample...)
	c := &client{t: t}
	dig := "/projects/" + project + "/composite-apps/capp1/v1/deployment-intent-groups/dig1"
	var st status
	c.do("GET", dig+"/status", nil).must(t, 200).json(t, &st)
	if st.Status != lifecycle.StatusInstantiated {
		t.Fatalf("the sample's DIG after its steps: %+v", st)
	}
	apply(policyFlow...)

	agent := awaitValue(t, "the agent's listener", time.Minute, func() flow.PolicyAgentStatus {
		return getAs[flow.PolicyAgentStatus](t, c, "/policy/agents/sampleagent/status")
	}, func(s flow.PolicyAgentStatus) bool { return s.Connected })
	if agent.Addr != agentAddr {
		t.Errorf("the agent as its second registration names it: %+v", agent)
	}
	intent := dig + "/policy-intents/migrate-on-memory-policy"
	pst := awaitValue(t, "the policy's decision", 2*time.Minute, func() policyStatusView { return getAs[policyStatusView](t, c, intent+"/status") },
		func(s policyStatusView) bool { return s.Actions >= 1 })
	dec := pst.Decisions[0]
	if dec.Outcome != "started" || dec.Workflow != "dig1-workflow-intent" || dec.Engine != "embedded, for 172.31.82.234:8181" ||
		dec.Agent != "EMCOTEST" || dec.Source != "sampleagent" || dec.WorkflowID != "user/"+project+"/capp1/v1/dig1/dig1-workflow-intent" {
		t.Fatalf("the decision: %+v", dec)
	}
	var rel relocation
	c.do("GET", dig+"/temporal-workflow-intents/dig1-workflow-intent/status?waitForResult=true&runID="+dec.RunID, nil).must(t, 200).json(t, &rel)
	var progress relocateProgress
	if err := json.Unmarshal(rel.Result, &progress); err != nil || progress.Step != "done" || rel.Error != "" {
		t.Fatalf("the relocation the policy started: %s (%v), error %q", rel.Result, err, rel.Error)
	}
	got := keys(snapshot(t, dec.ContextID, "web")) // the context the agent read off web's label
	if len(got) != 2 || !strings.HasPrefix(got[0], "cluster2/") || !strings.HasPrefix(got[1], "cluster2/") {
		t.Errorf("web after the relocation: %v, want its ConfigMap and Deployment on cluster2 only", got)
	}
	// Moved off the agent's cluster, the DIG gets no more of its events: the one decision
	// started the one run.
	if runs := runsOf(t, "WorkflowId = '"+dec.WorkflowID+"'"); len(runs) != 1 {
		t.Errorf("%d runs of %s, want 1", len(runs), dec.WorkflowID)
	}
}

// buildExample builds an example's command from its own module and fails when the module
// requires temco's.
func buildExample(t *testing.T, dir, name string) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), name)
	if out, err := command(dir, "go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build %s: %v\n%s", dir, err, out)
	}
	mods, err := command(dir, "go", "list", "-m", "all").Output()
	if err != nil {
		t.Fatalf("go list -m: %v", err)
	}
	for _, line := range strings.Split(string(mods), "\n") {
		if f := strings.Fields(line); len(f) > 0 && strings.HasPrefix(f[0], "github.com/temco/temco") {
			t.Errorf("%s requires %s: an agent needs none of temco", dir, line)
		}
	}
	return bin
}

// startAgent runs the example's agent until the test ends; its output is logged then.
func startAgent(t *testing.T, bin string, args ...string) {
	t.Helper()
	out := &syncBuffer{}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		t.Logf("metricsagent:\n%s", out.String())
	})
}

func fileArgs(files []string) []string {
	var args []string
	for _, f := range files {
		args = append(args, "-f", f)
	}
	return args
}
