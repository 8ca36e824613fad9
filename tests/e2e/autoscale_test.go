package e2e

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"

	"github.com/temco/temco/features/autoscale/flow"
	"github.com/temco/temco/internal/core/lifecycle"
	"github.com/temco/temco/internal/dev/devstack"
	"github.com/temco/temco/internal/dev/testenv"
	"github.com/temco/temco/internal/dev/testenv/poll"
)

// slot is the node resource the autoscaled workload's pods each need one of: the test
// gives each cluster's node a few, so that a cluster fills up (its pods pend, Unschedulable)
// while the next has room. No other test uses it.
const slot = "autoscale.temco.test/slot"

// scaledChart is an app whose Deployment (no replicas: its HPA's) needs a slot per pod,
// with an HPA from 1 to 4 replicas.
func scaledChart(name string) []byte {
	return testenv.Chart(name, "message: default\n", map[string]string{"all.yaml": `apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Chart.Name }}
spec:
  selector: {matchLabels: {app: {{ .Chart.Name }}}}
  template:
    metadata: {labels: {app: {{ .Chart.Name }}}}
    spec:
      containers:
      - name: main
        image: registry.local/{{ .Chart.Name }}:1
        resources:
          requests: {"` + slot + `": "1"}
          limits: {"` + slot + `": "1"}
---
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata:
  name: {{ .Chart.Name }}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: {{ .Chart.Name }}}
  minReplicas: 1
  maxReplicas: 4
  metrics:
  - type: Resource
    resource: {name: cpu, target: {type: Utilization, averageUtilization: 50}}
`})
}

// autoscaler is the part of a capacity placement's status the test reads.
type autoscaler struct {
	Members []struct {
		Cluster string `json:"cluster"`
		State   string `json:"state"`
		Reason  string `json:"reason"`
	} `json:"members"`
	Update string `json:"update"`
	Last   *struct {
		Waiting string `json:"waiting"`
	} `json:"last"`
	Events []struct {
		Summary string `json:"summary"`
		Update  string `json:"update"`
		Outcome string `json:"outcome"`
	} `json:"events"`
}

func (a autoscaler) states() string {
	var out []string
	for _, m := range a.Members {
		out = append(out, strings.TrimPrefix(m.Cluster, provider+"+")+"="+m.State)
	}
	return strings.Join(out, " ")
}

// settled: the members are want and no update is in flight, every one that carried a
// decision having ended Instantiated.
func (a autoscaler) settled(want string) bool {
	if a.states() != want || a.Update != "" {
		return false
	}
	for _, e := range a.Events {
		if e.Update != "" && e.Outcome != "the update ended "+lifecycle.StatusInstantiated {
			return false
		}
	}
	return true
}

// The autoscaler end to end, on the stack's three clusters in order of preference: a full
// cluster (pods pending) makes it scale out to the next; when the load drops the least
// preferred is drained (its HPA's maximum lowered) and removed once down to the floor; an
// unreachable cluster is replaced; a worker killed while a decision is carried out does
// nothing twice. Each change of the clusters goes through one ordinary update.
func TestAutoscalerScalesAcrossClusters(t *testing.T) {
	ctx := context.Background()
	clients := make([]*kubernetes.Clientset, 3)
	for i, n := range []int{1, 2, 2} {
		cs, err := stack.Clusters[i].Clientset()
		if err != nil {
			t.Fatal(err)
		}
		clients[i] = cs
		setSlots(t, cs, n)
	}
	d := newDeployment(t, app{name: "scaled", chart: scaledChart("scaled"), placement: map[string]any{"allOf": []any{
		map[string]any{"clusterProvider": provider, "cluster": "cluster1"},
		map[string]any{"clusterProvider": provider, "cluster": "cluster2"},
		map[string]any{"clusterProvider": provider, "cluster": "cluster3"}}}})
	d.create()
	t.Cleanup(func() {
		d.c.do("DELETE", d.dig()+"/capacity-placements/fleet", nil)
		if s := d.status(""); s.Status == lifecycle.StatusInstantiated {
			d.operate(lifecycle.OpTerminate)
			d.await("Terminated", 2*time.Minute, "", func(s status) bool { return s.Status == lifecycle.StatusTerminated })
		}
	})
	spec := map[string]any{
		"eligible":           map[string]any{"clusters": []string{"cluster1", "cluster2", "cluster3"}},
		"workloads":          []any{map[string]any{"app": "scaled", "deployment": "scaled", "hpa": "scaled"}},
		"evaluationInterval": "5s", "unhealthyAfter": "15s",
		"scaleIn": map[string]any{"cooldown": "20s", "drain": map[string]any{"maxReplicas": 1}},
	}
	d.c.do("POST", d.dig()+"/capacity-placements", res("fleet", spec)).must(t, 201)
	statusPath := d.dig() + "/capacity-placements/fleet/status"
	read := func() autoscaler { return getAs[autoscaler](t, d.c, statusPath) }
	awaitMembers := func(what, want string) autoscaler {
		t.Helper()
		return awaitValue(t, what, 2*time.Minute, read, func(a autoscaler) bool { return a.settled(want) })
	}
	awaitValue(t, "the autoscaler waiting for the instantiate", time.Minute, read, func(a autoscaler) bool {
		return a.Last != nil && strings.Contains(a.Last.Waiting, "not Instantiated")
	})

	// The instantiate places the workload on the most preferred cluster only.
	d.operate(lifecycle.OpInstantiate)
	d.await("Instantiated", 2*time.Minute, "", func(s status) bool { return s.Status == lifecycle.StatusInstantiated })
	awaitMembers("cluster1 the only member", "cluster1=ACTIVE")
	awaitDeployment(t, clients[0], "scaled", true)
	awaitDeployment(t, clients[1], "scaled", false)

	// Load on cluster1 (what its HPA controller would do): 2 replicas, room for 1. The
	// worker dies as the decision it makes is carried out; the restarted one carries it on.
	scale(t, clients[0], 2)
	// Its update is normally still running when seen; if it was quicker than the poll, the
	// kill comes after it, and nothing may be done twice all the same.
	decided := awaitValue(t, "a scale-out decided", 2*time.Minute, read, func(a autoscaler) bool { return a.Update != "" || len(a.Events) > 0 })
	if decided.Update == "" {
		decided.Update = decided.Events[0].Update
		t.Log("the scale-out's update ended before the worker was killed")
	}
	stack.Worker.Kill()
	if err := stack.StartWorker(ctx); err != nil {
		t.Fatal(err)
	}
	a := awaitMembers("cluster2 added", "cluster1=ACTIVE cluster2=ACTIVE")
	if last := a.Events[len(a.Events)-1]; last.Update != decided.Update || !strings.Contains(last.Summary, "cluster2 added→ACTIVE (scale out: 0 active cluster(s) below their capacity ceiling") {
		t.Errorf("the scale-out's event: %+v (decided update %s)", last, decided.Update)
	}
	awaitDeployment(t, clients[1], "scaled", true)
	assertOneUpdatePerDecision(t, d, read())

	// The load drops: cluster1 back to 1 replica, both HPAs at their minimum wanting fewer.
	// Once the cool-down has passed, cluster2, the least preferred, is drained: its HPA's
	// maximum goes down to 1; its HPA controller (the test) follows, and at the floor it is
	// removed. cluster2 wants fewer first: had cluster1 been first, an evaluation between
	// the two (the cool-down may be over by now) would rightly drain cluster1, the only
	// one wanting fewer.
	scale(t, clients[1], 2)
	scale(t, clients[0], 1)
	wantFewer(t, clients[1])
	wantFewer(t, clients[0])
	poll.Until(t, "cluster2's HPA drained to 1", 2*time.Minute, func(ctx context.Context) error {
		h, err := clients[1].AutoscalingV2().HorizontalPodAutoscalers("default").Get(ctx, "scaled", metav1.GetOptions{})
		if err != nil || h.Spec.MaxReplicas != 1 {
			return fmt.Errorf("HPA %v, error %v", h.Spec, err)
		}
		return nil
	})
	if a := read(); a.states() != "cluster1=ACTIVE cluster2=SCALING_IN" {
		t.Errorf("while draining: %s", a.states())
	}
	scale(t, clients[1], 1)
	a = awaitMembers("cluster2 removed at the floor", "cluster1=ACTIVE")
	if last := a.Events[len(a.Events)-1].Summary; !strings.Contains(last, "cluster2 SCALING_IN→removed (drained to 1 replica(s): removed)") {
		t.Errorf("the scale-in's event: %s", last)
	}
	awaitDeployment(t, clients[1], "scaled", false)
	setHPAStatus(t, clients[0], autoscalingv2.HorizontalPodAutoscalerCondition{Type: autoscalingv2.ScalingLimited,
		Status: corev1.ConditionFalse, Reason: "DesiredWithinRange", Message: "the desired count is within the acceptable range"})

	// cluster1 becomes unreachable: after unhealthyAfter it is UNHEALTHY and replaced by the
	// next eligible cluster; when it answers again it is ACTIVE again.
	down := stack.Clusters[0]
	down.StopAPIServer()
	restarted := false
	t.Cleanup(func() {
		if !restarted {
			_ = down.StartAPIServer(context.Background())
		}
	})
	a = awaitMembers("cluster1 replaced", "cluster1=UNHEALTHY cluster2=ACTIVE")
	if m := a.Members[0]; !strings.Contains(m.Reason, "unreachable for") {
		t.Errorf("cluster1's reason: %q", m.Reason)
	}
	awaitDeployment(t, clients[1], "scaled", true)
	if err := down.StartAPIServer(ctx); err != nil {
		t.Fatal(err)
	}
	restarted = true
	awaitMembers("cluster1 back", "cluster1=ACTIVE cluster2=ACTIVE")
	assertOneUpdatePerDecision(t, d, read())

	// Pause holds the evaluations; resume evaluates at once.
	d.c.do("POST", d.dig()+"/capacity-placements/fleet/pause", nil).must(t, 202)
	awaitValue(t, "paused", time.Minute, func() string { return string(d.c.do("GET", statusPath, nil).must(t, 200).body) },
		func(s string) bool { return strings.Contains(s, `"paused":true`) })
	d.c.do("POST", d.dig()+"/capacity-placements/fleet/resume", nil).must(t, 202)
	awaitValue(t, "resumed", time.Minute, func() string { return string(d.c.do("GET", statusPath, nil).must(t, 200).body) },
		func(s string) bool { return !strings.Contains(s, `"paused":true`) })

	// A capacity placement that cannot be used, or makes no cluster eligible, changes
	// nothing and says why.
	for _, tc := range []struct {
		edit func(map[string]any)
		want string
	}{
		{func(s map[string]any) { s["eligible"] = map[string]any{"namePattern": "^elsewhere$"} }, "leaves no cluster eligible"},
		{func(s map[string]any) {
			s["workloads"] = []any{map[string]any{"app": "missing", "deployment": "scaled", "hpa": "scaled"}}
		}, `cannot be used: the placement of app "missing" selects no cluster`},
	} {
		bad := maps.Clone(spec)
		tc.edit(bad)
		d.c.do("PUT", d.dig()+"/capacity-placements/fleet", res("fleet", bad)).must(t, 200)
		a := awaitValue(t, "waiting: "+tc.want, time.Minute, read, func(a autoscaler) bool {
			return a.Last != nil && strings.Contains(a.Last.Waiting, tc.want)
		})
		if a.states() != "cluster1=ACTIVE cluster2=ACTIVE" {
			t.Errorf("members changed by an unusable capacity placement: %s", a.states())
		}
	}
	d.c.do("PUT", d.dig()+"/capacity-placements/fleet", res("fleet", spec)).must(t, 200)
	awaitValue(t, "evaluating again", time.Minute, read, func(a autoscaler) bool { return a.Last != nil && a.Last.Waiting == "" })

	// The DIG's status shows the autoscaler too.
	var s struct {
		Autoscaler *autoscaler `json:"autoscaler"`
	}
	d.c.do("GET", d.dig()+"/status", nil).must(t, 200).json(t, &s)
	if s.Autoscaler == nil || s.Autoscaler.states() != "cluster1=ACTIVE cluster2=ACTIVE" {
		t.Errorf("DIG status autoscaler: %+v", s.Autoscaler)
	}

	// Deleting the capacity placement ends the autoscaler.
	d.c.do("DELETE", d.dig()+"/capacity-placements/fleet", nil).must(t, 204)
	tc := dialTemporal(t)
	defer tc.Close()
	wctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := tc.GetWorkflow(wctx, flow.WorkflowID(d.ref()), "").Get(wctx, nil); err != nil {
		t.Errorf("the autoscaler did not end with its capacity placement: %v", err)
	}
	recordHistory(t, flow.WorkflowID(d.ref()), "Autoscale-scale-out-drain-unhealthy-worker-killed")
	recordHistory(t, d.ref().OpWorkflowID(lifecycle.OpUpdate, decided.Update), "Update-worker-killed-while-preparing")
}

// assertOneUpdatePerDecision checks that every decision that changed the clusters was
// carried by exactly one update: its context is in the DIG's history once, and no other
// update ran.
func assertOneUpdatePerDecision(t *testing.T, d *deployment, a autoscaler) {
	t.Helper()
	var decided []string
	for _, e := range a.Events {
		if e.Update != "" {
			decided = append(decided, e.Update)
		}
	}
	s := d.status("")
	var revisions []string
	for _, act := range s.States.Actions {
		if act.State == lifecycle.StateInstantiated && act.Revision > 1 {
			revisions = append(revisions, act.ContextID)
		}
	}
	if !slices.Equal(revisions, decided) {
		t.Errorf("updates in the DIG's history %v, decisions %v: want one update per decision", revisions, decided)
	}
}

// setSlots gives the cluster's node n slots, and takes them away when the test ends.
func setSlots(t *testing.T, cs *kubernetes.Clientset, n int) {
	t.Helper()
	patch := func(v any) error {
		b := fmt.Appendf(nil, `{"status":{"capacity":{%q:%s},"allocatable":{%q:%s}}}`, slot, v, slot, v)
		_, err := cs.CoreV1().Nodes().Patch(context.Background(), devstack.NodeName, types.MergePatchType, b, metav1.PatchOptions{}, "status")
		return err
	}
	if err := patch(fmt.Sprintf("%q", fmt.Sprint(n))); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := patch("null"); err != nil {
			t.Errorf("take the slots back: %v", err)
		}
	})
}

// scale sets the replicas of the workload's Deployment, as its HPA controller would.
func scale(t *testing.T, cs *kubernetes.Clientset, replicas int32) {
	t.Helper()
	deps := cs.AppsV1().Deployments("default")
	// temco's update of the Deployment may come between the read and the write: read again.
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		sc, err := deps.GetScale(context.Background(), "scaled", metav1.GetOptions{})
		if err != nil {
			return err
		}
		sc.Spec.Replicas = replicas
		_, err = deps.UpdateScale(context.Background(), "scaled", sc, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	poll.Until(t, fmt.Sprintf("the Deployment at %d replicas", replicas), time.Minute, func(ctx context.Context) error {
		d, err := deps.Get(ctx, "scaled", metav1.GetOptions{})
		if err != nil || d.Status.Replicas != replicas {
			return fmt.Errorf("status %+v, error %v", d.Status, err)
		}
		return nil
	})
}

// wantFewer sets the HPA's status as its controller does when the load is below what its
// minimum needs: at the minimum, ScalingLimited TooFewReplicas.
func wantFewer(t *testing.T, cs *kubernetes.Clientset) {
	t.Helper()
	setHPAStatus(t, cs, autoscalingv2.HorizontalPodAutoscalerCondition{Type: autoscalingv2.ScalingLimited, Status: corev1.ConditionTrue,
		Reason: "TooFewReplicas", Message: "the desired replica count is less than the minimum replica count"})
}

// setHPAStatus sets the HPA's status, as its controller would: at 1 replica, with cond.
func setHPAStatus(t *testing.T, cs *kubernetes.Clientset, cond autoscalingv2.HorizontalPodAutoscalerCondition) {
	t.Helper()
	hpas := cs.AutoscalingV2().HorizontalPodAutoscalers("default")
	h, err := hpas.Get(context.Background(), "scaled", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cond.LastTransitionTime = metav1.Now()
	h.Status = autoscalingv2.HorizontalPodAutoscalerStatus{CurrentReplicas: 1, DesiredReplicas: 1,
		Conditions: []autoscalingv2.HorizontalPodAutoscalerCondition{cond}}
	if _, err := hpas.UpdateStatus(context.Background(), h, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// awaitDeployment waits until the cluster has (or no longer has) the Deployment.
func awaitDeployment(t *testing.T, cs *kubernetes.Clientset, name string, present bool) {
	t.Helper()
	poll.Until(t, fmt.Sprintf("Deployment %s present: %v", name, present), 2*time.Minute, func(ctx context.Context) error {
		_, err := cs.AppsV1().Deployments("default").Get(ctx, name, metav1.GetOptions{})
		switch {
		case err == nil && present, apierrors.IsNotFound(err) && !present:
			return nil
		case err == nil || apierrors.IsNotFound(err):
			return fmt.Errorf("present: %v", err == nil)
		}
		return err
	})
}
