package e2e

import (
	"context"
	"fmt"
	"os/exec"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/temco/temco/internal/core/digstate"
	"github.com/temco/temco/internal/core/lifecycle"
	"github.com/temco/temco/internal/dev/devstack"
	"github.com/temco/temco/internal/dev/testenv"
	"github.com/temco/temco/internal/dev/testenv/poll"
	"github.com/temco/temco/workers"
)

// objectsOf lists the objects one app of one instance has on a cluster, as "Kind/name".
func objectsOf(t *testing.T, cl *devstack.Cluster, instance, app string) []string {
	t.Helper()
	cs, err := cl.Clientset()
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	sel := metav1.ListOptions{LabelSelector: lifecycle.DeploymentIDLabel + "=" + instance + "-" + app}
	var out []string
	deps, err := cs.AppsV1().Deployments("").List(ctx, sel)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range deps.Items {
		out = append(out, "Deployment/"+d.Name)
	}
	svcs, err := cs.CoreV1().Services("").List(ctx, sel)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range svcs.Items {
		out = append(out, "Service/"+s.Name)
	}
	cms, err := cs.CoreV1().ConfigMaps("").List(ctx, sel)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cms.Items {
		out = append(out, "ConfigMap/"+c.Name)
	}
	sort.Strings(out)
	return out
}

func webObjects(app string) []string {
	return []string{"ConfigMap/" + app + "-config", "Deployment/" + app, "Service/" + app}
}

func available(t *testing.T, cl *devstack.Cluster, name string) bool {
	t.Helper()
	cs, err := cl.Clientset()
	if err != nil {
		t.Fatal(err)
	}
	d, err := cs.AppsV1().Deployments("default").Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		return false
	}
	for _, c := range d.Status.Conditions {
		if c.Type == appsv1.DeploymentAvailable && c.Status == "True" {
			return true
		}
	}
	return false
}

// Three charts placed by label on two clusters and by name on the third: every object
// lands on exactly its clusters, Deployments become Available, status reports it all, and
// terminate removes everything.
func TestInstantiateThreeChartsThenTerminate(t *testing.T) {
	d := newDeployment(t,
		app{name: "front", chart: webChart("front"), placement: clusterLabel("edge")},
		app{name: "cache", chart: webChart("cache"), placement: clusterLabel("edge")},
		app{name: "db", chart: webChart("db"), placement: clusterNamed("cluster3")},
	)
	d.create()
	acc := d.operate(lifecycle.OpInstantiate)
	s := d.await("Instantiated", 2*time.Minute, "", func(s status) bool { return s.Status == lifecycle.StatusInstantiated })
	if s.RsyncStatus[lifecycle.ResApplied] != 15 || len(s.RsyncStatus) != 1 {
		t.Fatalf("rsync-status %v, want 15 Applied (2 apps x 2 clusters + 1 app x 1 cluster, 3 objects each)", s.RsyncStatus)
	}
	want := map[string][]string{ // cluster -> apps
		"cluster1": {"cache", "front"}, "cluster2": {"cache", "front"}, "cluster3": {"db"},
	}
	for _, cl := range stack.Clusters {
		for _, a := range []string{"front", "cache", "db"} {
			got := objectsOf(t, cl, acc.ContextID, a)
			if slices.Contains(want[cl.Name], a) {
				if !slices.Equal(got, webObjects(a)) {
					t.Errorf("%s on %s: %v, want %v", a, cl.Name, got, webObjects(a))
				}
			} else if len(got) != 0 {
				t.Errorf("%s must not be on %s, found %v", a, cl.Name, got)
			}
		}
	}
	s = d.await("Deployments Available", time.Minute, "?type=cluster", func(s status) bool {
		return s.ClusterStatus["Ready"] == 15 && s.ReadyStatus == "Ready"
	})
	for _, cl := range stack.Clusters {
		for _, a := range want[cl.Name] {
			if !available(t, cl, a) {
				t.Errorf("Deployment %s on %s is not Available", a, cl.Name)
			}
		}
	}
	sum := d.status("?output=summary&app=db")
	if sum.RsyncStatus[lifecycle.ResApplied] != 3 || len(sum.Apps) != 0 {
		t.Errorf("summary filtered to app db: %s", pretty(sum))
	}

	d.operate(lifecycle.OpTerminate)
	s = d.await("Terminated", 2*time.Minute, "", func(s status) bool { return s.Status == lifecycle.StatusTerminated })
	if s.RsyncStatus[lifecycle.ResDeleted] != 15 {
		t.Errorf("rsync-status after terminate: %v", s.RsyncStatus)
	}
	for _, cl := range stack.Clusters {
		for _, a := range []string{"front", "cache", "db"} {
			if got := objectsOf(t, cl, acc.ContextID, a); len(got) != 0 {
				t.Errorf("after terminate %s still has %v of %s", cl.Name, got, a)
			}
		}
	}
	beginsFollowAcceptance(t, d.ref().WorkflowID())
	for id, name := range map[string]string{
		d.ref().WorkflowID(): "DIGLifecycle-instantiate-terminate",
		acc.WorkflowID:       "Instantiate-success",
		d.ref().OpWorkflowID("terminate", acc.ContextID): "Terminate-success",
		d.ref().OpWorkflowID("read", acc.ContextID):      "ReadClusterStatus-success",
	} {
		recordHistory(t, id, name)
	}
	// Terminated: the DIG may be instantiated again as a new instance, or deleted.
	again := d.operate(lifecycle.OpInstantiate)
	if again.ContextID == acc.ContextID {
		t.Error("a new instance reused the old context id")
	}
	d.await("Instantiated again", 2*time.Minute, "", func(s status) bool { return s.Status == lifecycle.StatusInstantiated })
	d.c.do("DELETE", d.dig(), nil).must(t, 409)
	d.operate(lifecycle.OpTerminate)
	d.await("Terminated again", 2*time.Minute, "", func(s status) bool { return s.Status == lifecycle.StatusTerminated })
	d.c.do("DELETE", d.dig(), nil).must(t, 409) // children (intents) still exist: referential integrity
	for _, p := range []string{"/intents/intents", "/generic-placement-intents/gpi/app-intents/front-placement",
		"/generic-placement-intents/gpi/app-intents/cache-placement", "/generic-placement-intents/gpi/app-intents/db-placement",
		"/generic-placement-intents/gpi", ""} {
		d.c.do("DELETE", d.dig()+p, nil).must(t, 204)
	}
}

// A cluster whose apiserver is down shows Retrying with attempts and the last error;
// stop ends the operation in the stopped state, through the API or the temporal CLI.
func TestUnreachableClusterRetriesUntilStopped(t *testing.T) {
	down := stack.Clusters[2]
	down.StopAPIServer()
	t.Cleanup(func() {
		if err := down.StartAPIServer(context.Background()); err != nil {
			t.Errorf("restart apiserver of %s: %v", down.Name, err)
		}
	})
	for _, via := range []string{"api", "temporal-cli"} {
		t.Run("stop via "+via, func(t *testing.T) {
			d := newDeployment(t, app{name: "db", chart: webChart("db"), placement: clusterNamed(down.Name)})
			d.create()
			acc := d.operate(lifecycle.OpInstantiate)
			d.await("Retrying with attempts", time.Minute, "", func(s status) bool {
				for _, a := range s.Apps {
					for _, c := range a.Clusters {
						for _, r := range c.Resources {
							if r.RsyncStatus == lifecycle.ResRetrying && r.Attempts >= 2 && strings.Contains(r.Error, "connect") {
								return true
							}
						}
					}
				}
				return false
			})
			// The operation's progress query lists the cluster being retried, with its last error.
			poll.Until(t, "the progress listing the retrying cluster", 30*time.Second, func(context.Context) error {
				out, err := exec.Command(binDir+"/temporal", "workflow", "query", "--address", stack.Temporal.Address(),
					"--codec-endpoint", stack.CodecEndpoint(), "--workflow-id", acc.WorkflowID, "--type", lifecycle.QueryProgress, "--output", "json").CombinedOutput()
				if err != nil {
					t.Fatalf("temporal workflow query: %v: %s", err, out)
				}
				if !strings.Contains(string(out), `"cluster": "local+`+down.Name+`"`) || !strings.Contains(string(out), "connection refused") {
					return fmt.Errorf("progress: %s", out)
				}
				return nil
			})
			start := time.Now()
			if via == "api" {
				d.operate(lifecycle.OpStop)
			} else {
				out, err := exec.Command(binDir+"/temporal", "workflow", "signal", "--address", stack.Temporal.Address(),
					"--workflow-id", acc.WorkflowID, "--name", lifecycle.SignalStop).CombinedOutput()
				if err != nil {
					t.Fatalf("temporal workflow signal: %v: %s", err, out)
				}
			}
			s := d.await("InstantiateStopped", 30*time.Second, "", func(s status) bool {
				return s.Status == lifecycle.StatusInstantiateStopped && s.state() == lifecycle.StateInstantiateStopped
			})
			t.Logf("stopped %s after %s", via, time.Since(start).Round(time.Millisecond))
			if s.RsyncStatus[lifecycle.ResRetrying] != 0 {
				t.Errorf("resources still Retrying after stop: %v", s.RsyncStatus)
			}
			recordHistory(t, acc.WorkflowID, "Instantiate-stopped-via-"+via)
			// A stopped instantiate can be terminated; terminate then retries the dead cluster
			// until stopped too, leaving the DIG TerminateStopped.
			d.operate(lifecycle.OpTerminate)
			d.operate(lifecycle.OpStop)
			d.await("TerminateStopped", 30*time.Second, "", func(s status) bool {
				return s.state() == lifecycle.StateTerminateStopped
			})
		})
	}
}

// An object the apiserver rejects is Failed with the server's message, without retries.
func TestRejectedManifestFailsWithoutRetry(t *testing.T) {
	bad := testenv.Chart("bad", "", map[string]string{"cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: Not_A_Valid_Name\ndata: {a: b}\n"})
	d := newDeployment(t,
		app{name: "bad", chart: bad, placement: clusterNamed("cluster1")},
		app{name: "web", chart: webChart("web"), placement: clusterNamed("cluster1")})
	d.create()
	d.operate(lifecycle.OpInstantiate)
	s := d.await("InstantiateFailed", time.Minute, "", func(s status) bool { return s.Status == lifecycle.StatusInstantiateFailed })
	if s.RsyncStatus[lifecycle.ResFailed] != 1 || s.RsyncStatus[lifecycle.ResApplied] != 3 {
		t.Errorf("rsync-status %v, want 1 Failed and the other app's 3 Applied", s.RsyncStatus)
	}
	for _, a := range s.Apps {
		for _, c := range a.Clusters {
			for _, r := range c.Resources {
				if r.RsyncStatus == lifecycle.ResFailed && (r.Attempts != 0 || !strings.Contains(r.Error, "Invalid value")) {
					t.Errorf("failed resource %+v: want the apiserver's message and no retry", r)
				}
			}
		}
	}
	if !strings.Contains(s.Error, "1 resources failed") {
		t.Errorf("context error %q", s.Error)
	}
	recordHistory(t, d.ref().OpWorkflowID(lifecycle.OpInstantiate, s.Instance), "Instantiate-rejected-object")
	d.operate(lifecycle.OpTerminate)
	d.await("Terminated", time.Minute, "", func(s status) bool { return s.Status == lifecycle.StatusTerminated })
}

// Killing the worker in the middle of an instantiate loses nothing: after a restart the
// operation completes with every object present exactly once, and what was applied before
// the kill is not applied again (the API servers count one apply per Service).
func TestWorkerKilledDuringInstantiate(t *testing.T) {
	d := newDeployment(t,
		app{name: "base", chart: webChart("base"), placement: clusterLabel("edge")},
		// "slow" waits for base to be ready plus 8 s: the window to kill the worker in.
		app{name: "slow", chart: webChart("slow"), placement: clusterLabel("edge"), dependsOn: "base", wait: 8},
	)
	d.create()
	services := applyCount(t, "services")
	acc := d.operate(lifecycle.OpInstantiate)
	d.await("base applied, slow pending", time.Minute, "", func(s status) bool {
		return s.RsyncStatus[lifecycle.ResApplied] >= 3 && s.RsyncStatus[lifecycle.ResPending] > 0
	})
	stack.Worker.Kill()
	t.Log("worker killed")
	if err := stack.StartWorker(context.Background()); err != nil {
		t.Fatal(err)
	}
	s := d.await("Instantiated after the restart", 3*time.Minute, "", func(s status) bool { return s.Status == lifecycle.StatusInstantiated })
	recordHistory(t, acc.WorkflowID, "Instantiate-worker-killed")
	// The restarted worker failed the dead one's attempt as it started (workers.TakeOver):
	// the attempt that succeeded says so, where it would say a heartbeat timeout.
	if retried := retriedBecause(t, acc.WorkflowID); retried[workers.ErrWorkerRestarted] == 0 {
		t.Errorf("attempts retried after the kill, by their last failure: %v; want one after %s", retried, workers.ErrWorkerRestarted)
	}
	if s.RsyncStatus[lifecycle.ResApplied] != 12 {
		t.Errorf("rsync-status %v, want 12 Applied", s.RsyncStatus)
	}
	if n := applyCount(t, "services") - services; n != 4 {
		t.Errorf("%d server-side applies of the 4 Services (2 apps on 2 clusters): some were applied again", n)
	}
	for _, cl := range stack.Clusters[:2] {
		for _, a := range []string{"base", "slow"} {
			if got := objectsOf(t, cl, acc.ContextID, a); !slices.Equal(got, webObjects(a)) {
				t.Errorf("%s on %s: %v, want %v", a, cl.Name, got, webObjects(a))
			}
		}
	}
	d.operate(lifecycle.OpTerminate)
	d.await("Terminated", 2*time.Minute, "", func(s status) bool { return s.Status == lifecycle.StatusTerminated })
}

// retriedBecause counts a workflow's retried activity attempts by the type of the failure
// before them (a timeout's type, or an application failure's).
func retriedBecause(t *testing.T, workflowID string) map[string]int {
	t.Helper()
	by := map[string]int{}
	for _, e := range history(t, workflowID).Events {
		a := e.GetActivityTaskStartedEventAttributes()
		if a == nil || a.GetAttempt() < 2 {
			continue
		}
		f := a.GetLastFailure()
		why := f.GetApplicationFailureInfo().GetType()
		if ti := f.GetTimeoutFailureInfo(); ti != nil {
			why = ti.GetTimeoutType().String()
		}
		by[why]++
	}
	return by
}

// A terminate whose begin was recorded but which no workflow runs (its Workflow Update
// lost with a Temporal server killed at that moment, as make chaos found before the begin
// waited for the update's acceptance) is run by the same request again: the lifecycle
// workflow's begin recognises its own record. Before, every operation refused the DIG.
func TestAStrandedTerminateRunsWhenAskedAgain(t *testing.T) {
	d := newDeployment(t, app{name: "web", chart: webChart("web"), placement: clusterNamed("cluster1")})
	d.create()
	acc := d.operate(lifecycle.OpInstantiate)
	d.await("Instantiated", 2*time.Minute, "", func(s status) bool { return s.Status == lifecycle.StatusInstantiated })
	ctx := context.Background()
	st, contexts := openStore(t)
	// What a terminate's begin writes, with no terminate workflow after it.
	if _, err := digstate.Change(ctx, st, d.ref().ID(), func(lifecycle.StateInfo) ([]lifecycle.Action, error) {
		return []lifecycle.Action{{State: lifecycle.StateTerminated, ContextID: acc.ContextID, Revision: 1}}, nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := contexts.SetStatus(ctx, acc.ContextID, lifecycle.StatusTerminating, ""); err != nil {
		t.Fatal(err)
	}
	if term := d.operate(lifecycle.OpTerminate); term.ContextID != acc.ContextID {
		t.Errorf("terminate ran for context %s, want the recorded %s", term.ContextID, acc.ContextID)
	}
	s := d.await("Terminated", 2*time.Minute, "", func(s status) bool { return s.Status == lifecycle.StatusTerminated })
	if n := len(s.States.Actions); n == 0 || s.States.Actions[n-1].State != lifecycle.StateTerminated || n > 1 && s.States.Actions[n-2].State == lifecycle.StateTerminated {
		t.Errorf("history %+v: want one Terminated at its end", s.States.Actions)
	}
	if got := objectsOf(t, stack.Clusters[0], acc.ContextID, "web"); len(got) != 0 {
		t.Errorf("after the terminate cluster1 still has %v", got)
	}
}

// The lifecycle state machine refuses transitions with 409 naming the current state.
func TestRefusedTransitions(t *testing.T) {
	d := newDeployment(t, app{name: "web", chart: webChart("web"), placement: clusterNamed("cluster1")})
	d.create()
	c := d.c
	// Changing an Approved DIG's intents puts it back to Created.
	c.do("PUT", d.dig()+"/generic-placement-intents/gpi", res("gpi", nil)).must(t, 200)
	if s := d.status(""); s.state() != lifecycle.StateCreated {
		t.Fatalf("state after editing an approved DIG: %s", s.state())
	}
	r := c.do("POST", d.dig()+"/instantiate", nil).must(t, 409)
	if !strings.Contains(string(r.body), "is Created") {
		t.Errorf("message %s does not name the state", r.body)
	}
	c.do("POST", d.dig()+"/terminate", nil).must(t, 409)
	c.do("POST", d.dig()+"/stop", nil).must(t, 409)
	c.do("POST", d.dig()+"/approve", nil).must(t, 202)
	c.do("POST", d.dig()+"/approve", nil).must(t, 202) // approving twice is harmless
	d.operate(lifecycle.OpInstantiate)
	c.do("POST", d.dig()+"/approve", nil).must(t, 409)
	d.await("Instantiated", time.Minute, "", func(s status) bool { return s.Status == lifecycle.StatusInstantiated })
	// While Instantiated, intents may be edited (they take effect through update).
	c.do("PUT", d.dig()+"/generic-placement-intents/gpi", res("gpi", nil)).must(t, 200)
	if s := d.status(""); s.state() != lifecycle.StateInstantiated {
		t.Errorf("editing an instantiated DIG changed its state to %s", s.state())
	}
	d.operate(lifecycle.OpTerminate)
	d.await("Terminated", time.Minute, "", func(s status) bool { return s.Status == lifecycle.StatusTerminated })
	c.do("GET", d.dig()+"/status?type=bogus", nil).must(t, 400)
	c.do("GET", d.dig()+"/status?instance=123", nil).must(t, 400) // as EMCO: a bad query
}

// Terminate during an instantiate cancels it (its cleanup runs), then deletes whatever
// was applied and waits until it is gone.
func TestTerminateDuringInstantiate(t *testing.T) {
	d := newDeployment(t,
		app{name: "base", chart: webChart("base"), placement: clusterLabel("edge")},
		app{name: "slow", chart: webChart("slow"), placement: clusterLabel("edge"), dependsOn: "base", wait: 20},
	)
	d.create()
	acc := d.operate(lifecycle.OpInstantiate)
	d.await("base applied", time.Minute, "", func(s status) bool { return s.RsyncStatus[lifecycle.ResApplied] >= 6 })
	term := d.operate(lifecycle.OpTerminate)
	if term.ContextID != acc.ContextID {
		t.Errorf("terminate works on context %s, want the instantiate's %s", term.ContextID, acc.ContextID)
	}
	s := d.await("Terminated", 2*time.Minute, "", func(s status) bool { return s.Status == lifecycle.StatusTerminated })
	if n := s.RsyncStatus[lifecycle.ResDeleted]; n != 12 {
		t.Errorf("rsync-status %v, want all 12 Deleted", s.RsyncStatus)
	}
	for _, cl := range stack.Clusters[:2] {
		for _, a := range []string{"base", "slow"} {
			if got := objectsOf(t, cl, acc.ContextID, a); len(got) != 0 {
				t.Errorf("after terminate %s still has %v of %s", cl.Name, got, a)
			}
		}
	}
	recordHistory(t, d.ref().WorkflowID(), "DIGLifecycle-terminate-preempts")
	recordHistory(t, acc.WorkflowID, "Instantiate-cancelled-by-terminate")
}

// Status filters (app, cluster, resource), outputs (summary, all, detail) and types.
func TestStatusQueries(t *testing.T) {
	d := newDeployment(t,
		app{name: "front", chart: webChart("front"), placement: clusterLabel("edge")},
		app{name: "db", chart: webChart("db"), placement: clusterNamed("cluster3")},
	)
	d.create()
	d.operate(lifecycle.OpInstantiate)
	d.await("Instantiated", time.Minute, "", func(s status) bool { return s.Status == lifecycle.StatusInstantiated })
	count := func(s status) (apps, clusters, resources int) {
		for _, a := range s.Apps {
			apps++
			for _, c := range a.Clusters {
				clusters++
				resources += len(c.Resources)
			}
		}
		return
	}
	for _, c := range []struct {
		query                       string
		applied, apps, clusters, rs int
	}{
		{"", 9, 2, 3, 9},
		{"?output=summary", 9, 0, 0, 0},
		{"?app=db", 3, 1, 1, 3},
		{"?cluster=local%2Bcluster1", 3, 1, 1, 3},
		{"?cluster=local+cluster1&cluster=local%2Bcluster3", 6, 2, 2, 6}, // an unescaped + also works
		{"?resource=front", 4, 1, 2, 4},                                  // the Deployment and the Service, on two clusters
		{"?app=front&resource=front-config&output=summary", 2, 0, 0, 0},
	} {
		s := d.status(c.query)
		apps, clusters, rs := count(s)
		if s.RsyncStatus[lifecycle.ResApplied] != c.applied || apps != c.apps || clusters != c.clusters || rs != c.rs {
			t.Errorf("%s: applied %d, apps %d, clusters %d, resources %d; want %d %d %d %d", c.query,
				s.RsyncStatus[lifecycle.ResApplied], apps, clusters, rs, c.applied, c.apps, c.clusters, c.rs)
		}
	}
	var detail struct {
		Apps []struct {
			Clusters []struct {
				Resources []struct {
					Name   string `json:"name"`
					Detail struct {
						Kind   string         `json:"kind"`
						Spec   map[string]any `json:"spec"`
						Status map[string]any `json:"status"`
					} `json:"detail"`
					ReadyStatus string `json:"readyStatus"`
				} `json:"resources"`
			} `json:"clusters"`
		} `json:"apps"`
	}
	d.c.do("GET", d.dig()+"/status?app=db&output=detail&status=deployed", nil).must(t, 200).json(t, &detail)
	if r := detail.Apps[0].Clusters[0].Resources; len(r) != 3 || r[2].Name != "db" || r[2].Detail.Kind != "Deployment" ||
		r[2].Detail.Spec == nil || r[2].Detail.Status != nil {
		t.Errorf("deployed detail: want the manifest from the AppContext, no live status: %s", pretty(detail))
	}
	// Instantiated means applied; the pods become Ready a little later.
	d.await("Ready", time.Minute, "?status=ready&output=summary", func(s status) bool { return s.ReadyStatus == "Ready" })
	d.c.do("GET", d.dig()+"/status?app=db&output=detail&status=ready", nil).must(t, 200).json(t, &detail)
	if r := detail.Apps[0].Clusters[0].Resources; len(r) != 3 || r[2].Detail.Status == nil || r[2].ReadyStatus != "Ready" {
		t.Errorf("ready detail: want the live object, Ready: %s", pretty(detail))
	}
	// The new modes: counts and overall statuses under their own names.
	var sum struct {
		DeployedStatus string         `json:"deployedStatus"`
		ReadyStatus    string         `json:"readyStatus"`
		DeployedCounts map[string]int `json:"deployedCounts"`
		ReadyCounts    map[string]int `json:"readyCounts"`
		Apps           []any          `json:"apps"`
	}
	d.c.do("GET", d.dig()+"/status?status=ready&output=summary", nil).must(t, 200).json(t, &sum)
	if sum.DeployedStatus != lifecycle.StatusInstantiated || sum.ReadyStatus != "Ready" || sum.ReadyCounts["Ready"] != 9 || sum.Apps != nil {
		t.Errorf("status=ready&output=summary: %s", pretty(sum))
	}
	var names struct {
		Apps          []string `json:"apps"`
		ClustersByApp []struct {
			App      string `json:"app"`
			Clusters []struct {
				ClusterProvider, Cluster string
			} `json:"clusters"`
		} `json:"clustersByApp"`
	}
	d.c.do("GET", d.dig()+"/status?apps", nil).must(t, 200).json(t, &names)
	d.c.do("GET", d.dig()+"/status?clusters&app=db", nil).must(t, 200).json(t, &names)
	if fmt.Sprint(names.Apps) != "[db front]" || len(names.ClustersByApp) != 1 || len(names.ClustersByApp[0].Clusters) != 1 ||
		names.ClustersByApp[0].Clusters[0].Cluster != "cluster3" {
		t.Errorf("apps and clusters flags: %s", pretty(names))
	}
	d.operate(lifecycle.OpTerminate)
	d.await("Terminated", time.Minute, "", func(s status) bool { return s.Status == lifecycle.StatusTerminated })
	if s := d.status("?type=cluster&output=summary"); s.ClusterStatus["NotPresent"] != 9 {
		t.Errorf("cluster-status after terminate: %v", s.ClusterStatus)
	}
}

// Every lifecycle workflow is found in Temporal by its search attributes.
func TestRunsAreFoundBySearchAttributes(t *testing.T) {
	d := newDeployment(t, app{name: "web", chart: webChart("web"), placement: clusterNamed("cluster1")})
	d.create()
	inst := d.operate(lifecycle.OpInstantiate)
	d.await("Instantiated", time.Minute, "", func(s status) bool { return s.Status == lifecycle.StatusInstantiated })
	term := d.operate(lifecycle.OpTerminate)
	d.await("Terminated", time.Minute, "", func(s status) bool { return s.Status == lifecycle.StatusTerminated })
	query := `project = "` + d.project + `" AND compositeApp = "ca" AND version = "v1" AND dig = "dig"`
	poll.Until(t, "the runs found by "+query, 30*time.Second, func(context.Context) error { // visibility is eventually consistent
		out, err := exec.Command(binDir+"/temporal", "workflow", "list", "--address", stack.Temporal.Address(),
			"--query", query, "--output", "json").CombinedOutput()
		if err != nil {
			t.Fatalf("temporal workflow list: %v: %s", err, out)
		}
		if !strings.Contains(string(out), inst.WorkflowID) || !strings.Contains(string(out), term.WorkflowID) ||
			!strings.Contains(string(out), d.ref().WorkflowID()) {
			return fmt.Errorf("found: %s", out)
		}
		return nil
	})
	out, err := exec.Command(binDir+"/temporal", "workflow", "list", "--address", stack.Temporal.Address(),
		"--query", query+` AND operation = "terminate"`, "--output", "json").CombinedOutput()
	if err != nil || strings.Contains(string(out), inst.WorkflowID) || !strings.Contains(string(out), term.WorkflowID) {
		t.Errorf("operation filter: %v: %s", err, out)
	}
}

// Namespaces and CRDs go first, so a chart can create a namespace, a CRD and objects of
// both in one go; an app depending on another (Ready + wait) starts only after it.
func TestNamespacesCRDsAndDependencies(t *testing.T) {
	platform := testenv.Chart("platform", "", map[string]string{
		// Rendered in this order on purpose: the objects come before what they need.
		"widget.yaml": "apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: w1\n  namespace: team-a\nspec: {size: 3}\n",
		"cm.yaml":     "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: team-config\n  namespace: team-a\ndata: {a: b}\n",
		"ns.yaml":     "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: team-a\n",
		"crd.yaml": `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.com}
spec:
  group: example.com
  scope: Namespaced
  names: {plural: widgets, singular: widget, kind: Widget}
  versions:
  - name: v1
    served: true
    storage: true
    schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}
`,
	})
	d := newDeployment(t,
		app{name: "base", chart: webChart("base"), placement: clusterNamed("cluster2")},
		app{name: "platform", chart: platform, placement: clusterNamed("cluster2")},
		app{name: "after", chart: webChart("after"), placement: clusterNamed("cluster2"), dependsOn: "base", wait: 2},
	)
	d.create()
	acc := d.operate(lifecycle.OpInstantiate)
	s := d.await("Instantiated", 2*time.Minute, "", func(s status) bool {
		return s.Status == lifecycle.StatusInstantiated || s.Status == lifecycle.StatusInstantiateFailed
	})
	if s.Status != lifecycle.StatusInstantiated || s.RsyncStatus[lifecycle.ResApplied] != 10 {
		t.Fatalf("status %s %v: %s", s.Status, s.RsyncStatus, pretty(s))
	}
	cs, err := stack.Clusters[1].Clientset()
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := cs.CoreV1().ConfigMaps("team-a").Get(ctx, "team-config", metav1.GetOptions{}); err != nil {
		t.Errorf("ConfigMap in the chart's namespace: %v", err)
	}
	raw, err := cs.Discovery().RESTClient().Get().AbsPath("/apis/example.com/v1/namespaces/team-a/widgets/w1").DoRaw(ctx)
	if err != nil || !strings.Contains(string(raw), `"size":3`) {
		t.Errorf("custom resource: %v %s", err, raw)
	}
	// "after" waited for base's Deployment to be Available, plus 2 s.
	dep, err := cs.AppsV1().Deployments("default").Get(ctx, "base", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var availableAt time.Time
	for _, c := range dep.Status.Conditions {
		if c.Type == appsv1.DeploymentAvailable {
			availableAt = c.LastTransitionTime.Time
		}
	}
	cm, err := cs.CoreV1().ConfigMaps("default").Get(ctx, "after-config", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if created := cm.CreationTimestamp.Time; availableAt.IsZero() || created.Before(availableAt.Add(time.Second)) {
		t.Errorf("after-config created %s, base Available %s: the dependency wait was not honoured", created, availableAt)
	}
	if got := objectsOf(t, stack.Clusters[1], acc.ContextID, "after"); !slices.Equal(got, webObjects("after")) {
		t.Errorf("after: %v", got)
	}
	d.operate(lifecycle.OpTerminate)
	d.await("Terminated", 2*time.Minute, "", func(s status) bool { return s.Status == lifecycle.StatusTerminated })
	if _, err := cs.CoreV1().Namespaces().Get(ctx, "team-a", metav1.GetOptions{}); err == nil {
		t.Error("the chart's namespace outlived terminate")
	}
}
