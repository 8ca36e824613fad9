package e2e

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/workflowservice/v1"
	temporalclient "go.temporal.io/sdk/client"
	authnv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"k8s.io/client-go/kubernetes"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"

	"github.com/temco/temco/internal/core/lifecycle"
	"github.com/temco/temco/internal/dev/testenv"
)

// BenchmarkScale (`make bench-scale CLUSTERS=N`): N clusters, each a namespace of one of
// the stack's three API servers (its kubeconfig's context namespace), get a composite app
// of 3 one-ConfigMap charts placed by label; instantiate, then terminate, TEMCO_SCALE_RUNS
// times (default 2: the second run shows whether the worker's memory grows per run), then
// a raw parallel client-go server-side apply of the same objects for comparison.
func BenchmarkScale(b *testing.B) {
	n := scaleN(100)
	runs, _ := strconv.Atoi(os.Getenv("TEMCO_SCALE_RUNS"))
	if runs <= 0 {
		runs = 2
	}
	prov := fmt.Sprintf("scale%d", n)
	setup := time.Now()
	d, kubeconfigs := scaleDeployment(b, prov, n)
	fmt.Printf("scale: %d clusters registered, cloud and DIG ready in %s (%d creates retried: a 5xx, or a 409 saying to retry)\n",
		n, time.Since(setup).Round(time.Second), retried.Load())

	tc := dialTemporal(b)
	defer tc.Close()
	worker, temporal := stack.Worker.Cmd.Process.Pid, stack.Temporal.Proc().Cmd.Process.Pid
	workers := []int{worker} // CPU is summed over every worker; RSS and sockets are the first's
	for _, w := range stack.MoreWorkers {
		workers = append(workers, w.Cmd.Process.Pid)
	}
	workersCPU := func() (sum float64) {
		for _, pid := range workers {
			sum += cpuSeconds(pid)
		}
		return sum
	}
	var rss []int64
	orch := orchestration{n: n}
	bestInst, bestTerm := time.Duration(math.MaxInt64), time.Duration(math.MaxInt64)
	idleCPU(n, 10*time.Second)
	for run := 1; run <= runs; run++ {
		resetPeak(worker)
		resetPeak(temporal)
		cpuW, cpuT := workersCPU(), cpuSeconds(temporal)
		since := time.Now().UTC().Add(-time.Second)

		socks := peakSockets(worker)
		cmds0, reqs0 := storeCommands(b), temporalRequests(b) // first: scraping the metrics is the benchmark's own work
		start, cpu0 := time.Now(), cpuByProcess()
		inst := operate(b, d, tc, lifecycle.OpInstantiate)
		instantiate, cpu1 := time.Since(start), cpuByProcess()
		orch.add("instantiate", cpu0, cpu1)
		fmt.Printf("scale: N=%d instantiate store commands per cluster: %s\n", n, perCluster(cmds0, storeCommands(b), n))
		fmt.Printf("scale: N=%d instantiate Temporal requests: %s\n", n, perCluster(reqs0, temporalRequests(b), 1))
		var s status
		var summary time.Duration
		for range 3 {
			t0 := time.Now()
			r := d.c.do("GET", d.dig()+"/status?output=summary", nil)
			summary = max(summary, time.Since(t0))
			mustCode(b, r, 200)
			_ = json.Unmarshal(r.body, &s)
		}
		if s.Status != lifecycle.StatusInstantiated || s.RsyncStatus[lifecycle.ResApplied] != 3*n {
			b.Fatalf("after instantiate (%s): %s, rsync-status %v", inst, s.Status, s.RsyncStatus)
		}
		docs := documentCounts(b)
		if secs, err := strconv.Atoi(cmp.Or(os.Getenv("TEMCO_SCALE_API_SECONDS"), "20")); run == 1 && err == nil && secs > 0 {
			apiLoad(b, d, n, 50, time.Duration(secs)*time.Second, 0)
			for _, f := range strings.Fields(cmp.Or(os.Getenv("TEMCO_SCALE_API_RATES"), "50 100 200")) {
				if rate, err := strconv.ParseFloat(f, 64); err == nil && rate > 0 {
					apiLoad(b, d, n, 50, time.Duration(secs)*time.Second, rate)
				}
			}
		}

		cmds0, reqs0 = storeCommands(b), temporalRequests(b)
		start, cpu0 = time.Now(), cpuByProcess()
		operate(b, d, tc, lifecycle.OpTerminate)
		terminate, cpu1 := time.Since(start), cpuByProcess()
		orch.add("terminate", cpu0, cpu1)
		fmt.Printf("scale: N=%d terminate store commands per cluster: %s\n", n, perCluster(cmds0, storeCommands(b), n))
		fmt.Printf("scale: N=%d terminate Temporal requests: %s\n", n, perCluster(reqs0, temporalRequests(b), 1))
		peakSocks := socks()
		wf, events := largestHistory(b, tc, since)
		rss = append(rss, rssKiB(worker, "VmRSS"))
		fmt.Printf("scale: N=%d run %d: instantiate %s (%.0f objects/s), terminate %s, status summary %s, "+
			"largest history %d events (%s), workers %.1f CPU s, the first's peak RSS %d MiB (after: %d MiB) peak sockets %d, Temporal %.1f CPU s peak RSS %d MiB, documents %s\n",
			n, run, instantiate.Round(time.Millisecond), float64(3*n)/instantiate.Seconds(), terminate.Round(time.Millisecond),
			summary.Round(time.Millisecond), events, wf, workersCPU()-cpuW, rssKiB(worker, "VmHWM")>>10, rss[len(rss)-1]>>10, peakSocks,
			cpuSeconds(temporal)-cpuT, rssKiB(temporal, "VmHWM")>>10, docs)
		b.ReportMetric(instantiate.Seconds(), fmt.Sprintf("instantiate-s/run%d", run))
		bestInst, bestTerm = min(bestInst, instantiate), min(bestTerm, terminate)
	}
	if len(rss) > 1 {
		fmt.Printf("scale: worker RSS after run 1: %d MiB, after run %d: %d MiB (%+.0f%%)\n", rss[0]>>10, len(rss),
			rss[len(rss)-1]>>10, 100*float64(rss[len(rss)-1]-rss[0])/float64(rss[0]))
	}
	raw0 := cpuByProcess()
	apply, del := rawScaleApply(b, n, kubeconfigs)
	rawCPU := map[string]time.Duration{}
	cpuDelta(rawCPU, raw0, cpuByProcess())
	// The client's share of a server-side apply (the benchmark's process here, temco's
	// worker above): the floor under temco's own CPU.
	fmt.Printf("scale: N=%d raw apply and delete CPU ms by process: %s\n", n, cpuReport(rawCPU, 1))
	fmt.Printf("scale: N=%d raw client-go server-side apply of the same %d objects: %s (%.0f objects/s), delete %s\n",
		n, 3*n, apply.Round(time.Millisecond), float64(3*n)/apply.Seconds(), del.Round(time.Millisecond))
	fmt.Println(orch.line())
	// The target (≤ 1.5), the best run of each against the raw apply and delete.
	fmt.Printf("scale: N=%d ratio instantiate %.2f terminate %.2f\n", n, bestInst.Seconds()/apply.Seconds(), bestTerm.Seconds()/del.Seconds())
}

// scaleDeployment makes prov's n clusters (scaleClusters), registers them (imports) in a
// logical cloud "all" of project prov, and creates and approves the benchmark's DIG: 3
// one-ConfigMap charts placed on all of them by label. It returns the DIG and the
// clusters' kubeconfigs.
func scaleDeployment(b *testing.B, prov string, n int) (*deployment, [][]byte) {
	kubeconfigs := scaleClusters(b, prov, n)
	d := &deployment{t: &testing.T{}, c: &client{}, project: prov, logicalCloud: "all"}
	for _, a := range []string{"a1", "a2", "a3"} {
		d.apps = append(d.apps, app{name: a, placement: map[string]any{"allOf": []any{map[string]any{"clusterProvider": prov, "clusterLabel": "scale"}}},
			chart: testenv.Chart(a, "", map[string]string{"cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: " + a + "\ndata:\n  k: v\n"})})
	}
	d.setUpCloud = func(d *deployment) {
		lc := "/projects/" + d.project + "/logical-clouds/all"
		mustCode(b, d.c.do("POST", "/projects/"+d.project+"/logical-clouds", res("all", map[string]any{"level": "0"})), 201)
		start := time.Now()
		importScaleClusters(b, prov, d.project, kubeconfigs, nil)
		fmt.Printf("scale: N=%d registration (clusters with kubeconfig, label and logical-cloud reference; imports of %d, 2 at once): %s\n",
			n, scaleImport, time.Since(start).Round(time.Millisecond))
		mustCode(b, d.c.do("POST", lc+"/instantiate", nil), 202)
		d.awaitCloud("all", lifecycle.StatusInstantiated)
	}
	if d.c.do("GET", "/projects/"+d.project, nil).code == 404 {
		d.create()
	}
	return d, kubeconfigs
}

// scaleClusters makes provider prov's clusters s0..s<n-1>: cluster i is namespace s<i> of
// the stack's API server i%3, reached with its own credentials: ServiceAccount "temco" of
// the namespace, bound to the admin role there alone, and a token of it (so no two
// clusters share an identity, and none can touch another's namespace). It returns their
// kubeconfigs; nil when prov is registered already (once per stack).
func scaleClusters(b *testing.B, prov string, n int) [][]byte {
	c := &client{}
	if c.do("GET", "/cluster-providers/"+prov, nil).code == 200 {
		return nil
	}
	mustCode(b, c.do("POST", "/cluster-providers", res(prov, nil)), 201)
	var base []*clientcmdapi.Config
	var sets []*kubernetes.Clientset
	for _, cl := range stack.Clusters {
		cfg, err := clientcmd.LoadFromFile(cl.Kubeconfig())
		if err != nil {
			b.Fatal(err)
		}
		cs, err := cl.Clientset()
		if err != nil {
			b.Fatal(err)
		}
		base, sets = append(base, cfg), append(sets, cs)
	}
	kubeconfigs := make([][]byte, n)
	ctx := context.Background()
	parallel(b, n, 32, func(i int) error {
		ns, cs := "s"+strconv.Itoa(i), sets[i%len(sets)]
		_, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
		meta := metav1.ObjectMeta{Name: "temco", Namespace: ns}
		_, err = cs.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: meta}, metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
		_, err = cs.RbacV1().RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{ObjectMeta: meta,
			RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "admin"},
			Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: "temco", Namespace: ns}}}, metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
		tr, err := cs.CoreV1().ServiceAccounts(ns).CreateToken(ctx, "temco",
			&authnv1.TokenRequest{Spec: authnv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](48 * 3600)}}, metav1.CreateOptions{})
		if err != nil {
			return err
		}
		from := base[i%len(base)]
		server := from.Clusters[from.Contexts[from.CurrentContext].Cluster]
		cfg := clientcmdapi.NewConfig()
		cfg.Clusters[ns] = server
		cfg.AuthInfos[ns] = &clientcmdapi.AuthInfo{Token: tr.Status.Token}
		cfg.Contexts[ns] = &clientcmdapi.Context{Cluster: ns, AuthInfo: ns, Namespace: ns}
		cfg.CurrentContext = ns
		kubeconfigs[i], err = clientcmd.Write(*cfg)
		return err
	})
	return kubeconfigs
}

// scaleImport is how many clusters one import registers.
const scaleImport = 1000

// importScaleClusters registers prov's clusters (scaleClusters), labelled "scale" (and
// what more adds for cluster i) and referenced by project's logical cloud "all" (none
// without a project), scaleImport at a time, two imports at once.
func importScaleClusters(b *testing.B, prov, project string, kubeconfigs [][]byte, more func(i int) []string) {
	c := &client{}
	imports := (len(kubeconfigs) + scaleImport - 1) / scaleImport
	parallel(b, imports, 2, func(k int) error {
		var clusters []map[string]any
		for i := k * scaleImport; i < min(len(kubeconfigs), (k+1)*scaleImport); i++ {
			cl := map[string]any{"metadata": map[string]any{"name": "s" + strconv.Itoa(i)},
				"kubeconfig": string(kubeconfigs[i]), "labels": []string{"scale"}}
			if more != nil {
				cl["labels"] = append([]string{"scale"}, more(i)...)
			}
			if project != "" {
				cl["logicalClouds"] = []map[string]string{{"project": project, "logicalCloud": "all"}}
			}
			clusters = append(clusters, cl)
		}
		return created(func() response {
			return c.do("POST", "/cluster-providers/"+prov+"/cluster-imports", map[string]any{"clusters": clusters})
		})
	})
}

// operate starts op on the DIG and waits for its workflow to end.
func operate(b *testing.B, d *deployment, tc temporalclient.Client, op string) string {
	r := d.c.do("POST", d.dig()+"/"+op, nil)
	mustCode(b, r, 202)
	var acc lifecycle.OpAccepted
	_ = json.Unmarshal(r.body, &acc)
	if err := tc.GetWorkflow(context.Background(), acc.WorkflowID, "").Get(context.Background(), nil); err != nil {
		b.Fatalf("%s: %v", op, err)
	}
	return acc.WorkflowID
}

// largestHistory is the workflow started after since with the most history events.
func largestHistory(b *testing.B, tc temporalclient.Client, since time.Time) (string, int64) {
	var token []byte
	var id string
	var most int64
	for {
		resp, err := tc.ListWorkflow(context.Background(), &workflowservice.ListWorkflowExecutionsRequest{
			Query: "StartTime >= '" + since.Format(time.RFC3339) + "'", NextPageToken: token})
		if err != nil {
			b.Fatal(err)
		}
		for _, e := range resp.Executions {
			if e.Status == enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
				continue // the DIG's entity workflow idles until it times out
			}
			if e.HistoryLength > most {
				id, most = e.Execution.WorkflowId, e.HistoryLength
			}
		}
		if token = resp.NextPageToken; len(token) == 0 {
			return id, most
		}
	}
}

// documentCounts counts the documents of every collection of temco's database.
func documentCounts(b *testing.B) string {
	mc, err := mongo.Connect(options.Client().ApplyURI(stack.Mongo.URI()))
	if err != nil {
		b.Fatal(err)
	}
	defer mc.Disconnect(context.Background())
	db := mc.Database("temco")
	names, err := db.ListCollectionNames(context.Background(), bson.D{})
	if err != nil {
		b.Fatal(err)
	}
	var out []string
	for _, name := range names {
		n, err := db.Collection(name).CountDocuments(context.Background(), bson.D{})
		if err != nil {
			b.Fatal(err)
		}
		out = append(out, fmt.Sprintf("%s=%d", name, n))
	}
	return strings.Join(out, " ")
}

// rawScaleApply applies, then deletes, the benchmark's objects with client-go directly:
// 64 requests in flight, each cluster with its own credentials (kubeconfigs), as temco
// reaches it; with the stack's admin credentials when there are none (a stack that had
// registered the clusters before).
func rawScaleApply(b *testing.B, n int, kubeconfigs [][]byte) (apply, del time.Duration) {
	clients := make([]corev1client.CoreV1Interface, n)
	for i := range n {
		var cfg *rest.Config
		var err error
		if kubeconfigs != nil {
			cfg, err = clientcmd.RESTConfigFromKubeConfig(kubeconfigs[i])
		} else {
			cfg, err = clientcmd.BuildConfigFromFlags("", stack.Clusters[i%len(stack.Clusters)].Kubeconfig())
		}
		if err != nil {
			b.Fatal(err)
		}
		cfg.QPS, cfg.Burst = 5000, 5000
		if clients[i], err = corev1client.NewForConfig(cfg); err != nil {
			b.Fatal(err)
		}
	}
	for _, remove := range []bool{false, true} {
		start := time.Now()
		parallel(b, 3*n, 64, func(k int) error {
			i, a := k/3, "raw-a"+strconv.Itoa(k%3+1)
			cms := clients[i].ConfigMaps("s" + strconv.Itoa(i))
			if remove {
				return cms.Delete(context.Background(), a, metav1.DeleteOptions{})
			}
			_, err := cms.Apply(context.Background(), corev1ac.ConfigMap(a, "s"+strconv.Itoa(i)).WithData(map[string]string{"k": "v"}),
				metav1.ApplyOptions{FieldManager: "bench", Force: true})
			return err
		})
		if remove {
			del = time.Since(start)
		} else {
			apply = time.Since(start)
		}
	}
	return apply, del
}

// parallel runs f(0..n-1) with width goroutines and fails b on the first error.
func parallel(b *testing.B, n, width int, f func(int) error) {
	var next atomic.Int64
	var wg sync.WaitGroup
	var once sync.Once
	var first error
	for range width {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				if err := f(i); err != nil {
					once.Do(func() { first = fmt.Errorf("item %d: %w", i, err) })
					return
				}
			}
		})
	}
	wg.Wait()
	if first != nil {
		b.Fatal(first)
	}
}

// created retries a create that failed on the server's side (the database answering
// slowly under the load of thousands of requests), as a client would: a 5xx, or a 409
// that says to retry (the store was too slow to commit in time, and withdrew the
// create). A 409 after a retry means the failed attempt had in fact committed.
func created(do func() response) error {
	var err error
	for attempt := range 4 {
		r := do()
		again := r.code >= 500 || r.code == 409 && strings.Contains(string(r.body), "; retry")
		if r.code == 201 || attempt > 0 && r.code == 409 && !again {
			return nil
		}
		if err = expect(r, 201); !again {
			return err
		}
		retried.Add(1)
		time.Sleep(time.Duration(attempt+1) * 100 * time.Millisecond)
	}
	return err
}

// retried counts the creates created retried.
var retried atomic.Int64

func expect(r response, code int) error {
	if r.code != code {
		return fmt.Errorf("status %d, want %d: %s", r.code, code, r.body)
	}
	return nil
}

func mustCode(b *testing.B, r response, code int) {
	b.Helper()
	if err := expect(r, code); err != nil {
		b.Fatal(err)
	}
}

// cpuSeconds is the user+system CPU time of process pid.
func cpuSeconds(pid int) float64 {
	_, t, _ := testenv.ProcCPU(pid)
	return (time.Duration(t) * testenv.ClockTick).Seconds()
}

// rssKiB reads a memory field of /proc/<pid>/status (VmRSS now, VmHWM the peak).
func rssKiB(pid int, field string) int64 {
	f, err := os.Open("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), field+":"); ok {
			n, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return n
		}
	}
	return 0
}

// resetPeak restarts the kernel's peak-RSS (VmHWM) accounting of pid.
func resetPeak(pid int) { _ = os.WriteFile("/proc/"+strconv.Itoa(pid)+"/clear_refs", []byte("5"), 0) }

// sockets counts the open sockets of pid (its connections to the API servers, Temporal and
// the store).
func sockets(pid int) int {
	dir := "/proc/" + strconv.Itoa(pid) + "/fd/"
	fds, _ := os.ReadDir(dir)
	n := 0
	for _, fd := range fds {
		if l, err := os.Readlink(dir + fd.Name()); err == nil && strings.HasPrefix(l, "socket:") {
			n++
		}
	}
	return n
}

// peakSockets samples sockets(pid) every 200 ms until the returned stop, which returns
// the most it saw.
func peakSockets(pid int) (stop func() int) {
	done, peak := make(chan struct{}), make(chan int)
	go func() {
		most := sockets(pid)
		t := time.NewTicker(200 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-done:
				peak <- max(most, sockets(pid))
				return
			case <-t.C:
				most = max(most, sockets(pid))
			}
		}
	}()
	return func() int { close(done); return <-peak }
}

// orchestration keeps, over a benchmark's operations, the one whose orchestration CPU
// (temco's processes, Temporal and the store) was the largest against the clusters' own,
// and the same over the operations after the first run (warm: a worker reads each
// cluster's registration once, in its first operation on it).
type orchestration struct {
	n          int
	all, warm  orchestrationMax
	operations int
}

type orchestrationMax struct{ temco, clusters time.Duration }

func (m *orchestrationMax) add(t, c time.Duration) {
	if m.clusters == 0 || t.Seconds()/max(c.Seconds(), 0.001) > m.temco.Seconds()/max(m.clusters.Seconds(), 0.001) {
		m.temco, m.clusters = t, c
	}
}

func (o *orchestration) add(op string, before, after map[string]procCPU) {
	sum := map[string]time.Duration{}
	cpuDelta(sum, before, after)
	fmt.Printf("scale: N=%d %s CPU ms by process: %s\n", o.n, op, cpuReport(sum, 1))
	t, c := cpuOf(orchestrators, before, after), cpuOf(clusterSide, before, after)
	o.all.add(t, c)
	if o.operations++; o.operations > 2 {
		o.warm.add(t, c)
	}
}

// idleCPU prints each process's CPU over a window in which nothing was asked of temco:
// what its timers, probes and pollers cost, which every operation's figures include.
func idleCPU(n int, window time.Duration) {
	before := cpuByProcess()
	time.Sleep(window) // the window measured, not a wait for a state
	sum := map[string]time.Duration{}
	cpuDelta(sum, before, cpuByProcess())
	fmt.Printf("scale: N=%d idle CPU ms per second by process: %s\n", n, cpuReport(sum, int(window/time.Second)))
}

// line is issue 66's figure: CPU ms per cluster of temco's work and of the clusters', and
// their ratio (target ≤ 0.5), over every operation, then over those after the first run.
func (o *orchestration) line() string {
	per := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 / float64(o.n) }
	out := fmt.Sprintf("orchestration: N=%d cpu-ms-per-cluster %.2f clusters %.2f fraction %.2f",
		o.n, per(o.all.temco), per(o.all.clusters), o.all.temco.Seconds()/max(o.all.clusters.Seconds(), 0.001))
	if o.warm.clusters > 0 {
		out += fmt.Sprintf("\norchestration: N=%d (after the first run) cpu-ms-per-cluster %.2f clusters %.2f fraction %.2f",
			o.n, per(o.warm.temco), per(o.warm.clusters), o.warm.temco.Seconds()/max(o.warm.clusters.Seconds(), 0.001))
	}
	return out
}

// storeCommands reads how many store commands every api and worker have sent so far, by
// command and collection (temco_store_commands_total).
func storeCommands(b *testing.B) map[string]float64 {
	return counters(b, "temco_store_commands_total", "command", "collection")
}

// temporalRequests reads how many requests every api and worker have sent the Temporal
// server so far, by operation (the SDK's temporal_request): its round trips.
func temporalRequests(b *testing.B) map[string]float64 {
	return counters(b, "temporal_request", "operation")
}

// counters sums a counter over every api and worker, by the values of labels (joined by
// spaces).
func counters(b *testing.B, metric string, labels ...string) map[string]float64 {
	out := map[string]float64{}
	urls := []string{strings.TrimSuffix(apiURL, "/v2") + "/metrics"}
	for _, p := range stack.APIPorts {
		urls = append(urls, fmt.Sprintf("http://127.0.0.1:%d/metrics", p))
	}
	for _, p := range stack.MetricsPorts() {
		urls = append(urls, fmt.Sprintf("http://127.0.0.1:%d/metrics", p))
	}
	for _, url := range urls {
		resp, err := http.Get(url)
		if err != nil {
			b.Fatal(err)
		}
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			line, ok := strings.CutPrefix(sc.Text(), metric+"{")
			if !ok {
				continue
			}
			set, value, _ := strings.Cut(line, "} ")
			v, _ := strconv.ParseFloat(value, 64)
			got := map[string]string{}
			for _, l := range strings.Split(set, ",") {
				k, v, _ := strings.Cut(l, "=")
				got[k] = strings.Trim(v, `"`)
			}
			key := make([]string, len(labels))
			for i, l := range labels {
				key[i] = got[l]
			}
			out[strings.Join(key, " ")] += v
		}
		resp.Body.Close()
	}
	return out
}

// perCluster formats what was sent between before and after, per cluster, largest first.
func perCluster(before, after map[string]float64, n int) string {
	var total float64
	keys := []string{}
	for k, v := range after {
		if d := v - before[k]; d > 0 {
			total += d
			keys = append(keys, k)
		}
	}
	slices.SortFunc(keys, func(a, b string) int { return cmp.Compare(after[b]-before[b], after[a]-before[a]) })
	parts := []string{fmt.Sprintf("total %.2f", total/float64(n))}
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s %.2f", k, (after[k]-before[k])/float64(n)))
	}
	return strings.Join(parts, ", ")
}
