package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	temporalclient "go.temporal.io/sdk/client"

	"github.com/temco/temco/internal/core/agent"
	"github.com/temco/temco/internal/core/lifecycle"
	"github.com/temco/temco/internal/core/store"
	"github.com/temco/temco/internal/dev/devstack"
	"github.com/temco/temco/internal/dev/testenv"
	"github.com/temco/temco/internal/dev/testenv/poll"
)

// Issue 67: retries, stops, a worker's or the api's restart resume an operation given to
// an agent without applying again what it applied. "Applied again" is counted where it
// cannot be missed: the agent cluster's kube-apiserver logs every patch of a ConfigMap
// (devstack.Cluster.AuditApplies), so each object's server-side applies by temco are
// counted by name, no-op applies included (those change neither resourceVersion nor
// managedFields, and would pass a check of the object itself). The apps are ConfigMaps
// for that reason.

// cmChart is a chart of three ConfigMaps: <name>-a holds the profile's message, <name>-b
// holds b (an update changes it alone), <name>-c is fixed.
func cmChart(name, b string) []byte {
	return testenv.Chart(name, "message: default\n", map[string]string{"cms.yaml": fmt.Sprintf(`apiVersion: v1
kind: ConfigMap
metadata: {name: %[1]s-a}
data: {message: {{ .Values.message | quote }}}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: %[1]s-b}
data: {value: %[2]q}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: %[1]s-c}
data: {value: fixed}
`, name, b)})
}

// cmNames are the objects of cmChart(name, ...).
func cmNames(name string) []string { return []string{name + "-a", name + "-b", name + "-c"} }

// auditedApplies counts, from kube's audit log, the server-side applies by temco's field
// manager of ConfigMaps names in namespace default, whatever their answer. Every name is
// in the map, 0 when never applied.
func auditedApplies(t *testing.T, kube *devstack.Cluster, names []string) map[string]int {
	t.Helper()
	out := map[string]int{}
	for _, n := range names {
		out[n] = 0
	}
	f, err := os.Open(filepath.Join(kube.Dir, "audit.log"))
	if errors.Is(err, os.ErrNotExist) {
		return out // nothing patched yet
	}
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var ev struct {
			Verb       string `json:"verb"`
			RequestURI string `json:"requestURI"`
			ObjectRef  struct{ Resource, Namespace, Name string }
		}
		if json.Unmarshal(sc.Bytes(), &ev) != nil || ev.Verb != "patch" || ev.ObjectRef.Resource != "configmaps" || ev.ObjectRef.Namespace != "default" {
			continue
		}
		u, err := url.Parse(ev.RequestURI)
		if err != nil || u.Query().Get("fieldManager") != "temco" {
			continue
		}
		if _, ok := out[ev.ObjectRef.Name]; ok {
			out[ev.ObjectRef.Name]++
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// wantApplies checks the applies counted of each object against want (by name). The
// audit event of a request is written as it is answered, a moment after its client may
// have read the answer: the count is read again until it matches, for a few seconds. A
// count above want never comes down.
func wantApplies(t *testing.T, kube *devstack.Cluster, when string, want map[string]int) {
	t.Helper()
	names := slices.Sorted(maps.Keys(want))
	poll.Until(t, when+": each object applied as often as expected", 30*time.Second, func(context.Context) error {
		if got := auditedApplies(t, kube, names); !maps.Equal(got, want) {
			return fmt.Errorf("server-side applies by object %v, want %v", got, want)
		}
		return nil
	})
}

// agentStore reads the agents' work and reports from the store itself: the test reads
// them while the api is down.
func agentStore(t *testing.T) *agent.Store {
	t.Helper()
	st, mc, err := store.Open(context.Background(), stack.Mongo.URI(), "temco")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = mc.Disconnect(context.Background()) })
	return agent.Open(st.Database())
}

// itemOf is the item of cluster key that holds (or removes) revision ctxID, and the
// agent's report on it (nil: none yet); a nil item when none is published.
func itemOf(t *testing.T, agents *agent.Store, key, ctxID string) (*agent.Item, *agent.Report) {
	t.Helper()
	items, reports, err := agents.Work(context.Background(), key)
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(items, func(it agent.Item) bool { return it.Context == ctxID || it.Remove == ctxID })
	if i < 0 {
		return nil, nil
	}
	it := &items[i]
	if j := slices.IndexFunc(reports, func(r agent.Report) bool { return r.ID == it.ID }); j >= 0 {
		return it, &reports[j]
	}
	return it, nil
}

// awaitAgentWait waits until the operation that published ctxID to cluster key waits in
// AwaitAgent: the activity has stored its task token for the item's generation (the
// api completes it with that token when the agent reports).
func awaitAgentWait(t *testing.T, agents *agent.Store, key, ctxID string) agent.Item {
	t.Helper()
	var it *agent.Item
	poll.Until(t, "the operation awaiting the agent of "+key, 2*time.Minute, func(context.Context) error {
		var rep *agent.Report
		if it, rep = itemOf(t, agents, key, ctxID); it == nil || it.Token == nil || it.TokenGen != it.Gen {
			return fmt.Errorf("item %+v", it)
		}
		if rep != nil && rep.Gen >= it.Gen {
			return fmt.Errorf("already reported: %+v", rep) // the agent must be held back
		}
		return nil
	})
	return *it
}

// awaitReport waits for the agent's report of generation gen of the item holding ctxID.
func awaitReport(t *testing.T, agents *agent.Store, key, ctxID string, gen int64) agent.Report {
	t.Helper()
	var rep *agent.Report
	poll.Until(t, "the agent's report of "+ctxID, 2*time.Minute, func(context.Context) error {
		var it *agent.Item
		if it, rep = itemOf(t, agents, key, ctxID); it == nil || rep == nil || rep.Gen != gen {
			return fmt.Errorf("item %+v, report %+v", it, rep)
		}
		return nil
	})
	return *rep
}

// temporalOf dials the stack's Temporal (descriptions only: no payload is decoded).
func temporalOf(t *testing.T) temporalclient.Client {
	t.Helper()
	tc, err := temporalclient.Dial(temporalclient.Options{HostPort: stack.Temporal.Address(), Logger: quiet{}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(tc.Close)
	return tc
}

// pendingActivities lists the activity types workflowID has pending, and whether it runs.
func pendingActivities(t *testing.T, tc temporalclient.Client, workflowID string) (types []string, running bool) {
	t.Helper()
	d, err := tc.DescribeWorkflowExecution(context.Background(), workflowID, "")
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range d.GetPendingActivities() {
		types = append(types, a.GetActivityType().GetName())
	}
	return types, d.GetWorkflowExecutionInfo().GetStatus() == enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING
}

// restartOnFailure starts the worker and the api again should the test end with either
// down: the tests after it need them.
func restartOnFailure(t *testing.T) {
	t.Cleanup(func() {
		if stack.Worker.Exited() != nil {
			if err := stack.StartWorker(context.Background()); err != nil {
				t.Errorf("start the worker again: %v", err)
			}
		}
		if stack.API.Exited() != nil {
			if err := stack.StartAPI(context.Background()); err != nil {
				t.Errorf("start the api again: %v", err)
			}
		}
	})
}

// start asks for op on d's DIG and returns what was accepted, without waiting for it; a
// 409 saying the last operation still runs is asked again (see deployment.update).
func start(d *deployment, op string, body any) lifecycle.OpAccepted {
	d.t.Helper()
	r := d.c.do("POST", d.dig()+"/"+op, body)
	for deadline := time.Now().Add(30 * time.Second); r.code == http.StatusConflict && bytes.Contains(r.body, []byte(" is running")) && time.Now().Before(deadline); {
		time.Sleep(200 * time.Millisecond) // the client's retry pause, not a synchronisation
		r = d.c.do("POST", d.dig()+"/"+op, body)
	}
	var acc lifecycle.OpAccepted
	r.must(d.t, 202).json(d.t, &acc)
	return acc
}

// allApplied tells whether s shows exactly names, each Applied.
func allApplied(s status, names []string) bool {
	var got []string
	for _, a := range s.Apps {
		for _, c := range a.Clusters {
			for _, r := range c.Resources {
				if r.RsyncStatus != lifecycle.ResApplied {
					return false
				}
				got = append(got, r.Name)
			}
		}
	}
	slices.Sort(got)
	return slices.Equal(got, names)
}

// doneLines counts the agent's log lines saying it finished revision ctxID: each is one
// run of the item (apply, statuses, then the report).
func doneLines(t *testing.T, log, ctxID string) int {
	t.Helper()
	b, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for l := range strings.Lines(string(b)) {
		if strings.Contains(l, `"msg":"agent: done"`) && strings.Contains(l, `"revision":"`+ctxID+`"`) {
			n++
		}
	}
	return n
}

// The worker SIGKILLed while an operation waits in AwaitAgent for the agent's report:
// nothing runs on a worker then (the activity stored its task token and returned
// ErrResultPending), so nothing is lost.
//   - Instantiate: the agent, held back until the worker is dead, applies and reports
//     while no worker runs; the api completes the activity with its stored token (no
//     AwaitAgent pending any more, the workflow still running: it cannot move without a
//     worker); the restarted worker ends the operation Instantiated.
//   - Update: the worker killed and restarted (its successor takes the pending attempt
//     over) before the agent reports; the agent's later report ends the operation within
//     minutes, not when the pending attempt times out (10 minutes).
//
// Each object is applied once per content: the worker's restart publishes nothing again
// (the item's generation is the one the agent first worked on), so the agent does not
// apply again.
func TestAgentAwaitedAcrossAWorkerKill(t *testing.T) {
	kube, name, key := stack.Clusters[2], "wk-agent", provider+"+wk-agent"
	restartOnFailure(t)
	tc, agents := temporalOf(t), agentStore(t)
	d, credFile, log := heldBack(t, kube, name, "wkcm") // it reports only once the worker is dead
	names := cmNames("wkcm")

	inst := start(d, lifecycle.OpInstantiate, nil)
	it := awaitAgentWait(t, agents, key, inst.ContextID)
	stack.Worker.Kill()
	t.Log("worker killed, the instantiate awaiting the agent")
	agentProc := startTemcoAgent(t, []string{"--credential-file", credFile}, "", kube.Kubeconfig(), log)
	awaitReport(t, agents, key, inst.ContextID, it.Gen)
	// The api completed AwaitAgent with the stored token though no worker runs: the
	// activity is no longer pending, and the workflow, without a worker, has not ended.
	poll.Until(t, "AwaitAgent completed by the agent's report, no worker running", time.Minute, func(context.Context) error {
		if types, running := pendingActivities(t, tc, inst.WorkflowID); !running || slices.Contains(types, lifecycle.AwaitAgent.Name()) {
			return fmt.Errorf("pending %v, running %v", types, running)
		}
		return nil
	})
	if err := stack.StartWorker(context.Background()); err != nil {
		t.Fatal(err)
	}
	s := d.await("Instantiated after the worker's restart", 3*time.Minute, "", func(s status) bool { return s.Status == lifecycle.StatusInstantiated })
	if !allApplied(s, names) {
		t.Errorf("resources %v, want %v Applied", resources(s), names)
	}
	wantApplies(t, kube, "instantiated", map[string]int{names[0]: 1, names[1]: 1, names[2]: 1})
	if now, _ := itemOf(t, agents, key, inst.ContextID); now == nil || now.Gen != it.Gen {
		t.Errorf("the item after the worker's restart: %+v, want generation %d (published once)", now, it.Gen)
	}

	// Update: b changes. The worker dies and comes back before the agent reports.
	agentProc.kill()
	d.c.multipart("PUT", d.ca()+"/apps/wkcm", res("wkcm", nil), cmChart("wkcm", "two")).must(t, 200)
	upd := start(d, lifecycle.OpUpdate, nil)
	it = awaitAgentWait(t, agents, key, upd.ContextID)
	stack.Worker.Kill()
	if err := stack.StartWorker(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Log("worker killed and restarted, the update awaiting the agent")
	startTemcoAgent(t, []string{"--credential-file", credFile}, "", kube.Kubeconfig(), log)
	// Well within the AwaitAgent attempt's 10 minutes: a report lost to a token the
	// restart made stale would wait for them.
	s = d.await("the update Instantiated", 3*time.Minute, "", func(s status) bool {
		return s.Instance == upd.ContextID && s.Status == lifecycle.StatusInstantiated
	})
	if !allApplied(s, names) {
		t.Errorf("resources %v, want %v Applied", resources(s), names)
	}
	t.Logf("the update's retried attempts, by their last failure: %v", retriedBecause(t, upd.WorkflowID))
	wantApplies(t, kube, "updated", map[string]int{names[0]: 1, names[1]: 2, names[2]: 1})
	if now, rep := itemOf(t, agents, key, upd.ContextID); now == nil || now.Gen != it.Gen || rep == nil || rep.Gen != it.Gen {
		t.Errorf("the item after the worker's restart: %+v, its report %+v; want both at generation %d", now, rep, it.Gen)
	}

	d.operate(lifecycle.OpTerminate)
	d.await("Terminated", 3*time.Minute, "", func(s status) bool { return s.Status == lifecycle.StatusTerminated })
	for _, n := range names {
		eventually(t, n+" removed by the agent", time.Minute, func() error { return presentOn(t, kube, "configmap", n, false) })
	}
}

// gate stands between an agent and the api. It holds the next request that matches what
// it is told to hold until released (the test kills the api meanwhile), and notes what
// was answered to each request it passed on.
type gate struct {
	proxy *httputil.ReverseProxy

	mu      sync.Mutex
	match   func(*http.Request) bool // the request to hold next; nil: none
	held    chan string              // "METHOD path" of the request held
	release chan struct{}
	answers []string // "METHOD path code", in order
}

// newGate starts a gate in front of the stack's api; its URL is the agent's --api.
func newGate(t *testing.T) (*gate, string) {
	target, err := url.Parse(strings.TrimSuffix(apiURL, "/v2"))
	if err != nil {
		t.Fatal(err)
	}
	g := &gate{proxy: httputil.NewSingleHostReverseProxy(target)}
	g.proxy.ErrorHandler = func(w http.ResponseWriter, _ *http.Request, _ error) { w.WriteHeader(http.StatusBadGateway) }
	srv := httptest.NewServer(g)
	t.Cleanup(srv.Close)
	return g, srv.URL
}

// hold arms the gate: the next request match accepts is held until g.let().
func (g *gate) hold(match func(*http.Request) bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.match, g.held, g.release = match, make(chan string, 1), make(chan struct{})
}

// awaitHeld waits until the gate holds a request, and answers it ("METHOD path").
func (g *gate) awaitHeld(t *testing.T, timeout time.Duration) string {
	t.Helper()
	g.mu.Lock()
	held := g.held
	g.mu.Unlock()
	select {
	case call := <-held:
		return call
	case <-time.After(timeout):
		t.Fatalf("the gate held no request within %s; answered %v", timeout, g.answered())
		return ""
	}
}

// let releases the held request: it goes on to the api.
func (g *gate) let() {
	g.mu.Lock()
	defer g.mu.Unlock()
	close(g.release)
}

func (g *gate) answered() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return slices.Clone(g.answers)
}

func (g *gate) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	call := r.Method + " " + r.URL.Path
	g.mu.Lock()
	var release chan struct{}
	if g.match != nil && g.match(r) {
		g.match, release = nil, g.release
		g.held <- call
	}
	g.mu.Unlock()
	if release != nil {
		select {
		case <-release:
		case <-r.Context().Done(): // the agent went away
		}
	}
	cw := &codeWriter{ResponseWriter: w, code: http.StatusOK} // artifacts_bench_test.go's
	g.proxy.ServeHTTP(cw, r)
	g.mu.Lock()
	g.answers = append(g.answers, fmt.Sprintf("%s %d", call, cw.code))
	g.mu.Unlock()
}

// awaitAnswer waits until the gate answered call (a "METHOD path" it holds) with code.
func (g *gate) awaitAnswer(t *testing.T, call string, code int) {
	t.Helper()
	poll.Until(t, fmt.Sprintf("%s answered %d", call, code), time.Minute, func(context.Context) error {
		if a := g.answered(); !slices.Contains(a, fmt.Sprintf("%s %d", call, code)) {
			return fmt.Errorf("answered %v", a)
		}
		return nil
	})
}

// heldBack registers agent cluster name on kube, joins its agent (its credential kept in
// the returned file), creates a DIG of cmChart(appName) placed there, and stops the agent:
// each test starts it again when its window is set up. The logical cloud's set-up is an
// item of the agent's too: it runs before the agent stops.
func heldBack(t *testing.T, kube *devstack.Cluster, name, appName string) (d *deployment, credFile, log string) {
	t.Helper()
	credFile = filepath.Join(t.TempDir(), "credential")
	agentProc, log := joinAgentCluster(t, &client{t: t}, name, kube, []string{"--credential-file", credFile})
	d = newDeployment(t, app{name: appName, chart: cmChart(appName, "one"), placement: clusterNamed(name)})
	d.logicalCloud, d.setUpCloud = "agents", onClusters(name)
	d.create()
	agentProc.kill()
	return d, credFile, log
}

// startAgentAt is startTemcoAgent with the agent calling api (a gate) instead of the
// stack's api, keeping its credential in credFile.
func startAgentAt(t *testing.T, api, credFile string, kube *devstack.Cluster, log string) *agentProcess {
	t.Helper()
	out, err := os.OpenFile(log, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(self, "agent", "--api", api, "--kubeconfig", kube.Kubeconfig(), "--poll", "1s", "--credential-file", credFile)
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &agentProcess{cmd: cmd, exited: make(chan struct{})}
	go func() { _ = cmd.Wait(); out.Close(); close(p.exited) }()
	t.Cleanup(p.kill)
	return p
}

// The api SIGKILLed while its agent is mid-conversation: the agent, its calls failing,
// retries once the api is back, the operation ends, and nothing is applied twice.
//   - Instantiate: killed as the agent, having applied every object and sent their
//     statuses, sends its report (held at the gate until the api is dead: it never
//     reaches it). Back, the agent works the unreported item again: from the statuses it
//     sent, it finds the objects applied on its cluster and applies none of them again.
//   - Update: killed as the agent, having read its work, asks for the new revision. Back,
//     it applies the one object that changed, once.
//
// Not covered: the api lost before the statuses reach it. The agent then finds no status
// and applies every object again (unchanged, but sent again), which issue 67 rules out.
func TestAgentRetriesThroughAnAPIKill(t *testing.T) {
	kube, name, key := stack.Clusters[1], "ak-agent", provider+"+ak-agent"
	restartOnFailure(t)
	agents := agentStore(t)
	d, credFile, log := heldBack(t, kube, name, "akcm")
	names := cmNames("akcm")
	// From here on the agent calls through the gate, with the credential it kept.
	g, gateURL := newGate(t)
	g.hold(func(r *http.Request) bool { return r.Method == "POST" && strings.HasSuffix(r.URL.Path, "/report") })
	startAgentAt(t, gateURL, credFile, kube, log)

	inst := start(d, lifecycle.OpInstantiate, nil)
	report := g.awaitHeld(t, 3*time.Minute)
	// The agent reports once it applied everything: each object once so far.
	wantApplies(t, kube, "before the api's kill", map[string]int{names[0]: 1, names[1]: 1, names[2]: 1})
	stack.API.Kill()
	t.Logf("api killed, the agent's %s held", report)
	g.let()
	g.awaitAnswer(t, report, http.StatusBadGateway) // it never reached the api
	if it, rep := itemOf(t, agents, key, inst.ContextID); it == nil || rep != nil {
		t.Fatalf("with the api down, the item %+v has a report %+v", it, rep)
	}
	if err := stack.StartAPI(context.Background()); err != nil {
		t.Fatal(err)
	}
	s := d.await("Instantiated after the api's restart", 3*time.Minute, "", func(s status) bool { return s.Status == lifecycle.StatusInstantiated })
	if !allApplied(s, names) {
		t.Errorf("resources %v, want %v Applied", resources(s), names)
	}
	// The agent worked the item again (it logs each run), and applied nothing again.
	if n := doneLines(t, log, inst.ContextID); n < 2 {
		t.Errorf("the agent ran the instantiate's item %d times, want it run again after the failed report", n)
	}
	wantApplies(t, kube, "instantiated", map[string]int{names[0]: 1, names[1]: 1, names[2]: 1})
	if it, rep := itemOf(t, agents, key, inst.ContextID); it == nil || rep == nil || rep.Gen != it.Gen || rep.Applied != inst.ContextID {
		t.Errorf("the item %+v, its report %+v: want the report of its generation, holding %s", it, rep, inst.ContextID)
	}
	if !slices.Contains(g.answered(), report+" 204") {
		t.Errorf("no report reached the api through the gate: %v", g.answered())
	}

	// Update: b changes; the api dies as the agent, its work read, asks for the revision.
	d.c.multipart("PUT", d.ca()+"/apps/akcm", res("akcm", nil), cmChart("akcm", "two")).must(t, 200)
	g.hold(func(r *http.Request) bool {
		return r.Method == "GET" && strings.Contains(r.URL.Path, "/agent/revisions/") && !strings.HasSuffix(r.URL.Path, "/"+inst.ContextID)
	})
	upd := start(d, lifecycle.OpUpdate, nil)
	revision := g.awaitHeld(t, 3*time.Minute)
	if !strings.HasSuffix(revision, "/"+upd.ContextID) {
		t.Fatalf("held %s, want the update's revision %s", revision, upd.ContextID)
	}
	stack.API.Kill()
	t.Logf("api killed, the agent's %s held", revision)
	g.let()
	g.awaitAnswer(t, revision, http.StatusBadGateway)
	wantApplies(t, kube, "with the api down", map[string]int{names[0]: 1, names[1]: 1, names[2]: 1})
	if err := stack.StartAPI(context.Background()); err != nil {
		t.Fatal(err)
	}
	s = d.await("the update Instantiated after the api's restart", 3*time.Minute, "", func(s status) bool {
		return s.Instance == upd.ContextID && s.Status == lifecycle.StatusInstantiated
	})
	if !allApplied(s, names) {
		t.Errorf("resources %v, want %v Applied", resources(s), names)
	}
	wantApplies(t, kube, "updated", map[string]int{names[0]: 1, names[1]: 2, names[2]: 1})
	if b, _ := os.ReadFile(log); !bytes.Contains(b, []byte("work not finished; retrying")) {
		t.Errorf("the agent's log says no retry:\n%s", b)
	}

	d.operate(lifecycle.OpTerminate)
	d.await("Terminated", 3*time.Minute, "", func(s status) bool { return s.Status == lifecycle.StatusTerminated })
	for _, n := range names {
		eventually(t, n+" removed by the agent", time.Minute, func() error { return presentOn(t, kube, "configmap", n, false) })
	}
}

// A stop while an operation waits for an agent that does not report ends the operation
// at once, not when AwaitAgent's attempt times out (10 minutes) nor when the agent
// returns. The item stays published: the agent, back, applies it (once), and a terminate
// then goes through it as usual.
func TestAgentAwaitedOperationStops(t *testing.T) {
	kube, name, key := stack.Clusters[0], "stop-agent", provider+"+stop-agent"
	tc, agents := temporalOf(t), agentStore(t)
	d, credFile, log := heldBack(t, kube, name, "stcm")
	names := cmNames("stcm")

	inst := start(d, lifecycle.OpInstantiate, nil)
	it := awaitAgentWait(t, agents, key, inst.ContextID)
	stopped := time.Now()
	d.c.do("POST", d.dig()+"/stop", nil).must(t, 202)
	// Two minutes: a fifth of the attempt's timeout, however loaded the machine.
	d.await("InstantiateStopped", 2*time.Minute, "", func(s status) bool { return s.Status == lifecycle.StatusInstantiateStopped })
	t.Logf("stopped %s after the stop was asked", time.Since(stopped).Round(time.Millisecond))
	// Closed: the AwaitAgent it cancelled is not waited for (its description may still
	// list it: a closed workflow's pending activities are kept as they were).
	if _, running := pendingActivities(t, tc, inst.WorkflowID); running {
		t.Errorf("the stopped operation's workflow %s still runs", inst.WorkflowID)
	}
	wantApplies(t, kube, "stopped, the agent away", map[string]int{names[0]: 0, names[1]: 0, names[2]: 0})

	startTemcoAgent(t, []string{"--credential-file", credFile}, "", kube.Kubeconfig(), log)
	rep := awaitReport(t, agents, key, inst.ContextID, it.Gen)
	if rep.Applied != inst.ContextID || rep.Result.Done != len(names) {
		t.Errorf("the agent's report after the stop: %+v, want %d objects of %s applied", rep, len(names), inst.ContextID)
	}
	wantApplies(t, kube, "the agent back", map[string]int{names[0]: 1, names[1]: 1, names[2]: 1})

	d.operate(lifecycle.OpTerminate)
	d.await("Terminated", 3*time.Minute, "", func(s status) bool { return s.Status == lifecycle.StatusTerminated })
	for _, n := range names {
		eventually(t, n+" removed by the agent", time.Minute, func() error { return presentOn(t, kube, "configmap", n, false) })
	}
}

// Statuses that never reached temco (the api killed as the agent sends them) do not make
// the agent apply again: its retry looks at each object on the cluster first.
func TestAgentStatusesLostAreNotAppliedAgain(t *testing.T) {
	kube, name := stack.Clusters[2], "sl-agent"
	restartOnFailure(t)
	d, credFile, log := heldBack(t, kube, name, "slcm")
	names := cmNames("slcm")
	g, gateURL := newGate(t)
	g.hold(func(r *http.Request) bool { return r.Method == "POST" && strings.HasSuffix(r.URL.Path, "/statuses") })
	startAgentAt(t, gateURL, credFile, kube, log)

	inst := start(d, lifecycle.OpInstantiate, nil)
	held := g.awaitHeld(t, 3*time.Minute)
	stack.API.Kill()
	g.let()
	g.awaitAnswer(t, held, http.StatusBadGateway) // the statuses never reached temco
	if err := stack.StartAPI(context.Background()); err != nil {
		t.Fatal(err)
	}
	s := d.await("Instantiated after the api's restart", 3*time.Minute, "", func(s status) bool { return s.Status == lifecycle.StatusInstantiated })
	if !allApplied(s, names) {
		t.Errorf("resources %v, want %v Applied", resources(s), names)
	}
	if n := doneLines(t, log, inst.ContextID); n < 1 {
		t.Errorf("the agent never finished the instantiate's item")
	}
	wantApplies(t, kube, "instantiated", map[string]int{names[0]: 1, names[1]: 1, names[2]: 1})
}

// A report stored whose wait was never completed (the api stopped between the two) is
// passed on the next time an api reads the agent's work, not when the wait's attempt
// times out (the offline policy's after, 10 minutes).
func TestAgentReportStoredButNotPassedOnIsPassedOn(t *testing.T) {
	kube, name, key := stack.Clusters[0], "rs-agent", provider+"+rs-agent"
	agents := agentStore(t)
	d, credFile, log := heldBack(t, kube, name, "rscm")
	g, _ := newGate(t)
	// The first report is stored as the api stores it, and the agent answered 502: an api
	// that died before completing the wait.
	stored := make(chan struct{})
	var once sync.Once
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == "POST" && strings.HasSuffix(r.URL.Path, "/report") {
			first := false
			once.Do(func() { first = true })
			if first {
				var o agent.Outcome
				_ = json.NewDecoder(r.Body).Decode(&o)
				inst, _ := url.PathUnescape(strings.TrimSuffix(strings.TrimPrefix(r.URL.Path, "/v2/agent/work/"), "/report"))
				if _, err := agents.SaveReport(r.Context(), agent.ItemID(key, inst), agent.Report{Cluster: key, Gen: o.Gen, Result: o.Result, Applied: o.Applied}); err != nil {
					t.Errorf("store the report: %v", err)
				}
				close(stored)
				w.WriteHeader(http.StatusBadGateway)
				return
			}
		}
		g.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	startAgentAt(t, srv.URL, credFile, kube, log)

	inst := start(d, lifecycle.OpInstantiate, nil)
	select {
	case <-stored:
	case <-time.After(3 * time.Minute):
		t.Fatalf("the agent sent no report; answered %v", g.answered())
	}
	// Well below the wait's attempt (10 minutes): passed on by an api, not by a retry.
	s := d.await("Instantiated", 3*time.Minute, "", func(s status) bool { return s.Status == lifecycle.StatusInstantiated })
	if !allApplied(s, cmNames("rscm")) {
		t.Errorf("resources %v, want every object Applied", resources(s))
	}
	if it, rep := itemOf(t, agents, key, inst.ContextID); it == nil || rep == nil || rep.Gen != it.Gen {
		t.Errorf("the item %+v, its report %+v", it, rep)
	}
}
