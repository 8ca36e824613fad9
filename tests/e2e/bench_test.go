package e2e

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/yaml"

	temporalclient "go.temporal.io/sdk/client"

	"github.com/temco/temco/internal/core/lifecycle"
	"github.com/temco/temco/internal/dev/testenv"
)

// tenObjects renders the 10 objects of bench app name: 4 ConfigMaps, 3 Services, 3 Deployments.
func tenObjects(name string) string {
	var b strings.Builder
	for i := range 4 {
		fmt.Fprintf(&b, "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s-cm%d\ndata:\n  k: v%d\n", name, i, i)
	}
	for i := range 3 {
		fmt.Fprintf(&b, "---\napiVersion: v1\nkind: Service\nmetadata:\n  name: %s-svc%d\nspec:\n  selector: {app: %s-d%d}\n  ports: [{port: 80}]\n", name, i, name, i)
		fmt.Fprintf(&b, "---\napiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: %s-d%d\nspec:\n  replicas: 1\n  selector: {matchLabels: {app: %s-d%d}}\n  template:\n    metadata: {labels: {app: %s-d%d}}\n    spec: {containers: [{name: c, image: registry.local/x:1}]}\n", name, i, name, i, name, i)
	}
	return b.String()
}

var gvrs = map[string]schema.GroupVersionResource{
	"ConfigMap":  {Version: "v1", Resource: "configmaps"},
	"Service":    {Version: "v1", Resource: "services"},
	"Deployment": {Group: "apps", Version: "v1", Resource: "deployments"},
}

// rawApply server-side applies (or deletes) objects on every cluster with client-go, the
// clusters at once, each wave's objects at once after the wave before; it returns the
// wall time. One wave of everything is the raw apply the target compares temco with.
func rawApply(b *testing.B, clients []dynamic.Interface, waves [][]*unstructured.Unstructured, del bool) time.Duration {
	var wg sync.WaitGroup
	start := time.Now()
	for _, c := range clients {
		wg.Go(func() {
			for _, wave := range waves {
				var ww sync.WaitGroup
				for _, o := range wave {
					ww.Go(func() {
						ri := c.Resource(gvrs[o.GetKind()]).Namespace("default")
						var err error
						if del {
							err = ri.Delete(context.Background(), o.GetName(), metav1.DeleteOptions{})
						} else {
							_, err = ri.Apply(context.Background(), o.GetName(), o, metav1.ApplyOptions{FieldManager: "bench", Force: true})
						}
						if err != nil {
							b.Error(err)
						}
					})
				}
				ww.Wait()
			}
		})
	}
	wg.Wait()
	return time.Since(start)
}

// BenchmarkInstantiate: 3 apps x 10 resources onto the 3 local clusters, timed from the
// instantiate request until the operation's workflow completes, against a raw parallel
// server-side apply of the same 90 objects, all at once; and, for comparison, against a
// raw apply in temco's order (on each cluster the Deployments after the rest). Run with
// `make bench`.
func BenchmarkInstantiate(b *testing.B) {
	t := &testing.T{}
	d, _ := benchDeployment(t, "bench")
	var raw, config, workloads []*unstructured.Unstructured
	for _, n := range benchApps {
		for _, doc := range strings.Split(tenObjects(n+"-raw"), "---\n")[1:] {
			u := &unstructured.Unstructured{}
			if err := yaml.Unmarshal([]byte(doc), &u.Object); err != nil {
				b.Fatal(err)
			}
			raw = append(raw, u)
			if u.GetKind() == "Deployment" {
				workloads = append(workloads, u)
			} else {
				config = append(config, u)
			}
		}
	}
	var clients []dynamic.Interface
	for _, cl := range stack.Clusters {
		cfg, err := clientcmd.BuildConfigFromFlags("", cl.Kubeconfig())
		if err != nil {
			b.Fatal(err)
		}
		cfg.QPS, cfg.Burst = 200, 400
		dc, err := dynamic.NewForConfig(cfg)
		if err != nil {
			b.Fatal(err)
		}
		clients = append(clients, dc)
	}
	poll := func(want string) { awaitState(b, t, d, want) }
	tc := dialTemporal(b)
	defer tc.Close()
	var temco, direct, ordered []time.Duration
	var split [][]time.Duration
	cpuTemco, cpuRaw := map[string]time.Duration{}, map[string]time.Duration{}
	waitQuiet(b)
	b.ResetTimer()
	for range b.N {
		cpu0 := cpuByProcess()
		start := time.Now()
		r := d.c.do("POST", d.dig()+"/instantiate", nil)
		if r.code != 202 {
			b.Fatalf("instantiate: %d %s", r.code, r.body)
		}
		// Wait on the operation's workflow (a long poll): polling the status API in a
		// tight loop would steal the CPU the clusters need.
		var acc lifecycle.OpAccepted
		r.json(t, &acc)
		if err := tc.GetWorkflow(context.Background(), acc.WorkflowID, "").Get(context.Background(), nil); err != nil {
			b.Fatal(err)
		}
		temco = append(temco, time.Since(start))
		b.StopTimer()
		cpuDelta(cpuTemco, cpu0, cpuByProcess())
		p, err := phases(tc, acc.WorkflowID, start, start.Add(temco[len(temco)-1]))
		if err != nil {
			b.Fatal(err)
		}
		split = append(split, p)
		poll(lifecycle.StatusInstantiated)
		d.c.do("POST", d.dig()+"/terminate", nil)
		poll(lifecycle.StatusTerminated)
		waitQuiet(b)
		cpu0 = cpuByProcess()
		direct = append(direct, rawApply(b, clients, [][]*unstructured.Unstructured{raw}, false))
		cpuDelta(cpuRaw, cpu0, cpuByProcess())
		rawApply(b, clients, [][]*unstructured.Unstructured{raw}, true)
		waitQuiet(b)
		ordered = append(ordered, rawApply(b, clients, [][]*unstructured.Unstructured{config, workloads}, false))
		rawApply(b, clients, [][]*unstructured.Unstructured{raw}, true)
		waitQuiet(b)
		b.StartTimer()
	}
	// Each iteration's raw apply runs right after its instantiate, so the paired ratios
	// see the same machine load; they are logged to show the spread.
	paired := make([]float64, len(temco))
	var pairs []string
	for i := range temco {
		paired[i] = float64(temco[i]) / float64(direct[i])
		var ph []string
		for _, d := range split[i] {
			ph = append(ph, strconv.FormatInt(d.Milliseconds(), 10))
		}
		pairs = append(pairs, fmt.Sprintf("%d/%d/%d (%s)", temco[i].Milliseconds(), direct[i].Milliseconds(), ordered[i].Milliseconds(), strings.Join(ph, " ")))
	}
	slices.Sort(temco)
	slices.Sort(direct)
	slices.Sort(ordered)
	slices.Sort(paired)
	mt, md, mo := temco[len(temco)/2], direct[len(direct)/2], ordered[len(ordered)/2]
	b.ReportMetric(float64(mt.Milliseconds()), "temco-ms")
	b.ReportMetric(float64(md.Milliseconds()), "raw-ms")
	b.ReportMetric(float64(mt)/float64(md), "ratio")
	b.ReportMetric(paired[len(paired)/2], "paired-ratio")
	b.ReportMetric(float64(mo.Milliseconds()), "raw-in-order-ms")
	b.Logf("median of %d: temco %s, raw server-side apply %s, ratio %.2f; median of the paired ratios %.2f; "+
		"raw apply in temco's order %s, ratio %.2f", b.N, mt, md, float64(mt)/float64(md), paired[len(paired)/2], mo, float64(mt)/float64(mo))
	b.Logf("each iteration, temco/raw/raw in order ms (temco's phases): %s", strings.Join(pairs, ", "))
	b.Logf("temco's phases (medians): %s", phaseMedians(split))
	b.Logf("CPU ms per instantiate by process: %s", cpuReport(cpuTemco, b.N))
	b.Logf("CPU ms per raw apply by process: %s", cpuReport(cpuRaw, b.N))
}

// benchApps are the bench's apps; each renders tenObjects and goes to every cluster.
var benchApps = []string{"a1", "a2", "a3"}

// benchDeployment is the bench's deployment of benchApps in project; it onboards it
// (and reports so) unless an earlier run of the benchmark did. t is a bare testing.T:
// benchmarks have no *testing.T, and a failed step stops the benchmark's goroutine.
func benchDeployment(t *testing.T, project string) (*deployment, bool) {
	d := &deployment{t: t, c: &client{}, project: project}
	every := map[string]any{"allOf": []any{map[string]any{"clusterProvider": provider, "clusterLabel": "edge"},
		map[string]any{"clusterProvider": provider, "clusterLabel": "core"}}}
	for _, n := range benchApps {
		d.apps = append(d.apps, app{name: n, chart: testenv.Chart(n, "", map[string]string{"all.yaml": tenObjects(n)}), placement: every})
	}
	if r := d.c.do("GET", "/projects/"+project, nil); r.code != 404 {
		return d, false
	}
	d.create()
	return d, true
}

// awaitState polls the DIG's status until it is want, for at most 2 minutes.
func awaitState(b *testing.B, t *testing.T, d *deployment, want string) {
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		var s status
		if r := d.c.do("GET", d.dig()+"/status?output=summary", nil); r.code == 200 {
			r.json(t, &s)
			if s.Status == want {
				return
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	b.Fatalf("%s: not %s within 2 minutes", d.dig(), want)
}

// scaleN is the benchmarks' N: TEMCO_SCALE_CLUSTERS (make's CLUSTERS), else def.
func scaleN(def int) int {
	if n, _ := strconv.Atoi(os.Getenv("TEMCO_SCALE_CLUSTERS")); n > 0 {
		return n
	}
	return def
}

// dialTemporal connects to the stack's Temporal, to wait on and read operations' workflows.
func dialTemporal(tb testing.TB) temporalclient.Client {
	tb.Helper()
	tc, err := temporalclient.Dial(temporalclient.Options{HostPort: stack.Temporal.Address(), Logger: quiet{}})
	if err != nil {
		tb.Fatal(err)
	}
	return tc
}

type quiet struct{}

func (quiet) Debug(string, ...any) {}
func (quiet) Info(string, ...any)  {}
func (quiet) Warn(string, ...any)  {}
func (quiet) Error(string, ...any) {}

// waitQuiet waits until no Deployment, ReplicaSet or Pod is left on any cluster, so each
// timed phase starts on idle clusters instead of competing with garbage collection.
func waitQuiet(b *testing.B) {
	deadline := time.Now().Add(2 * time.Minute)
	for _, cl := range stack.Clusters {
		cs, err := cl.Clientset()
		if err != nil {
			b.Fatal(err)
		}
		for {
			ctx := context.Background()
			pods, err1 := cs.CoreV1().Pods("default").List(ctx, metav1.ListOptions{})
			rss, err2 := cs.AppsV1().ReplicaSets("default").List(ctx, metav1.ListOptions{})
			deps, err3 := cs.AppsV1().Deployments("default").List(ctx, metav1.ListOptions{})
			if err1 == nil && err2 == nil && err3 == nil && len(pods.Items)+len(rss.Items)+len(deps.Items) == 0 {
				break
			}
			if time.Now().After(deadline) {
				b.Fatalf("%s does not become quiet", cl.Name)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
}
