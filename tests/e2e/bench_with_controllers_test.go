package e2e

// This file sorts after bench_test.go, so `make bench` times the instantiate without
// controllers first, on a stack as fresh as the one its earlier figures were taken on.

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	temporalclient "go.temporal.io/sdk/client"

	"github.com/temco/temco/contract"
	"github.com/temco/temco/internal/core/lifecycle"
)

// The bench's controllers, registered by EMCO's service hosts under names of its own.
const (
	benchGAC    = "bench-gac"
	benchHPAPLC = "bench-hpa-plc"
	benchHPAAC  = "bench-hpa-ac"
)

// BenchmarkInstantiateWithControllers: BenchmarkInstantiate's 3 apps x 10 resources on the
// 3 clusters, with gac and hpa on the DIG. gac adds a ConfigMap from a file to a1 and
// patches a Deployment of a2 (a JSON patch of its image) on every cluster; hpa-plc checks
// that every cluster's node can host each app's first Deployment with 2 replicas of 1 CPU
// on a linux node (every node can, so no cluster is dropped), and hpa-ac writes that into
// those Deployments. It reports the instantiate's time as BenchmarkInstantiate does and
// the controllers' share of it, read from the operation's workflow history: the
// controller steps, CommitControllers and the finished hooks, each from scheduled to
// completed. Run with `make bench`.
func BenchmarkInstantiateWithControllers(b *testing.B) {
	t := &testing.T{}
	d, created := benchDeployment(t, "bench-controllers")
	if created {
		addBenchControllers(b, d)
	}
	tc := dialTemporal(b)
	defer tc.Close()
	var temco, own, span []time.Duration
	var shares, spanShares []float64
	steps := map[string][]time.Duration{}
	var order []string // step names, in the order of the first history
	var split [][]time.Duration
	waitQuiet(b)
	b.ResetTimer()
	for range b.N {
		start := time.Now()
		r := d.c.do("POST", d.dig()+"/instantiate", nil)
		if r.code != 202 {
			b.Fatalf("instantiate: %d %s", r.code, r.body)
		}
		var acc lifecycle.OpAccepted
		r.json(t, &acc)
		if err := tc.GetWorkflow(context.Background(), acc.WorkflowID, "").Get(context.Background(), nil); err != nil {
			b.Fatal(err)
		}
		took := time.Since(start)
		temco = append(temco, took)
		b.StopTimer()
		p, err := phases(tc, acc.WorkflowID, start, start.Add(took))
		if err != nil {
			b.Fatal(err)
		}
		split = append(split, p)
		cs, err := controllerSteps(tc, acc.WorkflowID)
		if err != nil {
			b.Fatal(err)
		}
		var sum time.Duration
		for _, s := range cs {
			if _, ok := steps[s.name]; !ok {
				order = append(order, s.name)
			}
			steps[s.name] = append(steps[s.name], s.took)
			sum += s.took
		}
		own, span = append(own, sum), append(span, spanOf(cs))
		shares, spanShares = append(shares, float64(sum)/float64(took)), append(spanShares, float64(spanOf(cs))/float64(took))
		awaitState(b, t, d, lifecycle.StatusInstantiated)
		checkBenchControllers(b)
		d.c.do("POST", d.dig()+"/terminate", nil)
		awaitState(b, t, d, lifecycle.StatusTerminated)
		waitQuiet(b)
		b.StartTimer()
	}
	var each []string
	for i := range temco {
		each = append(each, fmt.Sprintf("%d/%d", temco[i].Milliseconds(), own[i].Milliseconds()))
	}
	mt, mo, ms := median(temco), median(own), median(span)
	slices.Sort(shares)
	slices.Sort(spanShares)
	b.ReportMetric(float64(mt.Milliseconds()), "temco-ms")
	b.ReportMetric(float64(mo.Milliseconds()), "controllers-ms")
	b.ReportMetric(shares[len(shares)/2], "controllers-share")
	b.ReportMetric(float64(ms.Milliseconds()), "controllers-span-ms")
	b.Logf("median of %d: temco with controllers %s; the controllers' activities %s (share %.2f), "+
		"with the workflow tasks between them %s (share %.2f)", b.N, mt, mo, shares[len(shares)/2], ms, spanShares[len(spanShares)/2])
	var perStep []string
	for _, name := range order {
		perStep = append(perStep, fmt.Sprintf("%s %d ms", name, median(steps[name]).Milliseconds()))
	}
	b.Logf("controller activities, scheduled to completed (medians): %s", strings.Join(perStep, "; "))
	b.Logf("each iteration, temco/controllers ms: %s", strings.Join(each, ", "))
	b.Logf("temco's phases (medians; to apply holds the controller steps and commit, to end the finished hooks): %s", phaseMedians(split))
}

// addBenchControllers gives the DIG its gac intent, an hpa intent per app and the three
// controllers, and approves it again.
func addBenchControllers(b *testing.B, d *deployment) {
	c := d.c
	must := func(r response, code int) {
		b.Helper()
		if r.code != code {
			b.Fatalf("status %d, want %d: %s", r.code, code, r.body)
		}
	}
	gi := d.dig() + "/generic-k8s-intents/gi"
	must(c.do("POST", d.dig()+"/generic-k8s-intents", res("gi", nil)), 201)
	must(c.multipart("POST", gi+"/resources", res("settings", map[string]any{"app": "a1", "newObject": "true",
		"resourceGVK": map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "name": "a1-gac"}}), nil), 201)
	must(c.multipartFiles("POST", gi+"/resources/settings/customizations", res("settings", map[string]any{"clusterSpecific": "false",
		"clusterInfo": map[string]any{"scope": "label", "clusterProvider": provider, "mode": "allow"}}),
		map[string]string{"settings.txt": "level: 1\n"}), 201)
	must(c.multipart("POST", gi+"/resources", res("image", map[string]any{"app": "a2", "newObject": "false",
		"resourceGVK": map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "name": "a2-d1"}}), nil), 201)
	must(c.multipart("POST", gi+"/resources/image/customizations", res("image", map[string]any{"clusterSpecific": "false",
		"clusterInfo": map[string]any{"scope": "label", "clusterProvider": provider, "mode": "allow"},
		"patchType":   "json", "patchJson": []any{map[string]any{"op": "replace", "path": "/spec/template/spec/containers/0/image", "value": "registry.local/x:2"}}}), nil), 201)
	for _, a := range benchApps {
		hw := d.dig() + "/hpa-intents/hw-" + a
		must(c.do("POST", d.dig()+"/hpa-intents", res("hw-"+a, map[string]any{"app": a})), 201)
		must(c.do("POST", hw+"/hpa-resource-consumers", res("d0", map[string]any{
			"apiVersion": "apps/v1", "kind": "Deployment", "name": a + "-d0", "container": "c", "replicas": 2})), 201)
		must(c.do("POST", hw+"/hpa-resource-consumers/d0/resource-requirements", res("cpu", map[string]any{
			"allocatable": true, "mandatory": true, "weight": 1, "resource": map[string]any{"name": "cpu", "requests": 1, "limits": 1}})), 201)
		must(c.do("POST", hw+"/hpa-resource-consumers/d0/resource-requirements", res("os", map[string]any{
			"allocatable": false, "mandatory": true, "weight": 1, "resource": map[string]any{"key": "kubernetes.io/os", "value": "linux"}})), 201)
	}
	must(c.do("POST", "/controllers", res(benchGAC, map[string]any{"host": "gac", "port": 9033, "type": "action", "priority": 1})), 201)
	must(c.do("POST", "/controllers", res(benchHPAPLC, map[string]any{"host": "hpaplc", "port": 9091, "type": "placement"})), 201)
	must(c.do("POST", "/controllers", res(benchHPAAC, map[string]any{"host": "hpaac", "port": 9042, "type": "action", "priority": 1})), 201)
	must(c.do("POST", d.dig()+"/intents", res("controllers", map[string]any{"intent": map[string]string{
		benchGAC: "gi", benchHPAPLC: "hw-a1", benchHPAAC: "hw-a1"}})), 201)
	must(c.do("POST", d.dig()+"/approve", nil), 202)
}

// checkBenchControllers fails the benchmark unless every cluster got what the controllers
// wrote: gac's ConfigMap and image, hpa-ac's replicas and CPU requests.
func checkBenchControllers(b *testing.B) {
	ctx := context.Background()
	for _, cl := range stack.Clusters {
		cs, err := cl.Clientset()
		if err != nil {
			b.Fatal(err)
		}
		if _, err := cs.CoreV1().ConfigMaps("default").Get(ctx, "a1-gac", metav1.GetOptions{}); err != nil {
			b.Fatalf("%s: gac's ConfigMap a1-gac: %v", cl.Name, err)
		}
		dep, err := cs.AppsV1().Deployments("default").Get(ctx, "a2-d1", metav1.GetOptions{})
		if err != nil {
			b.Fatal(err)
		}
		if img := dep.Spec.Template.Spec.Containers[0].Image; img != "registry.local/x:2" {
			b.Fatalf("%s: a2-d1 runs %s, want gac's registry.local/x:2", cl.Name, img)
		}
		for _, a := range benchApps {
			dep, err := cs.AppsV1().Deployments("default").Get(ctx, a+"-d0", metav1.GetOptions{})
			if err != nil {
				b.Fatal(err)
			}
			cpu := dep.Spec.Template.Spec.Containers[0].Resources.Requests.Cpu()
			if r := dep.Spec.Replicas; r == nil || *r != 2 || cpu.String() != "1" {
				b.Fatalf("%s: %s-d0 has %s replicas requesting %s CPU, want hpa-ac's 2 of 1", cl.Name, a, replicaCount(r), cpu)
			}
		}
	}
}

// controllerStep is one controller activity of an operation, from its history.
type controllerStep struct {
	name                 string // the controller's, "... finished" for its hook, or "commit"
	scheduled, completed time.Time
	took                 time.Duration
}

// controllerSteps reads the controller activities of an operation's workflow — each
// controller's RunController step, CommitControllers, and the finished hooks — in the
// order they were scheduled, each from scheduled to completed (retries included).
func controllerSteps(tc temporalclient.Client, workflowID string) ([]controllerStep, error) {
	var out []controllerStep
	at := map[int64]int{} // scheduled event id -> index in out
	it := tc.GetWorkflowHistory(context.Background(), workflowID, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		e, err := it.Next()
		if err != nil {
			return nil, err
		}
		switch e.GetEventType() {
		case enumspb.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
			a := e.GetActivityTaskScheduledEventAttributes()
			name := ""
			switch a.GetActivityType().GetName() {
			case lifecycle.CommitControllers.Name():
				name = "commit"
			case lifecycle.RunController.Name():
				name = strings.TrimPrefix(lifecycle.ControllerOfActivity(a.GetActivityId()), "bench-")
				if a.GetActivityId() == lifecycle.HookActivityID(contract.HookFinished, lifecycle.ControllerOfActivity(a.GetActivityId())) {
					name += " finished"
				}
			default:
				continue
			}
			at[e.GetEventId()] = len(out)
			out = append(out, controllerStep{name: name, scheduled: e.GetEventTime().AsTime()})
		case enumspb.EVENT_TYPE_ACTIVITY_TASK_COMPLETED:
			if i, ok := at[e.GetActivityTaskCompletedEventAttributes().GetScheduledEventId()]; ok {
				out[i].completed = e.GetEventTime().AsTime()
				out[i].took = out[i].completed.Sub(out[i].scheduled)
			}
		}
	}
	for _, s := range out {
		if s.completed.IsZero() {
			return nil, fmt.Errorf("workflow %s: controller activity %s never completed", workflowID, s.name)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("workflow %s ran no controller", workflowID)
	}
	return out, nil
}

// spanOf is the wall time of the controller steps with the workflow tasks between them:
// from the first step's scheduling to the commit's completion, plus the same for the
// finished hooks (the apply runs between the two).
func spanOf(steps []controllerStep) time.Duration {
	var total time.Duration
	var from, to time.Time
	for i, s := range steps {
		hook := strings.HasSuffix(s.name, " finished")
		if i > 0 && hook != strings.HasSuffix(steps[i-1].name, " finished") {
			total += to.Sub(from)
			from = time.Time{}
		}
		if from.IsZero() {
			from = s.scheduled
		}
		to = s.completed
	}
	return total + to.Sub(from)
}

// median returns the median of ds (sorting ds).
func median(ds []time.Duration) time.Duration {
	slices.Sort(ds)
	return ds[len(ds)/2]
}
