package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"go.temporal.io/api/workflowservice/v1"

	"github.com/temco/temco/internal/core/lifecycle"
	"github.com/temco/temco/internal/dev/testenv"
)

// buildHooks builds the sample hooks worker from its own module; it may import nothing of
// temco's.
func buildHooks(t *testing.T) string {
	t.Helper()
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(root, "examples", "hooks")
	bin := filepath.Join(t.TempDir(), "hooks")
	if out, err := command(dir, "go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build examples/hooks: %v\n%s", err, out)
	}
	out, err := command(dir, "go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, p := range strings.Fields(string(out)) {
		if strings.HasPrefix(p, "github.com/temco/temco") {
			t.Errorf("examples/hooks imports %s: a hooks worker needs only the Temporal SDK", p)
		}
	}
	return bin
}

func startHooks(t *testing.T, bin, queue string) *controllerProc {
	t.Helper()
	p := &controllerProc{out: &syncBuffer{}}
	p.cmd = exec.Command(bin, "--temporal", stack.Temporal.Address(), "--namespace", "default", "--task-queue", queue)
	p.cmd.Stdout, p.cmd.Stderr = p.out, p.out
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.kill() })
	p.awaitLog(t, "hooks worker polling", time.Minute)
	return p
}

// tacHooks creates hook intents of d's DIG run by the sample worker on queue.
type tacHooks struct {
	d              *deployment
	queue, journal string
}

// add creates a blocking hook intent of the given type running workflow wf with params.
func (h tacHooks) add(name, hookType, wf string, params map[string]map[string]string, extra map[string]any) {
	params["journal"] = map[string]string{"path": h.journal}
	spec := map[string]any{"hookType": hookType, "hookBlocking": true, "hookBlockingTimeout": "5m",
		"workflowClient": map[string]any{"clientEndpointName": "", "clientEndpointPort": 9090},
		"temporal": map[string]any{"workflowClientName": wf,
			"workflowStartOptions": map[string]any{"taskqueue": h.queue, "retryPolicy": map[string]any{"maximumAttempts": 1}},
			"workflowParams":       map[string]any{"activityParams": params}}}
	for k, v := range extra {
		spec[k] = v
	}
	h.d.c.do("POST", h.d.dig()+"/temporal-action-controller", res(name, spec)).must(h.d.t, 201)
}

// check are the Check workflow's parameters for the Deployment name on cluster1.
func check(name, expect string, more ...string) map[string]map[string]string {
	c := map[string]string{"kubeconfig": stack.Clusters[0].Kubeconfig(), "namespace": "default", "kind": "Deployment",
		"name": name, "expect": expect}
	for i := 0; i+1 < len(more); i += 2 {
		c[more[i]] = more[i+1]
	}
	return map[string]map[string]string{"check": c}
}

// journal is what the hooks wrote, one "<hook> <what>" per line (run ids dropped).
func journal(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var out []string
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if l != "" {
			out = append(out, strings.TrimSpace(l[:strings.LastIndex(l, " run=")]))
		}
	}
	return out
}

// hookStatus is the hooks part of the DIG status.
type hookStatus struct {
	Error string              `json:"error"`
	Hooks []lifecycle.HookRun `json:"hooks"`
}

func (d *deployment) hooks() hookStatus {
	d.t.Helper()
	var s hookStatus
	d.c.do("GET", d.dig()+"/status?status=deployed&output=summary", nil).must(d.t, 200).json(d.t, &s)
	return s
}

// awaitJournal waits until the journal holds line.
func awaitJournal(t *testing.T, path, line string, timeout time.Duration) {
	t.Helper()
	awaitValue(t, fmt.Sprintf("the journal saying %q", line), timeout, func() []string { return journal(t, path) },
		func(lines []string) bool { return slices.Contains(lines, line) })
}

// tac's hooks run as child workflows of the lifecycle operations, served by the sample
// hooks worker in its own process: a failing blocking pre-install hook fails the
// instantiate with nothing applied; pre-install hooks see nothing applied and a worker DIG
// Ready; a post-install hook sees the app Ready on the live cluster; an update's pre-update
// hook survives its worker being killed and restarted mid-hook without repeating a step;
// termination hooks run before and after the deletion; the worker DIG is terminated after.
func TestTACHooks(t *testing.T) {
	bin := buildHooks(t)
	d := newDeployment(t, app{name: "hk", chart: webChart("hk"), placement: clusterNamed("cluster1")})
	d.create()
	queue := "hooks-" + d.project
	worker := startHooks(t, bin, queue)
	d.useController("tac", "action", "hooks")
	h := tacHooks{d: d, queue: queue, journal: filepath.Join(t.TempDir(), "journal")}

	// A refusing pre-install hook: the instantiate fails with its reason, nothing applied.
	h.add("gate", "pre-install", "Fail", map[string]map[string]string{"fail": {"message": "change freeze until Monday"}}, nil)
	acc := d.operate(lifecycle.OpInstantiate)
	s := d.await("InstantiateFailed", 2*time.Minute, "?status=deployed&output=summary",
		func(s status) bool { return s.Status == lifecycle.StatusInstantiateFailed })
	if !strings.Contains(s.Error, "pre-install gate (workflow user/"+d.project+"/ca/v1/dig/hook/gate, run ") || !strings.Contains(s.Error, "change freeze until Monday") {
		t.Errorf("status error %q does not name the hook, its run and its reason", s.Error)
	}
	if hs := d.hooks(); len(hs.Hooks) != 1 || hs.Hooks[0].State != "Failed" || hs.Hooks[0].RunID == "" {
		t.Errorf("status hooks: %s", pretty(hs))
	}
	if liveObject(t, 0, deployments, "hk") != nil {
		t.Error("the Deployment was applied although the pre-install hook failed")
	}
	recordHistory(t, acc.WorkflowID, "Instantiate-pre-install-hook-failed")
	if st := d.status(""); st.state() != lifecycle.StateApproved { // nothing applied: ready to instantiate again, as in EMCO
		t.Errorf("after the refused instantiate the DIG is %s, want Approved", st.state())
	}
	d.c.do("DELETE", d.dig()+"/temporal-action-controller/gate", nil).must(t, 204)

	// A worker DIG the pre-install hook needs, in a composite app of its own.
	wdig := workerDIG(d, "hw")
	h.add("pre-check", "pre-install", "Check", check("hk", "absent"), nil)
	h.add("worker-up", "pre-install", "Check", check("hw", "ready"), nil)
	d.c.do("POST", d.dig()+"/temporal-action-controller/worker-up/workers", res("hw", map[string]any{
		"deploymentIntentGroup": "wdig", "compositeApp": "wca", "compositeAppVersion": "v1", "startToCloseTimeout": 120000})).must(t, 201)
	h.add("post-ready", "post-install", "Check", check("hk", "ready"), map[string]any{"waitForReady": true})
	h.add("pre-update", "pre-update", "Steps", map[string]map[string]string{}, nil)
	h.add("post-update", "post-update", "Check", check("hk", "ready", "replicas", "2"), map[string]any{"waitForReady": true})
	h.add("pre-term", "pre-termination", "Check", check("hk", "present"), nil)
	h.add("post-term", "post-termination", "Check", check("hk", "absent"), nil)

	acc = d.operate(lifecycle.OpInstantiate)
	d.await("Instantiated", 3*time.Minute, "?status=deployed&output=summary",
		func(s status) bool { return s.Status == lifecycle.StatusInstantiated })
	if got, want := journal(t, h.journal), []string{"gate fail", "pre-check check absent ok", "worker-up check ready ok",
		"post-ready check ready ok"}; !slices.Equal(got, want) {
		t.Errorf("journal after instantiate %v, want %v", got, want)
	}
	hs := d.hooks()
	if len(hs.Hooks) != 3 || hs.Hooks[2].Name != "post-ready" || hs.Hooks[2].State != "Completed" || hs.Hooks[2].RunID == "" {
		t.Errorf("status hooks after instantiate: %s", pretty(hs))
	}
	// The hook runs carry the DIG's search attributes.
	ids := hookIDsByAttributes(t, d)
	if !slices.Contains(ids, hs.Hooks[0].WorkflowID) || !slices.Contains(ids, hs.Hooks[2].WorkflowID) {
		t.Errorf("hook workflows found by the DIG's search attributes: %v; status: %s", ids, pretty(hs))
	}
	// The worker DIG tac instantiated was terminated once the instantiate had finished.
	awaitStatusOf(t, d.c, wdig, lifecycle.StatusTerminated)
	recordHistory(t, acc.WorkflowID, "Instantiate-with-hooks")

	// Update: the pre-update hook's worker dies while the hook waits; restarted, the hook
	// goes on from where it was.
	d.c.do("PUT", d.dig(), res("dig", map[string]any{"compositeProfile": "prof", "version": "r1", "logicalCloud": d.logicalCloud,
		"overrideValues": []any{map[string]any{"app": "hk", "values": map[string]any{"replicas": "2"}}}})).must(t, 200)
	acc = d.operate(lifecycle.OpUpdate)
	awaitJournal(t, h.journal, "pre-update step1", time.Minute)
	worker.kill()
	worker = startHooks(t, bin, queue)
	signal := exec.Command(filepath.Join(binDir, "temporal"), "workflow", "signal", "--address", stack.Temporal.Address(),
		"--workflow-id", "user/"+d.project+"/ca/v1/dig/hook/pre-update", "--name", "continue")
	if out, err := signal.CombinedOutput(); err != nil {
		t.Fatalf("temporal workflow signal: %v\n%s", err, out)
	}
	d.await("updated", 3*time.Minute, "?status=deployed&output=summary", func(s status) bool {
		return s.Status == lifecycle.StatusInstantiated && s.Instance == acc.ContextID
	})
	want := []string{"gate fail", "pre-check check absent ok", "worker-up check ready ok", "post-ready check ready ok",
		"pre-update step1", "pre-update step2", "post-update check ready ok"}
	if got := journal(t, h.journal); !slices.Equal(got, want) {
		t.Errorf("journal after update %v, want %v", got, want)
	}
	recordHistory(t, acc.WorkflowID, "Update-with-hooks-worker-restarted")

	acc = d.operate(lifecycle.OpTerminate)
	d.await("Terminated", 2*time.Minute, "", func(s status) bool { return s.Status == lifecycle.StatusTerminated })
	want = append(want, "pre-term check present ok", "post-term check absent ok")
	if got := journal(t, h.journal); !slices.Equal(got, want) {
		t.Errorf("journal after terminate %v, want %v", got, want)
	}
	recordHistory(t, acc.WorkflowID, "Terminate-with-hooks")
}

// workerDIG creates composite app wca with one app and an approved DIG wdig placing it on
// cluster1, in d's project and logical cloud, and returns the DIG's path.
func workerDIG(d *deployment, appName string) string {
	t, c := d.t, d.c
	ca := "/projects/" + d.project + "/composite-apps/wca/v1"
	c.do("POST", "/projects/"+d.project+"/composite-apps", res("wca", map[string]any{"compositeAppVersion": "v1"})).must(t, 201)
	c.do("POST", ca+"/composite-profiles", res("prof", nil)).must(t, 201)
	c.multipart("POST", ca+"/apps", res(appName, nil), webChart(appName)).must(t, 201)
	c.multipart("POST", ca+"/composite-profiles/prof/profiles", res(appName+"-profile", map[string]any{"app": appName}),
		testenv.Profile("message: worker\n")).must(t, 201)
	dig := ca + "/deployment-intent-groups/wdig"
	c.do("POST", ca+"/deployment-intent-groups", res("wdig", map[string]any{
		"compositeProfile": "prof", "version": "r1", "logicalCloud": d.logicalCloud})).must(t, 201)
	c.do("POST", dig+"/generic-placement-intents", res("gpi", nil)).must(t, 201)
	c.do("POST", dig+"/generic-placement-intents/gpi/app-intents", res(appName+"-placement",
		map[string]any{"app": appName, "intent": clusterNamed("cluster1")})).must(t, 201)
	c.do("POST", dig+"/intents", res("intents", map[string]any{"intent": map[string]string{"genericPlacementIntent": "gpi"}})).must(t, 201)
	c.do("POST", dig+"/approve", nil).must(t, 202)
	return dig
}

// awaitStatusOf waits until the DIG at path has the context status want.
func awaitStatusOf(t *testing.T, c *client, path, want string) {
	t.Helper()
	awaitValue(t, path+" "+want, 2*time.Minute, func() status { return getAs[status](t, c, path+"/status?status=deployed&output=summary") },
		func(s status) bool { return s.Status == want })
}

// hookIDsByAttributes lists the workflows of d's DIG that ran as hooks, found by the
// DIG's search attributes in Temporal's visibility.
func hookIDsByAttributes(t *testing.T, d *deployment) []string {
	t.Helper()
	tc := dialTemporal(t)
	defer tc.Close()
	q := "project = '" + d.project + "' AND dig = 'dig' AND operation IN ('pre-install', 'post-install')"
	var ids []string
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(500 * time.Millisecond) {
		ids = ids[:0]
		resp, err := tc.ListWorkflow(context.Background(), &workflowservice.ListWorkflowExecutionsRequest{Query: q})
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range resp.GetExecutions() {
			ids = append(ids, e.GetExecution().GetWorkflowId())
		}
		if len(ids) >= 3 || time.Now().After(deadline) { // gate's failed run, pre-check's, post-ready's ...
			return ids
		}
	}
}
