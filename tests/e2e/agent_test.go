package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
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

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/temco/temco/internal/core/lifecycle"
	"github.com/temco/temco/internal/dev/devstack"
	"github.com/temco/temco/internal/dev/testenv"
)

// agentProcess is a temco agent run as it would run in a pod of its cluster: with that
// cluster's own kubeconfig, calling the api.
type agentProcess struct {
	cmd    *exec.Cmd
	exited chan struct{} // closed once it ended
}

// startTemcoAgent starts temco agent keeping its credential as keep says (a
// --credential-file or --credential-secret flag and its value), joining with token when
// none is kept; it reaches its cluster with kubeconfig.
func startTemcoAgent(t *testing.T, keep []string, token, kubeconfig, log string) *agentProcess {
	t.Helper()
	out, err := os.OpenFile(log, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(self, append([]string{"agent", "--api", strings.TrimSuffix(apiURL, "/v2"), "--kubeconfig", kubeconfig, "--poll", "1s"}, keep...)...)
	cmd.Env = append(os.Environ(), "TEMCO_AGENT_JOIN_TOKEN="+token)
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &agentProcess{cmd: cmd, exited: make(chan struct{})}
	go func() { _ = cmd.Wait(); out.Close(); close(p.exited) }()
	t.Cleanup(p.kill)
	return p
}

func (p *agentProcess) kill() {
	select {
	case <-p.exited:
	default:
		_ = p.cmd.Process.Kill()
		<-p.exited
	}
}

// An agent cluster: registered without a kubeconfig; its agent, a temco agent process
// with the cluster's own credentials, joins with a join token and applies what a DIG
// places there, and the DIG's status shows each object as the agent reports it. An
// update prunes what the new revision lacks; while the agent is down an update waits for
// it (its objects say so) and ends once the agent, restarted with the credential it kept,
// applies the newest revision; terminate removes everything; a revoked agent stops.
func TestAgentClusterDeploysThroughItsAgent(t *testing.T) {
	kube := stack.Clusters[1] // the agent's own cluster, registered here a second time as "edge-agent"
	c := &client{t: t}
	keep := []string{"--credential-file", filepath.Join(t.TempDir(), "credential")}
	agentProc, log := joinAgentCluster(t, c, "edge-agent", kube, keep)
	if r := c.do("GET", "/cluster-providers/"+provider+"/clusters/edge-agent", nil).must(t, 200); !strings.Contains(string(r.body), `"access":"agent"`) {
		t.Fatalf("the agent cluster's registration: %s", r.body)
	}
	applyAgentManifest(t, c, "edge-agent", kube)

	d := newDeployment(t, app{name: "aweb", chart: webChart("aweb"), placement: clusterNamed("edge-agent")})
	d.logicalCloud, d.setUpCloud = "agents", onClusters("edge-agent")
	d.create()
	inst := d.operate(lifecycle.OpInstantiate)
	s := d.await("Instantiated", 3*time.Minute, "", func(s status) bool { return s.Status == lifecycle.StatusInstantiated })
	recordHistory(t, inst.WorkflowID, "Instantiate-agent-cluster")
	for _, r := range resources(s) {
		if !strings.HasPrefix(r, "edge-agent ") || !strings.Contains(r, " Applied: ") {
			t.Errorf("resource status %q, want Applied on edge-agent", r)
		}
	}
	if n := len(resources(s)); n != 3 {
		t.Errorf("%d resources, want 3: %v", n, resources(s))
	}
	present := func(kind, name string, want bool) func() error {
		return func() error { return presentOn(t, kube, kind, name, want) }
	}
	for _, o := range [][2]string{{"deployment", "aweb"}, {"configmap", "aweb-config"}, {"service", "aweb"}} {
		if err := present(o[0], o[1], true)(); err != nil {
			t.Errorf("applied by the agent: %v", err)
		}
	}
	// Ready as the agent reports what its cluster shows (kwok runs the Deployment's pod).
	d.await("Ready", 3*time.Minute, "?status=ready&output=summary", func(s status) bool { return s.ReadyStatus == "Ready" })

	// Update: the chart without its Service; the agent deletes it after applying the rest.
	d.c.multipart("PUT", d.ca()+"/apps/aweb", res("aweb", nil), testenv.Chart("aweb", "replicas: 1\nmessage: default\n",
		map[string]string{"cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: aweb-config\ndata:\n  message: updated\n"})).must(t, 200)
	d.update(lifecycle.OpUpdate, nil)
	eventually(t, "the Service pruned by the agent", time.Minute, present("service", "aweb", false))

	// The agent down across a rollback: the rollback waits for it, saying so, and ends
	// once the agent, restarted with the credential it kept, has applied it.
	agentProc.kill()
	r := d.c.do("POST", d.dig()+"/rollback", map[string]any{"metadata": map[string]any{"name": "back"}, "spec": map[string]any{"revision": "1"}})
	var acc lifecycle.OpAccepted
	r.must(t, 202).json(t, &acc)
	d.await("the rollback waiting for the agent", 2*time.Minute, "", func(s status) bool {
		return s.Instance == acc.ContextID && anyResourceWarned(s, "waiting for its report")
	})
	if err := present("service", "aweb", false)(); err != nil {
		t.Errorf("with the agent down: %v", err)
	}
	agentProc = startTemcoAgent(t, keep, "", kube.Kubeconfig(), log) // no join token: the kept credential
	d.await("rolled back", 2*time.Minute, "", func(s status) bool {
		return s.Instance == acc.ContextID && s.Status == lifecycle.StatusInstantiated
	})
	recordHistory(t, acc.WorkflowID, "Rollback-agent-down-then-back")
	eventually(t, "the Service back through the agent", time.Minute, present("service", "aweb", true))

	term := d.operate(lifecycle.OpTerminate)
	d.await("Terminated", 3*time.Minute, "", func(s status) bool { return s.Status == lifecycle.StatusTerminated })
	recordHistory(t, term.WorkflowID, "Terminate-agent-cluster")
	for _, o := range [][2]string{{"deployment", "aweb"}, {"configmap", "aweb-config"}, {"service", "aweb"}} {
		eventually(t, o[1]+" removed by the agent", time.Minute, present(o[0], o[1], false))
	}

	// Revoked: the agent's next call is refused and it stops, saying why.
	c.do("DELETE", "/cluster-providers/"+provider+"/clusters/edge-agent/agent-token", nil).must(t, 204)
	eventually(t, "the revoked agent stopped", time.Minute, func() error {
		select {
		case <-agentProc.exited:
			return nil
		default:
			return errors.New("still running")
		}
	})
	if b, _ := os.ReadFile(log); !strings.Contains(string(b), "revoked") {
		t.Errorf("the agent's log does not say it was revoked:\n%s", b)
	}
	if m := getAs[map[string]any](t, c, "/cluster-providers/"+provider+"/clusters/edge-agent/agent"); m["state"] != "revoked" {
		t.Errorf("the agent's state after the revocation: %v", m)
	}
}

// joinAgentCluster registers cluster name in agent mode and starts its agent with
// kube's kubeconfig, joining with a fresh join token; it returns once the agent joined.
func joinAgentCluster(t *testing.T, c *client, name string, kube *devstack.Cluster, keep []string) (p *agentProcess, log string) {
	t.Helper()
	c.multipart("POST", "/cluster-providers/"+provider+"/clusters", res(name, map[string]any{"access": "agent"}), nil).must(t, 201)
	var tok struct{ Token string }
	c.do("POST", "/cluster-providers/"+provider+"/clusters/"+name+"/agent-token", nil).must(t, 201).json(t, &tok)
	log = filepath.Join(tmpRoot, "agent-"+name+".log")
	p = startTemcoAgent(t, keep, tok.Token, kube.Kubeconfig(), log)
	awaitValue(t, "the agent joined", time.Minute, func() map[string]any {
		return getAs[map[string]any](t, c, "/cluster-providers/"+provider+"/clusters/"+name+"/agent")
	}, func(m map[string]any) bool { return m["state"] == "joined" && m["lastSeen"] != nil })
	return p, log
}

// applyAgentManifest applies the manifest temco renders for cluster name's agent to kube
// with kubectl, as an operator would: a real API server takes every object.
func applyAgentManifest(t *testing.T, c *client, name string, kube *devstack.Cluster) {
	t.Helper()
	manifest := c.do("GET", "/cluster-providers/"+provider+"/clusters/"+name+"/agent-manifest?namespace=temco-agent-e2e&api=https://temco.example.com", nil).must(t, 200).body
	kubectl := func(stdin []byte, args ...string) {
		cmd := exec.Command(filepath.Join(binDir, "kubectl"), append([]string{"--kubeconfig", kube.Kubeconfig()}, args...)...)
		cmd.Stdin = bytes.NewReader(stdin)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("kubectl %s: %v\n%s\nmanifest:\n%s", strings.Join(args, " "), err, out, manifest)
		}
	}
	kubectl(manifest, "apply", "--server-side", "-f", "-")
	t.Cleanup(func() { kubectl(manifest, "delete", "--ignore-not-found", "--wait=false", "-f", "-") })
	dep, err := dynClient(t, kube).Resource(gvrDeployment).Namespace("temco-agent-e2e").Get(context.Background(), "temco-agent", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if args, _, _ := unstructured.NestedSlice(dep.Object, "spec", "template", "spec", "containers"); len(args) != 1 {
		t.Errorf("the agent's Deployment as applied: %v", dep.Object["spec"])
	}
}

// presentOn checks that object name of kind (deployment, configmap, service) is (want)
// or is not in namespace default of kube.
func presentOn(t *testing.T, kube *devstack.Cluster, kind, name string, want bool) error {
	gvr := map[string]schema.GroupVersionResource{"deployment": gvrDeployment, "configmap": gvrConfigMap, "service": gvrService}[kind]
	_, err := dynClient(t, kube).Resource(gvr).Namespace("default").Get(context.Background(), name, metav1.GetOptions{})
	switch {
	case want && err != nil:
		return err
	case !want && err == nil:
		return fmt.Errorf("%s %s is on the cluster", kind, name)
	case !want && !apierrors.IsNotFound(err):
		return err
	}
	return nil
}

// Under a rollout whose offline policy is skip, an update and a rollback go on without an
// agent cluster whose agent stopped calling: its objects say why, and the agent, back,
// applies the newest revision alone and reports it.
func TestAgentClusterOfflineIsSkippedByARollout(t *testing.T) {
	kube := stack.Clusters[2]
	c := &client{t: t}
	// The credential kept in a Secret of the cluster, as in a pod.
	keep := []string{"--credential-secret", "default/temco-agent-offline-test"}
	agentProc, log := joinAgentCluster(t, c, "offline-agent", kube, keep)
	// The agent writes it just after its join, which is all joinAgentCluster waits for.
	var sec *unstructured.Unstructured
	eventually(t, "the agent's credential kept in its Secret", time.Minute, func() (err error) {
		sec, err = dynClient(t, kube).Resource(schema.GroupVersionResource{Version: "v1", Resource: "secrets"}).Namespace("default").
			Get(context.Background(), "temco-agent-offline-test", metav1.GetOptions{})
		return err
	})
	t.Cleanup(func() {
		_ = dynClient(t, kube).Resource(schema.GroupVersionResource{Version: "v1", Resource: "secrets"}).Namespace("default").
			Delete(context.Background(), sec.GetName(), metav1.DeleteOptions{})
	})
	d := newDeployment(t, app{name: "oweb", chart: webChart("oweb"), placement: clusterNamed("offline-agent")})
	d.logicalCloud, d.setUpCloud = "agents", onClusters("offline-agent")
	d.create()
	d.c.do("POST", d.dig()+"/rollout-strategies", res("rings", map[string]any{"stages": []any{map[string]any{"name": "all"}},
		"offline": map[string]any{"policy": "skip", "after": "30s"}})).must(t, 201)
	d.operate(lifecycle.OpInstantiate)
	d.await("Instantiated", 3*time.Minute, "", func(s status) bool { return s.Status == lifecycle.StatusInstantiated })

	message := func() string {
		u, err := dynClient(t, kube).Resource(gvrConfigMap).Namespace("default").Get(context.Background(), "oweb-config", metav1.GetOptions{})
		if err != nil {
			return err.Error()
		}
		v, _, _ := unstructured.NestedString(u.Object, "data", "message")
		return v
	}
	first := message()

	// Down across an update and a rollback, both skipped: back, it applies the rollback's
	// revision alone, never the update's.
	agentProc.kill()
	d.c.multipart("PUT", d.ca()+"/apps/oweb", res("oweb", nil), testenv.Chart("oweb", "replicas: 1\nmessage: default\n",
		map[string]string{"cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: oweb-config\ndata:\n  message: second\n"})).must(t, 200)
	upd := d.update(lifecycle.OpUpdate, nil) // ends without the agent: skipped after 30 s
	recordHistory(t, upd.WorkflowID, "Update-rollout-agent-offline-skipped")
	if s := d.status(""); !anyResourceWarned(s, "went on without the cluster") {
		t.Errorf("the skipped cluster's objects do not say so: %v", pretty(s))
	}
	back := d.update(lifecycle.OpRollback, map[string]any{"metadata": map[string]any{"name": "back"}, "spec": map[string]any{"revision": "1"}})
	if m := message(); m != first {
		t.Fatalf("the cluster changed with its agent down: message %q, was %q", m, first)
	}
	startTemcoAgent(t, keep, "", kube.Kubeconfig(), log) // its credential from the Secret
	d.await("the agent's report of the rollback", time.Minute, "", func(s status) bool {
		return s.Instance == back.ContextID && !anyResourceWarned(s, "Offline since") && len(resources(s)) == 3 &&
			!slices.ContainsFunc(resources(s), func(r string) bool { return !strings.Contains(r, " Applied: ") })
	})
	if m := message(); m != first {
		t.Errorf("after the rollback: message %q, want %q", m, first)
	}
	b, _ := os.ReadFile(log)
	if strings.Contains(string(b), `"revision":"`+upd.ContextID+`"`) || !strings.Contains(string(b), `"revision":"`+back.ContextID+`"`) {
		t.Errorf("the agent applied the update's revision %s, or not the rollback's %s:\n%s", upd.ContextID, back.ContextID, b)
	}
	d.operate(lifecycle.OpTerminate)
	d.await("Terminated", 3*time.Minute, "", func(s status) bool { return s.Status == lifecycle.StatusTerminated })
}

// anyResourceWarned tells whether some resource of s carries a warning containing text.
func anyResourceWarned(s status, text string) bool {
	for _, a := range s.Apps {
		for _, c := range a.Clusters {
			for _, r := range c.Resources {
				if strings.Contains(r.Warning, text) {
					return true
				}
			}
		}
	}
	return false
}

// dropper stands between an agent and the api, and drops the connection of the first
// request whose path ends with each of its suffixes: before forwarding it (the api never
// sees it), or after (the api acted; the agent never hears the answer).
type dropper struct {
	mu      sync.Mutex
	before  map[string]bool // path suffix -> still to drop
	after   map[string]bool
	dropped []string
	proxy   *httputil.ReverseProxy
}

func (d *dropper) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	take := func(m map[string]bool) bool {
		d.mu.Lock()
		defer d.mu.Unlock()
		for suffix, left := range m {
			if left && strings.HasSuffix(r.URL.Path, suffix) {
				m[suffix] = false
				d.dropped = append(d.dropped, r.Method+" "+r.URL.Path)
				return true
			}
		}
		return false
	}
	drop := func() {
		if conn, _, err := http.NewResponseController(w).Hijack(); err == nil {
			_ = conn.Close()
		}
	}
	if take(d.before) {
		drop()
		return
	}
	if take(d.after) {
		d.proxy.ServeHTTP(httptest.NewRecorder(), r) // the api acts; its answer is lost
		drop()
		return
	}
	d.proxy.ServeHTTP(w, r)
}

// An agent whose link drops mid-apply (a status write lost before the api saw it, a
// report the api stored but whose answer was lost) goes on: the operation ends with every
// object Applied, reported once. Its credential reaches only its own cluster's work.
func TestAgentRidesOutDroppedConnections(t *testing.T) {
	kube := stack.Clusters[0]
	c := &client{t: t}
	target, err := url.Parse(strings.TrimSuffix(apiURL, "/v2"))
	if err != nil {
		t.Fatal(err)
	}
	d := &dropper{before: map[string]bool{"/statuses": true}, after: map[string]bool{"/report": true}, proxy: httputil.NewSingleHostReverseProxy(target)}
	srv := httptest.NewServer(d)
	defer srv.Close()
	credFile := filepath.Join(t.TempDir(), "credential")
	c.multipart("POST", "/cluster-providers/"+provider+"/clusters", res("flaky-agent", map[string]any{"access": "agent"}), nil).must(t, 201)
	var tok struct{ Token string }
	c.do("POST", "/cluster-providers/"+provider+"/clusters/flaky-agent/agent-token", nil).must(t, 201).json(t, &tok)
	out, err := os.Create(filepath.Join(tmpRoot, "agent-flaky-agent.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	cmd := exec.Command(self, "agent", "--api", srv.URL, "--kubeconfig", kube.Kubeconfig(), "--poll", "1s", "--credential-file", credFile)
	cmd.Env, cmd.Stdout, cmd.Stderr = append(os.Environ(), "TEMCO_AGENT_JOIN_TOKEN="+tok.Token), out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &agentProcess{cmd: cmd, exited: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(p.exited) }()
	defer p.kill()

	dep := newDeployment(t, app{name: "fweb", chart: webChart("fweb"), placement: clusterNamed("flaky-agent")})
	dep.logicalCloud, dep.setUpCloud = "agents", onClusters("flaky-agent")
	dep.create()
	inst := dep.operate(lifecycle.OpInstantiate)
	s := dep.await("Instantiated", 3*time.Minute, "", func(s status) bool { return s.Status == lifecycle.StatusInstantiated })
	if rs := resources(s); len(rs) != 3 || slices.ContainsFunc(rs, func(r string) bool { return !strings.Contains(r, " Applied: ") }) {
		t.Errorf("resources %v, want 3 Applied", rs)
	}
	if err := presentOn(t, kube, "configmap", "fweb-config", true); err != nil {
		t.Error(err)
	}
	d.mu.Lock()
	dropped := slices.Clone(d.dropped)
	d.mu.Unlock()
	if len(dropped) != 2 {
		t.Errorf("dropped %v, want a status write and a report", dropped)
	}
	var w struct {
		Items []struct {
			Instance string
			Gen      int64
			Reported *struct{ Gen int64 }
		}
	}
	cred, err := os.ReadFile(credFile)
	if err != nil {
		t.Fatal(err)
	}
	agentAs := (&client{t: t, token: strings.TrimSpace(string(cred))}).do
	agentAs("GET", "/agent/work", nil).must(t, 200).json(t, &w)
	if len(w.Items) != 1 || w.Items[0].Instance != inst.ContextID || w.Items[0].Reported == nil || w.Items[0].Reported.Gen != w.Items[0].Gen {
		t.Errorf("the agent's work: %+v", w)
	}
	// Another cluster's work: none of it reaches this agent.
	other := newDeployment(t, app{name: "gweb2", chart: webChart("gweb2"), placement: clusterNamed("cluster2")})
	other.project += "-other"
	other.create()
	otherInst := other.operate(lifecycle.OpInstantiate)
	other.await("Instantiated", 3*time.Minute, "", func(s status) bool { return s.Status == lifecycle.StatusInstantiated })
	agentAs("GET", "/agent/revisions/"+otherInst.ContextID, nil).must(t, 404)
	agentAs("POST", "/agent/work/"+otherInst.ContextID+"/report", map[string]any{"gen": 1}).must(t, 404)
	agentAs("GET", other.dig()+"/status", nil).must(t, 403)
	other.operate(lifecycle.OpTerminate)
	dep.operate(lifecycle.OpTerminate)
	dep.await("Terminated", 3*time.Minute, "", func(s status) bool { return s.Status == lifecycle.StatusTerminated })
}
