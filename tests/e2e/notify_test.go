package e2e

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/temco/temco/internal/adapters/policyevents"
	"github.com/temco/temco/internal/core/events"
	"github.com/temco/temco/internal/core/lifecycle"
	"github.com/temco/temco/internal/dev/testenv"
	"github.com/temco/temco/internal/dev/testenv/poll"
)

// webhook is an HTTP receiver of temco's notifications in the test process. Each path is
// one receiver's, with its secret: a delivery whose signature does not verify with it, or
// that is not a CloudEvent, is kept as bad; the others are kept in the order they came.
// It starts down (its port reserved, nothing listening), as a receiver in an outage.
type webhook struct {
	t       *testing.T
	addr    string
	mu      sync.Mutex
	secrets map[string]string
	got     map[string][]events.Event
	bad     []string
}

func newWebhook(t *testing.T) *webhook {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	w := &webhook{t: t, addr: l.Addr().String(), secrets: map[string]string{}, got: map[string][]events.Event{}}
	l.Close()
	return w
}

// start has it listen on its port, from now until the test ends.
func (w *webhook) start() {
	var l net.Listener
	poll.Until(w.t, "listening on "+w.addr, 30*time.Second, func(context.Context) (err error) {
		l, err = net.Listen("tcp", w.addr)
		return err
	})
	srv := &http.Server{Handler: w, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(l) }()
	w.t.Cleanup(func() { _ = srv.Close() })
}

func (w *webhook) ServeHTTP(rw http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	w.mu.Lock()
	defer w.mu.Unlock()
	secret, ok := w.secrets[r.URL.Path]
	var ce struct {
		SpecVersion string       `json:"specversion"`
		ID          string       `json:"id"`
		Type        string       `json:"type"`
		Source      string       `json:"source"`
		Subject     string       `json:"subject"`
		Data        events.Event `json:"data"`
	}
	switch {
	case !ok:
		w.bad = append(w.bad, "a delivery to "+r.URL.Path+", no receiver's")
	case !events.Verify(secret, r.Header.Get(events.HeaderID), r.Header.Get(events.HeaderTimestamp), r.Header.Get(events.HeaderSignature), body):
		w.bad = append(w.bad, "a delivery to "+r.URL.Path+" whose signature does not verify: "+string(body))
	case r.Header.Get("Content-Type") != "application/cloudevents+json" || json.Unmarshal(body, &ce) != nil || ce.SpecVersion != "1.0" ||
		ce.ID != r.Header.Get(events.HeaderID) || ce.Type != events.TypePrefix+ce.Data.Type || ce.Subject != ce.Data.Resource:
		w.bad = append(w.bad, "a delivery to "+r.URL.Path+" that is no CloudEvent of temco's: "+string(body))
	default:
		w.got[r.URL.Path] = append(w.got[r.URL.Path], ce.Data)
	}
	rw.WriteHeader(http.StatusNoContent)
}

// receiver registers a receiver of temco's at coll (a project's or the admins'), named
// name, whose events this webhook takes at path, with filter (nil: every event).
func (w *webhook) receiver(c *client, coll, name, path string, filter map[string]any) {
	w.t.Helper()
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	secret := "s3cret-" + hex.EncodeToString(b)
	w.mu.Lock()
	w.secrets[path] = secret
	w.mu.Unlock()
	var out struct {
		Spec events.Receiver `json:"spec"`
	}
	c.do("POST", coll, res(name, map[string]any{"url": "http://" + w.addr + path, "secret": secret, "filter": filter})).must(w.t, 201).json(w.t, &out)
	if strings.Contains(out.Spec.URL, path) || out.Spec.Secret != events.Mask {
		w.t.Errorf("the receiver's answer shows its URL or secret: %+v", out.Spec)
	}
	w.t.Cleanup(func() { c.do("DELETE", coll+"/"+name, nil) })
}

// received are the events path took so far.
func (w *webhook) received(path string) []events.Event {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.got[path])
}

// await waits until path took an event of each of types, and returns them all.
func (w *webhook) await(path string, timeout time.Duration, types ...string) []events.Event {
	w.t.Helper()
	return awaitValue(w.t, path+" takes "+strings.Join(types, ", "), timeout, func() []events.Event { return w.received(path) },
		func(evs []events.Event) bool {
			return !slices.ContainsFunc(types, func(typ string) bool {
				return !slices.ContainsFunc(evs, func(e events.Event) bool { return e.Type == typ })
			})
		})
}

// check fails the test for a bad delivery, an event delivered twice, or one of another
// project than project ("" for the fleet's receivers: any).
func (w *webhook) check(path, project string) {
	w.t.Helper()
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, b := range w.bad {
		w.t.Error(b)
	}
	seen := map[string]bool{}
	for _, e := range w.got[path] {
		if seen[e.ID] {
			w.t.Errorf("%s took event %s (%s) twice", path, e.ID, e.Type)
		}
		seen[e.ID] = true
		if project != "" && e.Project != project {
			w.t.Errorf("%s, project %s's receiver, took an event of project %q: %+v", path, project, e.Project, e)
		}
	}
}

func typesOf(evs []events.Event) []string {
	var out []string
	for _, e := range evs {
		out = append(out, e.Type)
	}
	return out
}

// Operations, a rollout's approval and automatic rollback, drift found and corrected, and
// a chart that fails its verification are each told to the receivers of their project, and
// only to them: the receivers were down for over a minute while it all happened, and each
// event arrives once, in order, signed, when they are back. The outage is in their
// delivery status.
func TestNotificationsReachTheirReceiversBackFromAnOutage(t *testing.T) {
	w := newWebhook(t)
	down := time.Now()

	// Project a: a staged rollout over cluster1 and cluster2, the second stage behind an
	// approval; cluster2 has no AVX-512 node, so an update pinning to one never gets Ready
	// there and is rolled back at the stage's deadline.
	d := newDeployment(t, app{name: "nweb", chart: webChartOn("nweb"), placement: map[string]any{"allOf": []any{
		map[string]any{"clusterProvider": provider, "cluster": "cluster1"}, map[string]any{"clusterProvider": provider, "cluster": "cluster2"}}}})
	d.create()
	w.receiver(d.c, "/projects/"+d.project+"/notification-receivers", "ops", "/a", nil)
	d.strategy(map[string]any{"stages": []any{
		map[string]any{"name": "one", "clusters": []string{"cluster1"}, "progressDeadline": "30s"},
		map[string]any{"name": "two", "before": []any{map[string]any{"type": "approval"}}, "progressDeadline": "20s"},
	}})
	first := d.operate(lifecycle.OpInstantiate)
	approveTwo := func() {
		d.awaitRollout("stage two waiting for its approval", 2*time.Minute, func(v rolloutView) bool {
			return v.stage("two").State == lifecycle.StageWaitingForApproval
		})
		d.c.do("POST", d.dig()+"/rollout/approve", map[string]any{"stage": "two"}).must(t, 200)
	}
	approveTwo()
	d.awaitRollout("Instantiated", 2*time.Minute, func(v rolloutView) bool { return v.Status == lifecycle.StatusInstantiated })

	// Drift on cluster1, corrected on request.
	if _, err := dynClientNamed(t, "cluster1").Resource(deploymentsGVR).Namespace("default").Patch(context.Background(), "nweb", types.MergePatchType,
		[]byte(`{"spec":{"replicas":3}}`), metav1.PatchOptions{FieldManager: "operator-by-hand"}); err != nil {
		t.Fatal(err)
	}
	var asked struct {
		WorkflowID string `json:"workflowId"`
	}
	d.c.do("POST", d.dig()+"/drift-check", map[string]any{"correct": true}).must(t, 202).json(t, &asked)
	awaitValue(t, "the drift corrected", 2*time.Minute, func() driftView { return getAs[driftView](t, d.c, d.dig()+"/status") },
		func(v driftView) bool {
			return v.Drift != nil && v.Drift.Check == asked.WorkflowID && v.Drift.Corrected == 1
		})

	// The update that is rolled back.
	d.c.do("PUT", d.dig(), res("dig", map[string]any{"compositeProfile": "prof", "version": "r1", "logicalCloud": "default",
		"overrideValues": []any{map[string]any{"app": "nweb", "values": map[string]string{"avx512": "true"}}}})).must(t, 200)
	upd := d.operate(lifecycle.OpUpdate)
	approveTwo()
	d.awaitRollout("the update rolled back", 3*time.Minute, func(v rolloutView) bool { return v.Instance == first.ContextID })

	// Project t: a chart whose bytes are not those its repository's index names.
	good := bitsChart("ntampered", "1.0.0", "good")
	testenv.PublishChart(t, stack, good, "ntampered-1.0.0.tgz")
	if err := os.WriteFile(filepath.Join(stack.HelmRepo.Dir, "ntampered-1.0.0.tgz"), bitsChart("ntampered", "1.0.0", "evil"), 0o644); err != nil {
		t.Fatal(err)
	}
	dt := newDeployment(t, app{name: "ntampered", placement: clusterNamed("cluster1"),
		source: map[string]any{"helmRepo": stack.HelmRepo.URL(), "chart": "ntampered", "version": "1.0.0"}})
	dt.project += "-t"
	dt.create()
	w.receiver(dt.c, "/projects/"+dt.project+"/notification-receivers", "ops", "/t", map[string]any{"events": []string{"operation.*", "artifact.*"}})
	dt.operate(lifecycle.OpInstantiate)
	dt.await("InstantiateFailed", 2*time.Minute, "", func(s status) bool { return s.Status == lifecycle.StatusInstantiateFailed })

	// Project b: an instantiate whose events only b's receiver takes.
	db := newDeployment(t, app{name: "nother", chart: webChart("nother"), placement: clusterNamed("cluster3")})
	db.project += "-b"
	db.create()
	w.receiver(db.c, "/projects/"+db.project+"/notification-receivers", "ops", "/b", nil)
	db.operate(lifecycle.OpInstantiate)
	db.await("Instantiated", 2*time.Minute, "", func(s status) bool { return s.Status == lifecycle.StatusInstantiated })

	// Every receiver failed to take its first event meanwhile, and says so.
	type deliveries struct {
		State      string           `json:"state"`
		Delivered  int              `json:"delivered"`
		LastErrors []events.Attempt `json:"lastErrors"`
	}
	st := awaitValue(t, "a's receiver retrying", time.Minute, func() deliveries {
		return getAs[deliveries](t, d.c, "/projects/"+d.project+"/notification-receivers/ops/status")
	}, func(s deliveries) bool { return s.State == events.StateRetrying && len(s.LastErrors) > 0 })
	if st.Delivered != 0 || !strings.Contains(st.LastErrors[0].Error, w.addr) {
		t.Errorf("a's receiver while down: %+v", st)
	}
	if got := w.received("/a"); len(got) != 0 {
		t.Fatalf("events delivered while the receiver was down: %v", typesOf(got))
	}
	poll.Until(t, "a minute of outage", 2*time.Minute, func(context.Context) error {
		if since := time.Since(down); since < time.Minute {
			return fmt.Errorf("down for %s", since.Round(time.Second))
		}
		return nil
	})
	w.start()

	a := w.await("/a", 2*time.Minute, events.OperationStarted, events.OperationSucceeded, events.StageWaiting, events.DriftFound,
		events.DriftCorrected, events.RolledBack, events.OperationFailed)
	w.await("/t", 2*time.Minute, events.OperationStarted, events.ArtifactFailed, events.OperationFailed)
	w.await("/b", 2*time.Minute, events.OperationStarted, events.OperationSucceeded)
	w.check("/a", d.project)
	w.check("/t", dt.project)
	w.check("/b", db.project)
	// In the order they happened: the instantiate's, the drift's, then the update's.
	order := []string{}
	for _, e := range a {
		if e.Type != events.StageWaiting || len(order) == 0 || order[len(order)-1] != e.Type {
			order = append(order, e.Type)
		}
	}
	want := []string{events.OperationStarted, events.StageWaiting, events.OperationSucceeded, events.DriftFound, events.DriftCorrected,
		events.OperationStarted, events.StageWaiting, events.RolledBack, events.OperationFailed}
	if !slices.Equal(order, want) {
		t.Errorf("a's receiver took %v, want %v", order, want)
	}
	if len(a) != len(want) {
		t.Errorf("a's receiver took %d events, want %d: %v", len(a), len(want), typesOf(a))
	}
	for _, e := range a {
		if e.DIG != "dig" || e.Resource != d.dig() || e.Summary == "" || e.ID == "" {
			t.Errorf("an event of a's DIG: %+v", e)
		}
		if e.Type == events.RolledBack && (e.Details["contextId"] != upd.ContextID || !strings.Contains(e.Summary, "progress deadline")) {
			t.Errorf("the rollback's event: %+v", e)
		}
	}
	st = getAs[deliveries](t, d.c, "/projects/"+d.project+"/notification-receivers/ops/status")
	if st.State != events.StateDelivering || st.Delivered != len(want) || len(st.LastErrors) == 0 {
		t.Errorf("a's receiver's deliveries once back: %+v", st)
	}
	// The feed has them too, newest first (and the logical cloud's instantiate, before the
	// receiver was made); b's project reads its own only.
	feed := slices.DeleteFunc(getAs[[]events.Event](t, d.c, "/projects/"+d.project+"/events?limit=100"),
		func(e events.Event) bool { return e.Resource != d.dig() })
	if got := typesOf(feed); len(feed) != len(want) || slices.ContainsFunc(want, func(typ string) bool { return !slices.Contains(got, typ) }) ||
		!feed[0].Time.After(feed[len(feed)-1].Time) {
		t.Errorf("a's feed, newest first: %v", got)
	}
	for _, e := range getAs[[]events.Event](t, db.c, "/projects/"+db.project+"/events") {
		if e.Project != db.project {
			t.Errorf("b's feed has %+v", e)
		}
	}
	recordHistory(t, "notify/projects/"+d.project+"/notification-receivers/ops", "NotifyReceiver-outage")
}

// fakeAPIServer is an API server in the test process that answers /readyz as up says.
func fakeAPIServer(t *testing.T, up *atomic.Bool) (kubeconfig []byte) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/readyz" && up.Load() {
			_, _ = rw.Write([]byte("ok"))
			return
		}
		http.Error(rw, "not ready", http.StatusServiceUnavailable)
	}))
	t.Cleanup(srv.Close)
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	caData, _ := json.Marshal(ca) // base64, as kubeconfigs carry it
	return []byte(fmt.Sprintf(`apiVersion: v1
kind: Config
clusters: [{name: fake, cluster: {server: %q, certificate-authority-data: %s}}]
users: [{name: fake, user: {token: fake-token}}]
contexts: [{name: fake, context: {cluster: fake, user: fake}}]
current-context: fake
`, srv.URL, caData))
}

// An admin's receiver of the fleet's events, filtered on a cluster label, is told when a
// cluster carrying it goes unreachable and when it is back; a project's receiver is told
// neither.
func TestNotificationsOfAClusterGoneAndBack(t *testing.T) {
	w := newWebhook(t)
	w.start()
	c := &client{t: t}
	w.receiver(c, "/notification-receivers", "fleet", "/fleet", map[string]any{"events": []string{"cluster.*"}, "clusterLabels": []string{"notify-edge"}})
	d := newDeployment(t)
	c.do("POST", "/projects", res(d.project, nil)).must(t, 201)
	w.receiver(c, "/projects/"+d.project+"/notification-receivers", "ops", "/p", nil)

	var up atomic.Bool
	up.Store(true)
	kc := fakeAPIServer(t, &up)
	const fake = "notifyfake"
	c.do("POST", "/cluster-providers", res(fake, nil)).must(t, 201)
	t.Cleanup(func() {
		c.do("DELETE", "/cluster-providers/"+fake+"/clusters/edge0/labels/notify-edge", nil)
		c.do("DELETE", "/cluster-providers/"+fake+"/clusters/edge0", nil)
		c.do("DELETE", "/cluster-providers/"+fake, nil)
	})
	c.multipart("POST", "/cluster-providers/"+fake+"/clusters", res("edge0", nil), kc).must(t, 201)
	c.do("POST", "/cluster-providers/"+fake+"/clusters/edge0/labels", map[string]string{"clusterLabel": "notify-edge"}).must(t, 201)
	view := func() reachView {
		return getAs[reachView](t, c, "/cluster-providers/"+fake+"/clusters/edge0/dashboard")
	}
	awaitValue(t, "edge0 Reachable", time.Minute, view, func(v reachView) bool { return v.Reachability.State == "Reachable" })
	up.Store(false)
	got := w.await("/fleet", time.Minute, events.ClusterUnreachable)
	up.Store(true)
	got = w.await("/fleet", time.Minute, events.ClusterUnreachable, events.ClusterReachable)
	w.check("/fleet", "")
	if ts := typesOf(got); !slices.Equal(ts, []string{events.ClusterUnreachable, events.ClusterReachable}) {
		t.Errorf("the fleet's receiver took %v", ts)
	}
	for _, e := range got {
		if e.Cluster != fake+"+edge0" || !slices.Contains(e.ClusterLabels, "notify-edge") || e.Project != "" {
			t.Errorf("a cluster's event: %+v", e)
		}
	}
	if p := w.received("/p"); len(p) != 0 {
		t.Errorf("a project's receiver took the fleet's events: %v", typesOf(p))
	}
}

// An autoscaler's decision and a policy's action are told to their project's receiver.
func TestNotificationsOfAutoscalersAndPolicies(t *testing.T) {
	w := newWebhook(t)
	w.start()
	ctx := context.Background()

	// The autoscaler: cluster1 has room for one replica; a second makes it scale out.
	clients := make([]*kubernetes.Clientset, 2)
	for i, n := range []int{1, 2} {
		cs, err := stack.Clusters[i].Clientset()
		if err != nil {
			t.Fatal(err)
		}
		clients[i] = cs
		setSlots(t, cs, n)
	}
	d := newDeployment(t, app{name: "scaled", chart: scaledChart("scaled"), placement: map[string]any{"allOf": []any{
		map[string]any{"clusterProvider": provider, "cluster": "cluster1"}, map[string]any{"clusterProvider": provider, "cluster": "cluster2"}}}})
	d.create()
	w.receiver(d.c, "/projects/"+d.project+"/notification-receivers", "loops", "/s", map[string]any{"events": []string{"autoscaler.decision", "policy.action"}})
	t.Cleanup(func() {
		d.c.do("DELETE", d.dig()+"/capacity-placements/fleet", nil)
		if s := d.status(""); s.Status == lifecycle.StatusInstantiated {
			d.operate(lifecycle.OpTerminate)
			d.await("Terminated", 2*time.Minute, "", func(s status) bool { return s.Status == lifecycle.StatusTerminated })
		}
	})
	d.c.do("POST", d.dig()+"/capacity-placements", res("fleet", map[string]any{
		"eligible":           map[string]any{"clusters": []string{"cluster1", "cluster2"}},
		"workloads":          []any{map[string]any{"app": "scaled", "deployment": "scaled", "hpa": "scaled"}},
		"evaluationInterval": "5s", "scaleIn": map[string]any{"cooldown": "10m", "drain": map[string]any{"maxReplicas": 1}},
	})).must(t, 201)
	d.operate(lifecycle.OpInstantiate)
	d.await("Instantiated", 2*time.Minute, "", func(s status) bool { return s.Status == lifecycle.StatusInstantiated })
	awaitDeployment(t, clients[0], "scaled", true)
	scale(t, clients[0], 2)
	dec := w.await("/s", 2*time.Minute, events.AutoscalerDecision)[0]
	if !strings.Contains(dec.Summary, "cluster2 added") || dec.DIG != "dig" || dec.Project != d.project {
		t.Errorf("the decision's event: %+v", dec)
	}

	// The policy: memory above its threshold on web's cluster asks for the DIG's workflow
	// intent (a relocate).
	pd := newDeployment(t, app{name: "web", chart: webChart("web"), placement: clusterNamed("cluster1")})
	pd.project += "-p"
	pd.create()
	w.receiver(pd.c, "/projects/"+pd.project+"/notification-receivers", "loops", "/q", map[string]any{"events": []string{"policy.*"}})
	pd.operate(lifecycle.OpInstantiate)
	pd.await("Instantiated", 2*time.Minute, "", func(s status) bool { return s.Status == lifecycle.StatusInstantiated })
	dep, err := dynClientNamed(t, "cluster1").Resource(deploymentsGVR).Namespace("default").Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	contextID, _, _ := strings.Cut(dep.GetLabels()[lifecycle.DeploymentIDLabel], "-")
	p := map[string]string{"project": pd.project, "compositeApp": "ca", "compositeAppVersion": "v1", "deploymentIntentGroup": "dig",
		"app": "web", "from": provider + "+cluster1", "to": provider + "+cluster2"}
	pd.c.do("POST", pd.dig()+"/temporal-workflow-intents", res("dig-workflow-intent", map[string]any{"workflowClient": map[string]any{}, "temporal": map[string]any{
		"workflowClientName":   lifecycle.WorkflowRelocate,
		"workflowStartOptions": map[string]any{"TaskQueue": "temco", "WorkflowExecutionTimeout": int64(10 * time.Minute)},
		"workflowParams":       map[string]any{"activityParams": map[string]any{"relocate": p}},
	}})).must(t, 201)
	pd.c.do("POST", "/projects/"+pd.project+"/policies", res("migrate", map[string]any{"rego": testenv.EMCOMemoryPolicy})).must(t, 201)
	addr, agentEvents := testenv.PolicyAgent(t)
	agentName := pd.project + "-agent"
	dir := t.TempDir()
	values := "ProjectName: " + pd.project + "\nCompositeApp: ca\nDeploymentIntent: dig\nAgent: " + agentName + "\nAddr: " + addr +
		"\nProvider: " + provider + "\nEngine: ''\n"
	for name, data := range map[string]string{"agent.yaml": policyAgentFile, "intent.yaml": policyIntentFile, "values.yaml": values} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if out, err := temco(t, dir, "apply", "-f", "agent.yaml", "-f", "intent.yaml", "-v", "values.yaml"); err != nil {
		t.Fatalf("temco apply: %v\n%s", err, out)
	}
	t.Cleanup(func() { pd.c.do("DELETE", "/policy/agents/"+agentName, nil) })
	m, _ := json.Marshal(map[string]any{"metric": "memory_usage_bytes", "contextId": contextID, "appName": "web",
		"value": map[string]any{"items": []any{map[string]any{"describedObject": map[string]any{"kind": "Pod", "name": "web-0"}, "value": "1500000000"}}}})
	poll.Until(t, "the agent's listener connected", time.Minute, func(context.Context) error {
		var st struct{ Connected bool }
		pd.c.do("GET", "/policy/agents/"+agentName+"/status", nil).must(t, 200).json(t, &st)
		if !st.Connected {
			return fmt.Errorf("not connected")
		}
		return nil
	})
	agentEvents <- policyevents.Event{EventID: "memory_usage_bytes", AgentID: "EMCOTEST", ContextID: contextID, AppName: "web",
		AgentSpec: json.RawMessage(`{"agentId":"EMCOTEST"}`), MetricList: m}
	act := w.await("/q", 2*time.Minute, events.PolicyAction)[0]
	if act.Details["workflow"] != "dig-workflow-intent" || act.Details["outcome"] != "started" || act.Project != pd.project {
		t.Errorf("the policy's action's event: %+v", act)
	}
	w.check("/s", d.project)
	w.check("/q", pd.project)
	if s := w.received("/s"); slices.ContainsFunc(s, func(e events.Event) bool { return e.Type != events.AutoscalerDecision && e.Type != events.PolicyAction }) {
		t.Errorf("the filtered receiver took %v", typesOf(s))
	}
}
