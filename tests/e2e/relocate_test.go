package e2e

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.temporal.io/api/workflowservice/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/temco/temco/internal/core/lifecycle"
	"github.com/temco/temco/internal/dev/testenv"
)

// qatChart is an app whose pods need the node of cluster2 (the only one labelled for QAT):
// applied anywhere else it never becomes Ready.
func qatChart() []byte {
	return testenv.Chart("qat", "", map[string]string{"deploy.yaml": `apiVersion: apps/v1
kind: Deployment
metadata:
  name: qat
spec:
  replicas: 1
  selector: {matchLabels: {app: qat}}
  template:
    metadata: {labels: {app: qat}}
    spec:
      nodeSelector: {feature.node.kubernetes.io/intel_qat: "true"}
      containers: [{name: main, image: registry.local/qat:1}]
`})
}

// relocation is the status of a Relocate run started through a workflow intent.
type relocation struct {
	WorkflowID  string          `json:"workflowID"`
	QueryResult json.RawMessage `json:"workflowQueryResult"`
	Result      json.RawMessage `json:"workflowResult"`
	Error       string          `json:"workflowError"`
}

type relocateProgress struct {
	Step    string   `json:"step"`
	Detail  string   `json:"detail"`
	Updates []string `json:"updates"`
}

// relocateIntent creates workflow intent name on d's DIG, moving app from one cluster to
// another of the stack, and starts it.
func (d *deployment) relocateIntent(name, app, from, to, readyTimeout string) string {
	t := d.t
	t.Helper()
	intents := d.dig() + "/temporal-workflow-intents"
	p := map[string]string{"project": d.project, "compositeApp": "ca", "compositeAppVersion": "v1", "deploymentIntentGroup": "dig",
		"app": app, "from": provider + "+" + from, "to": provider + "+" + to}
	if readyTimeout != "" {
		p["readyTimeout"] = readyTimeout
	}
	d.c.do("POST", intents, res(name, map[string]any{"workflowClient": map[string]any{}, "temporal": map[string]any{
		"workflowClientName":   lifecycle.WorkflowRelocate,
		"workflowStartOptions": map[string]any{"TaskQueue": "temco", "WorkflowExecutionTimeout": int64(10 * time.Minute)},
		"workflowParams":       map[string]any{"activityParams": map[string]any{"relocate": p}},
	}})).must(t, 201)
	d.c.do("POST", intents+"/"+name+"/start", nil).must(t, 204)
	return intents + "/" + name
}

// step asks the running relocation its step ("" until the workflow answers queries).
func (d *deployment) step(intent string) relocateProgress {
	var st relocation
	var p relocateProgress
	if r := d.c.do("GET", intent+"/status?queryType=step", nil); r.code == 200 {
		r.json(d.t, &st)
		_ = json.Unmarshal(st.QueryResult, &p)
	}
	return p
}

// sighting is what a watcher saw of a Deployment on two clusters at one moment.
type sighting struct{ onOld, onNew, newReady bool }

// watch polls Deployment name on clusters old and new until stop is closed.
func watch(t *testing.T, name, old, new string, stop chan struct{}) func() []sighting {
	gvr := schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
	var oldC, newC = dynClientNamed(t, old), dynClientNamed(t, new)
	var mu sync.Mutex
	var seen []sighting
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			case <-time.After(100 * time.Millisecond):
			}
			var s sighting
			if _, err := oldC.Resource(gvr).Namespace("default").Get(context.Background(), name, metav1.GetOptions{}); err == nil {
				s.onOld = true
			}
			if u, err := newC.Resource(gvr).Namespace("default").Get(context.Background(), name, metav1.GetOptions{}); err == nil {
				s.onNew = true
				n, _, _ := unstructured.NestedInt64(u.Object, "status", "availableReplicas")
				s.newReady = n >= 1
			}
			mu.Lock()
			seen = append(seen, s)
			mu.Unlock()
		}
	}()
	return func() []sighting {
		close(stop)
		<-done
		return seen
	}
}

// Relocate, started through a workflow intent, moves an app to another cluster with no
// downtime: it runs on the old cluster until it is Ready on the new one; the move is made
// through the DIG (two updates, the app's intent naming the new cluster), so the DIG's
// later updates keep it; its step query follows it, its run carries the DIG's search
// attributes. An app that cannot become Ready on the new cluster is placed back.
func TestRelocateMovesAnAppWithoutDowntime(t *testing.T) {
	d := newDeployment(t,
		app{name: "web", chart: webChart("web"), placement: clusterNamed("cluster1")},
		app{name: "qat", chart: qatChart(), placement: clusterNamed("cluster2")},
	)
	d.create()
	inst := d.operate(lifecycle.OpInstantiate).ContextID
	d.await("Instantiated", 2*time.Minute, "", func(s status) bool { return s.Status == lifecycle.StatusInstantiated })

	stop := make(chan struct{})
	sightings := watch(t, "web", "cluster1", "cluster2", stop)
	intent := d.relocateIntent("move-web", "web", "cluster1", "cluster2", "")
	var steps []string
	var st relocation
	for deadline := time.Now().Add(3 * time.Minute); ; time.Sleep(200 * time.Millisecond) {
		if p := d.step(intent); p.Step != "" && (len(steps) == 0 || steps[len(steps)-1] != p.Step) {
			steps = append(steps, p.Step)
		}
		if slices.Contains(steps, "done") || slices.Contains(steps, "failed") || time.Now().After(deadline) {
			break
		}
	}
	d.c.do("GET", intent+"/status?waitForResult=true", nil).must(t, 200).json(t, &st)
	seen := sightings()
	var p relocateProgress
	if err := json.Unmarshal(st.Result, &p); err != nil || p.Step != "done" || len(p.Updates) != 2 || st.Error != "" {
		t.Fatalf("relocation result %s (%v), error %q; steps seen %v", st.Result, err, st.Error, steps)
	}
	if !slices.Contains(steps, "await-ready") && !slices.Contains(steps, "remove") {
		t.Errorf("steps seen: %v", steps)
	}
	gone := slices.IndexFunc(seen, func(s sighting) bool { return !s.onOld })
	t.Logf("steps seen %v; web left cluster1 at sighting %d of %d", steps, gone, len(seen))
	if gone < 0 {
		t.Fatalf("web never left cluster1 (%d sightings)", len(seen))
	}
	for i, s := range seen {
		if !s.onOld && !s.onNew {
			t.Fatalf("sighting %d: web on neither cluster", i)
		}
	}
	if !seen[gone].onNew || !seen[gone].newReady || slices.ContainsFunc(seen[:gone], func(s sighting) bool { return !s.onOld }) {
		t.Errorf("when web left cluster1 (sighting %d of %d), on cluster2 it was %+v", gone, len(seen), seen[gone])
	}
	objs := snapshot(t, inst, "web", "qat")
	if got := keys(objs); !slices.Equal(got, []string{"cluster2/ConfigMap/web-config", "cluster2/Deployment/qat", "cluster2/Deployment/web",
		"cluster2/Service/web"}) {
		t.Errorf("objects after the relocation: %v", got)
	}
	s := d.status("")
	if s.state() != lifecycle.StateInstantiated || s.Status != lifecycle.StatusInstantiated || len(s.States.Actions) != 3+2*2 {
		t.Errorf("DIG after the relocation: state %s, status %s, history %+v", s.state(), s.Status, s.States.Actions)
	}
	var ai struct {
		Spec struct {
			Intent struct {
				AllOf []map[string]string `json:"allOf"`
			} `json:"intent"`
		} `json:"spec"`
	}
	d.c.do("GET", d.dig()+"/generic-placement-intents/gpi/app-intents/web-placement", nil).must(t, 200).json(t, &ai)
	if len(ai.Spec.Intent.AllOf) != 1 || ai.Spec.Intent.AllOf[0]["cluster"] != "cluster2" {
		t.Errorf("web's app intent after the relocation: %+v", ai.Spec.Intent)
	}
	if ids := runsOf(t, "project = '"+d.project+"' AND dig = 'dig' AND operation = 'relocate'"); !slices.Contains(ids, st.WorkflowID) {
		t.Errorf("relocations found by the DIG's search attributes: %v, want %s", ids, st.WorkflowID)
	}
	recordHistory(t, st.WorkflowID, "Relocate-moves-an-app")
	// A later update keeps web where it is.
	d.update("update", nil)
	if got := keys(snapshot(t, inst, "web")); len(got) != 3 || !strings.HasPrefix(got[0], "cluster2/") {
		t.Errorf("web after a later update: %v", got)
	}

	// qat cannot run on cluster1: not Ready within 15 s, it is placed back on cluster2.
	intent = d.relocateIntent("move-qat", "qat", "cluster2", "cluster1", "15s")
	d.c.do("GET", intent+"/status?waitForResult=true", nil).must(t, 200).json(t, &st)
	if !strings.Contains(st.Error, "qat is not Ready on local+cluster1 after 15s") || !strings.Contains(st.Error, "qat placed back on [local+cluster2]") {
		t.Errorf("failed relocation: workflowError %q", st.Error)
	}
	if p := d.step(intent); p.Step != "failed" {
		t.Errorf("step of the failed relocation: %+v", p)
	}
	if got := keys(snapshot(t, inst, "qat")); !slices.Equal(got, []string{"cluster2/Deployment/qat"}) {
		t.Errorf("qat after the failed relocation: %v", got)
	}
	if s := d.status(""); s.state() != lifecycle.StateInstantiated || s.Status != lifecycle.StatusInstantiated {
		t.Errorf("DIG after the failed relocation: state %s, status %s", s.state(), s.Status)
	}
	recordHistory(t, st.WorkflowID, "Relocate-not-ready-placed-back")
}

// dynClientNamed is a client of the stack's cluster name.
func dynClientNamed(t *testing.T, name string) dynamic.Interface {
	t.Helper()
	for _, cl := range stack.Clusters {
		if cl.Name == name {
			return dynClient(t, cl)
		}
	}
	t.Fatalf("no cluster %s in the stack", name)
	return nil
}

// runsOf lists the workflows a visibility query finds (waiting up to 30 s for one).
func runsOf(t *testing.T, q string) []string {
	t.Helper()
	tc := dialTemporal(t)
	defer tc.Close()
	var ids []string
	for deadline := time.Now().Add(30 * time.Second); len(ids) == 0 && time.Now().Before(deadline); time.Sleep(500 * time.Millisecond) {
		resp, err := tc.ListWorkflow(context.Background(), &workflowservice.ListWorkflowExecutionsRequest{Query: q})
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range resp.GetExecutions() {
			ids = append(ids, e.GetExecution().GetWorkflowId())
		}
	}
	return ids
}
