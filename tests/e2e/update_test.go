package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/temco/temco/activities/cluster"
	"github.com/temco/temco/internal/core/lifecycle"
	"github.com/temco/temco/internal/dev/devstack"
	"github.com/temco/temco/internal/dev/testenv"
)

// snapshot maps "cluster/Kind/name" of every object of the instance to what temco wrote:
// its uid, generation and temco's managedFields entry (time and fields) and, for
// ConfigMaps, its data. Not the resourceVersion: the cluster's controllers change status
// and annotations of Deployments (kwok makes their pods Ready) at any moment.
func snapshot(t *testing.T, instance string, apps ...string) map[string]string {
	t.Helper()
	out := map[string]string{}
	kinds := map[string]schema.GroupVersionResource{
		"ConfigMap":  {Version: "v1", Resource: "configmaps"},
		"Service":    {Version: "v1", Resource: "services"},
		"Deployment": {Group: "apps", Version: "v1", Resource: "deployments"},
	}
	for _, cl := range stack.Clusters {
		dc := dynClient(t, cl)
		for _, app := range apps {
			for kind, gvr := range kinds {
				list, err := dc.Resource(gvr).Namespace("default").List(context.Background(),
					metav1.ListOptions{LabelSelector: lifecycle.DeploymentIDLabel + "=" + instance + "-" + app})
				if err != nil {
					t.Fatal(err)
				}
				for _, o := range list.Items {
					v := fmt.Sprintf("uid=%s gen=%d", o.GetUID(), o.GetGeneration())
					for _, m := range o.GetManagedFields() {
						if m.Manager == cluster.FieldManager {
							v += fmt.Sprintf(" %s %s", m.Time, m.FieldsV1.Raw)
						}
					}
					if kind == "ConfigMap" {
						v += dataMark + fmt.Sprint(o.Object["data"])
					}
					out[cl.Name+"/"+kind+"/"+o.GetName()] = v
				}
			}
		}
	}
	return out
}

func dynClient(t *testing.T, cl *devstack.Cluster) dynamic.Interface {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", cl.Kubeconfig())
	if err != nil {
		t.Fatal(err)
	}
	dc, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return dc
}

// changedKeys lists the keys whose value differs between two snapshots (or that one lacks).
func changedKeys(a, b map[string]string) []string {
	var out []string
	for k, v := range a {
		if b[k] != v {
			out = append(out, k)
		}
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

func (d *deployment) update(op string, body any) lifecycle.OpAccepted {
	d.t.Helper()
	var acc lifecycle.OpAccepted
	d.post(op, body).must(d.t, 202).json(d.t, &acc)
	d.await(op+" to revision "+fmt.Sprint(acc.Revision), 2*time.Minute, "", func(s status) bool {
		return s.Instance == acc.ContextID && s.Status == lifecycle.StatusInstantiated
	})
	return acc
}

func keys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// An update applies only what changed; apps added, removed and moved follow; rollback to
// revision 1 restores exactly the original objects; the history lists every revision.
func TestUpdateAndRollback(t *testing.T) {
	d := newDeployment(t,
		app{name: "web", chart: webChart("web"), placement: clusterNamed("cluster1")},
		app{name: "api", chart: webChart("api"), placement: clusterNamed("cluster1")},
	)
	d.create()
	first := d.operate(lifecycle.OpInstantiate)
	d.await("Instantiated", 2*time.Minute, "", func(s status) bool { return s.Status == lifecycle.StatusInstantiated })
	inst := first.ContextID
	all := []string{"web", "api", "extra"}
	original := snapshot(t, inst, all...)

	// 1. One ConfigMap value changes: only that object changes on the cluster.
	d.c.do("PUT", d.dig(), res("dig", map[string]any{"compositeProfile": "prof", "version": "r1", "logicalCloud": d.logicalCloud,
		"overrideValues": []any{map[string]any{"app": "web", "values": map[string]string{"message": "changed"}}}})).must(t, 200)
	rev2 := d.update("update", nil)
	if rev2.Revision != 2 {
		t.Errorf("update answered revision %d, want 2", rev2.Revision)
	}
	afterValue := snapshot(t, inst, all...)
	if got := changedKeys(original, afterValue); !slices.Equal(got, []string{"cluster1/ConfigMap/web-config"}) {
		t.Fatalf("objects changed by the update: %v, want only cluster1/ConfigMap/web-config", got)
	}
	if !strings.Contains(afterValue["cluster1/ConfigMap/web-config"], "changed") {
		t.Errorf("web-config after the update: %s", afterValue["cluster1/ConfigMap/web-config"])
	}

	// 2. An app is added.
	d.c.multipart("POST", d.ca()+"/apps", res("extra", nil), webChart("extra")).must(t, 201)
	d.c.multipart("POST", d.ca()+"/composite-profiles/prof/profiles", res("extra-profile", map[string]any{"app": "extra"}),
		testenv.Profile("message: from-extra-profile\n")).must(t, 201)
	d.c.do("POST", d.dig()+"/generic-placement-intents/gpi/app-intents", res("extra-placement",
		map[string]any{"app": "extra", "intent": clusterNamed("cluster1")})).must(t, 201)
	d.update("update", nil)
	afterAdd := snapshot(t, inst, all...)
	if got := changedKeys(afterValue, afterAdd); !slices.Equal(got, []string{"cluster1/ConfigMap/extra-config", "cluster1/Deployment/extra", "cluster1/Service/extra"}) {
		t.Fatalf("objects changed by adding an app: %v", got)
	}

	// 3. An app is removed.
	for _, p := range []string{"/generic-placement-intents/gpi/app-intents/api-placement"} {
		d.c.do("DELETE", d.dig()+p, nil).must(t, 204)
	}
	d.c.do("DELETE", d.ca()+"/composite-profiles/prof/profiles/api-profile", nil).must(t, 204)
	d.c.do("DELETE", d.ca()+"/apps/api", nil).must(t, 204)
	d.update("update", nil)
	afterRemove := snapshot(t, inst, all...)
	if got := changedKeys(afterAdd, afterRemove); !slices.Equal(got, []string{"cluster1/ConfigMap/api-config", "cluster1/Deployment/api", "cluster1/Service/api"}) {
		t.Fatalf("objects changed by removing an app: %v", got)
	}
	for _, k := range []string{"cluster1/ConfigMap/api-config", "cluster1/Deployment/api", "cluster1/Service/api"} {
		if _, ok := afterRemove[k]; ok {
			t.Errorf("%s survived the removal of its app", k)
		}
	}

	// 4. An app moves to another cluster: gone from the old one, present on the new one.
	d.c.do("PUT", d.dig()+"/generic-placement-intents/gpi/app-intents/web-placement", res("web-placement",
		map[string]any{"app": "web", "intent": clusterNamed("cluster2")})).must(t, 200)
	d.update("update", nil)
	afterMove := snapshot(t, inst, all...)
	var onCluster1, onCluster2 []string
	for _, k := range keys(afterMove) {
		if strings.HasPrefix(k, "cluster1/") {
			onCluster1 = append(onCluster1, k)
		} else {
			onCluster2 = append(onCluster2, k)
		}
	}
	if !slices.Equal(onCluster1, []string{"cluster1/ConfigMap/extra-config", "cluster1/Deployment/extra", "cluster1/Service/extra"}) ||
		!slices.Equal(onCluster2, []string{"cluster2/ConfigMap/web-config", "cluster2/Deployment/web", "cluster2/Service/web"}) {
		t.Fatalf("after moving web to cluster2: cluster1 %v, cluster2 %v", onCluster1, onCluster2)
	}

	// 5. Rollback to revision 1 restores exactly the original objects.
	d.c.do("POST", d.dig()+"/rollback", map[string]any{"spec": map[string]any{"revision": "99"}}).must(t, 400)
	d.c.do("POST", d.dig()+"/rollback", map[string]any{"spec": map[string]any{"revision": "x"}}).must(t, 400)
	back := d.update("rollback", map[string]any{"metadata": map[string]any{"name": "rb"}, "spec": map[string]any{"revision": "1"}})
	if back.Revision != 6 {
		t.Errorf("rollback answered revision %d, want 6", back.Revision)
	}
	restored := snapshot(t, inst, all...)
	if !slices.Equal(keys(restored), keys(original)) {
		t.Fatalf("after rollback to 1: %v, want %v", keys(restored), keys(original))
	}
	for k, v := range original {
		if cut(restored[k]) != cut(v) {
			t.Errorf("%s: %s after rollback, %s originally", k, restored[k], v)
		}
	}

	// The history lists every revision with its context.
	s := d.status("")
	var revs []string
	for _, a := range s.States.Actions {
		if a.ContextID != "" {
			revs = append(revs, fmt.Sprintf("%s:%d", a.State, a.Revision))
		}
	}
	want := "Instantiated:1 Updated:1 Instantiated:2 Updated:2 Instantiated:3 Updated:3 Instantiated:4 Updated:4 Instantiated:5 Updated:5 Instantiated:6"
	if strings.Join(revs, " ") != want {
		t.Errorf("history %v, want %s", revs, want)
	}
	recordHistory(t, rev2.WorkflowID, "Update-changed-configmap")
	recordHistory(t, back.WorkflowID, "Rollback-to-revision-1")
	recordHistory(t, d.ref().WorkflowID(), "DIGLifecycle-updates-and-rollback")
	d.operate(lifecycle.OpTerminate)
	d.await("Terminated", 2*time.Minute, "", func(s status) bool { return s.Status == lifecycle.StatusTerminated })
	if left := snapshot(t, inst, all...); len(left) != 0 {
		t.Errorf("after terminate: %v", keys(left))
	}
}

// dataMark starts the data part of a snapshot value.
const dataMark = " data="

// cut keeps only the data of a snapshot value (uids and times differ where objects were recreated).
func cut(v string) string {
	_, data, _ := strings.Cut(v, dataMark)
	return data
}

// Two updates at once: exactly one is accepted, the other is refused with 409.
func TestConcurrentUpdatesOneWins(t *testing.T) {
	everywhere := map[string]any{"allOf": []any{map[string]any{"clusterProvider": provider, "clusterLabel": "edge"},
		map[string]any{"clusterProvider": provider, "clusterLabel": "core"}}}
	d := newDeployment(t, app{name: "web", chart: webChart("web"), placement: everywhere})
	d.create()
	d.operate(lifecycle.OpInstantiate)
	d.await("Instantiated", 2*time.Minute, "", func(s status) bool { return s.Status == lifecycle.StatusInstantiated })
	answers := make([]response, 2)
	var wg sync.WaitGroup
	for i := range answers {
		wg.Go(func() { answers[i] = d.c.do("POST", d.dig()+"/update", nil) })
	}
	wg.Wait()
	slices.SortFunc(answers, func(a, b response) int { return a.code - b.code })
	if answers[0].code != 202 || answers[1].code != 409 {
		t.Fatalf("two concurrent updates answered %d and %d, want one 202 and one 409", answers[0].code, answers[1].code)
	}
	if !strings.Contains(string(answers[1].body), "update is running") {
		t.Errorf("the refusal does not name the running operation: %s", answers[1].body)
	}
	var acc lifecycle.OpAccepted
	answers[0].json(t, &acc)
	d.await("updated", 2*time.Minute, "", func(s status) bool { return s.Status == lifecycle.StatusInstantiated && s.Instance == acc.ContextID })
	// The previous revision used three clusters: two prune batches (inline since release 13;
	// the sets before it have them as child workflows).
	recordHistory(t, acc.WorkflowID, "Update-two-prune-batches")
	d.operate(lifecycle.OpTerminate)
	d.await("Terminated", 2*time.Minute, "", func(s status) bool { return s.Status == lifecycle.StatusTerminated })
}

// slowUpdate prepares an update that adds an app which waits 20 s for another one.
func slowUpdate(t *testing.T, d *deployment) {
	t.Helper()
	d.c.multipart("POST", d.ca()+"/apps", res("slow", nil), webChart("slow")).must(t, 201)
	d.c.multipart("POST", d.ca()+"/composite-profiles/prof/profiles", res("slow-profile", map[string]any{"app": "slow"}),
		testenv.Profile("message: from-slow-profile\n")).must(t, 201)
	d.c.do("POST", d.ca()+"/apps/slow/dependency", res("after-web", map[string]any{"app": "web", "opStatus": "Ready", "wait": 20})).must(t, 201)
	d.c.do("POST", d.dig()+"/generic-placement-intents/gpi/app-intents", res("slow-placement",
		map[string]any{"app": "slow", "intent": clusterLabel("edge")})).must(t, 201)
}

// Terminate during an update cancels it and removes everything: the new revision's
// objects and the previous revision's.
func TestTerminateDuringUpdate(t *testing.T) {
	d := newDeployment(t, app{name: "web", chart: webChart("web"), placement: clusterLabel("edge")})
	d.create()
	first := d.operate(lifecycle.OpInstantiate)
	d.await("Instantiated", 2*time.Minute, "", func(s status) bool { return s.Status == lifecycle.StatusInstantiated })
	slowUpdate(t, d)
	upd := d.operate(lifecycle.OpUpdate)
	d.await("update under way", time.Minute, "", func(s status) bool { return s.Instance == upd.ContextID && s.RsyncStatus[lifecycle.ResApplied] >= 6 })
	d.operate(lifecycle.OpTerminate)
	d.await("Terminated", 2*time.Minute, "", func(s status) bool { return s.Status == lifecycle.StatusTerminated })
	if left := snapshot(t, first.ContextID, "web", "slow"); len(left) != 0 {
		t.Errorf("after terminating an update: %v", keys(left))
	}
}

// kill -9 of the worker during an update: the update completes with exactly the
// intended objects.
func TestWorkerKilledDuringUpdate(t *testing.T) {
	d := newDeployment(t, app{name: "web", chart: webChart("web"), placement: clusterLabel("edge")})
	d.create()
	first := d.operate(lifecycle.OpInstantiate)
	d.await("Instantiated", 2*time.Minute, "", func(s status) bool { return s.Status == lifecycle.StatusInstantiated })
	slowUpdate(t, d)
	// web also moves off cluster2: the update both adds and removes.
	d.c.do("PUT", d.dig()+"/generic-placement-intents/gpi/app-intents/web-placement", res("web-placement",
		map[string]any{"app": "web", "intent": clusterNamed("cluster1")})).must(t, 200)
	upd := d.operate(lifecycle.OpUpdate)
	d.await("update under way", time.Minute, "", func(s status) bool { return s.Instance == upd.ContextID && s.RsyncStatus[lifecycle.ResApplied] >= 3 })
	stack.Worker.Kill()
	if err := stack.StartWorker(context.Background()); err != nil {
		t.Fatal(err)
	}
	d.await("updated after the restart", 3*time.Minute, "", func(s status) bool { return s.Status == lifecycle.StatusInstantiated && s.Instance == upd.ContextID })
	got := keys(snapshot(t, first.ContextID, "web", "slow"))
	want := []string{"cluster1/ConfigMap/slow-config", "cluster1/ConfigMap/web-config", "cluster1/Deployment/slow", "cluster1/Deployment/web",
		"cluster1/Service/slow", "cluster1/Service/web", "cluster2/ConfigMap/slow-config", "cluster2/Deployment/slow", "cluster2/Service/slow"}
	if !slices.Equal(got, want) {
		t.Errorf("after the update: %v, want %v", got, want)
	}
	recordHistory(t, upd.WorkflowID, "Update-worker-killed")
	d.operate(lifecycle.OpTerminate)
	d.await("Terminated", 2*time.Minute, "", func(s status) bool { return s.Status == lifecycle.StatusTerminated })
}
