package wildcharts

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/restmapper"

	"github.com/temco/temco/internal/core/lifecycle"
	"github.com/temco/temco/internal/dev/devstack"
	"github.com/temco/temco/internal/dev/testenv"
)

// wildChart is one run of a public chart of tools/charts/charts.txt and what temco makes
// of it.
type wildChart struct {
	name    string // the composite app, app and Helm release
	chart   string // the chart's folder in .bin/charts, when not name
	cluster int    // the local cluster it is placed on (1 or 2)
	values  string // override values (the app profile's), when the run needs them; say why
	// fails is "" when every object must end Applied; otherwise the instantiate must fail
	// permanently, and this is a part of the reason (an object's error or the operation's).
	fails string
	// beside: run at the same time as the charts of its cluster, not after them (it
	// installs no webhook or API service, and meets none of theirs).
	beside bool
}

// charts are placed on the two clusters, charts of one cluster one after the other: many
// install webhooks or API services whose pods do not run (kwok's node runs no containers),
// which would refuse or stall another chart's objects on the same cluster meanwhile (kueue's
// webhooks take Deployments, Jobs and Pods). Every chart runs with its default values:
// none needed others to be valid.
var charts = []wildChart{
	{name: "cert-manager", cluster: 1},
	{name: "descheduler", cluster: 2},
	{name: "external-dns", cluster: 1},
	{name: "ingress-nginx", cluster: 2},
	{name: "kube-network-policies", cluster: 1},
	{name: "kueue", cluster: 2},
	{name: "kwok", cluster: 1},
	{name: "local-path-provisioner", cluster: 2},
	{name: "metallb", cluster: 1},
	{name: "metrics-server", cluster: 2},
	{name: "node-feature-discovery", cluster: 1},
	{name: "podinfo", cluster: 2},
	{name: "sealed-secrets", cluster: 1},
	{name: "whereabouts", cluster: 2},
	// A chart asked for a kind of a CRD it does not ship, and the cluster does not have:
	// the Prometheus operator's ServiceMonitor. Its object is retried while the CRD may be on
	// its way (2 minutes), then fails for good, naming the kind; the rest is applied.
	{name: "external-dns-monitored", chart: "external-dns", cluster: 1, values: "serviceMonitor:\n  enabled: true\n",
		fails: "the cluster does not serve monitoring.coreos.com/v1, Kind=ServiceMonitor", beside: true},
}

func (c wildChart) folder() string {
	if c.chart != "" {
		return c.chart
	}
	return c.name
}

// result is what one chart's run recorded, for the summary.
type result struct {
	chart, outcome          string
	objects, warned, failed int
	instantiate, terminate  time.Duration
	warnings                []string
	recreated               []string // objects the cluster's controllers made again after the terminate
}

var (
	resultsMu sync.Mutex
	results   []result
)

// Every chart tools/charts/charts.txt lists has its expected outcome here, and no other.
func TestEveryListedChartHasAnOutcome(t *testing.T) {
	listed := listedCharts(t)
	var names []string
	for _, c := range charts {
		if !slices.Contains(names, c.folder()) {
			names = append(names, c.folder())
		}
	}
	slices.Sort(listed)
	slices.Sort(names)
	if !slices.Equal(listed, names) {
		t.Errorf("tools/charts/charts.txt lists %v; the table has %v", listed, names)
	}
}

// Each chart is instantiated on its cluster, ends as its row of the table says, and its
// terminate removes every object it applied.
func TestWildCharts(t *testing.T) {
	t.Cleanup(func() { summary(t) })
	var lanes []string // charts of a lane run one after the other; lanes at once
	byLane := map[string][]wildChart{}
	for _, ch := range charts {
		lane := fmt.Sprintf("cluster%d", ch.cluster)
		if ch.beside {
			lane += "-" + ch.name
		}
		if byLane[lane] == nil {
			lanes = append(lanes, lane)
		}
		byLane[lane] = append(byLane[lane], ch)
	}
	for _, lane := range lanes {
		t.Run(lane, func(t *testing.T) {
			t.Parallel()
			for _, ch := range byLane[lane] {
				t.Run(ch.name, func(t *testing.T) { runChart(t, ch) })
			}
		})
	}
}

func runChart(t *testing.T, ch wildChart) {
	c := &client{t: t}
	cl := stack.Clusters[ch.cluster-1]
	archive, err := testenv.PackChart(filepath.Join(chartsD, ch.folder()), ch.name)
	if err != nil {
		t.Fatalf("%v (built by `make tools`)", err)
	}
	ca := "/projects/" + project + "/composite-apps/" + ch.name + "/v1"
	dig := ca + "/deployment-intent-groups/dig"
	c.do("POST", "/projects/"+project+"/composite-apps", res(ch.name, map[string]any{"compositeAppVersion": "v1"})).must(t, 201)
	c.multipart("POST", ca+"/apps", res(ch.name, nil), archive).must(t, 201)
	c.do("POST", ca+"/composite-profiles", res("prof", nil)).must(t, 201)
	c.multipart("POST", ca+"/composite-profiles/prof/profiles", res(ch.name, map[string]any{"app": ch.name}),
		testenv.Profile(ch.values)).must(t, 201)
	// The DIG's version is Helm's release name: named after the chart, the objects are too.
	c.do("POST", ca+"/deployment-intent-groups", res("dig", map[string]any{
		"compositeProfile": "prof", "version": ch.name, "logicalCloud": "default"})).must(t, 201)
	c.do("POST", dig+"/generic-placement-intents", res("gpi", nil)).must(t, 201)
	c.do("POST", dig+"/generic-placement-intents/gpi/app-intents", res(ch.name, map[string]any{"app": ch.name,
		"intent": map[string]any{"allOf": []any{map[string]any{"clusterProvider": provider, "cluster": cl.Name}}}})).must(t, 201)
	c.do("POST", dig+"/intents", res("intents", map[string]any{"intent": map[string]string{"genericPlacementIntent": "gpi"}})).must(t, 201)
	c.do("POST", dig+"/approve", nil).must(t, 202)

	start := time.Now()
	c.do("POST", dig+"/instantiate", nil).must(t, 202)
	// A test stopped half-way leaves the cluster to the next chart all the same.
	done := false // the terminate below ran
	t.Cleanup(func() {
		if !done {
			terminateQuietly(dig)
		}
	})
	// Bounded by more than the patience an object of a kind not yet served gets (2 min).
	s := await(t, c, dig, "the instantiate to end", 4*time.Minute, func(s status) bool {
		return s.DeployedStatus == lifecycle.StatusInstantiated || s.DeployedStatus == lifecycle.StatusInstantiateFailed
	}, nil)
	r := result{chart: ch.name, instantiate: time.Since(start)}
	objs := s.resources()
	r.objects = len(objs)
	var applied []resource
	for _, o := range objs {
		if o.Warning != "" {
			r.warned++
			r.warnings = append(r.warnings, o.String()+": "+o.Warning)
			t.Logf("warning: %s: %s", o, o.Warning)
		}
		switch o.DeployedStatus {
		case lifecycle.ResApplied:
			applied = append(applied, o)
		case lifecycle.ResFailed:
			r.failed++
			t.Logf("failed: %s (attempts %d): %s", o, o.Attempts, o.Error)
			if o.Error == "" || o.Attempts != 0 {
				t.Errorf("%s failed with attempts %d and error %q: want a permanent failure (attempts 0) with its reason", o, o.Attempts, o.Error)
			}
		case lifecycle.ResRetrying:
			t.Errorf("%s is still Retrying (attempts %d): %s", o, o.Attempts, o.Error)
		default:
			t.Errorf("%s ended %s", o, o.DeployedStatus)
		}
	}
	switch {
	case ch.fails == "" && s.DeployedStatus != lifecycle.StatusInstantiated:
		t.Errorf("instantiate ended %s (%s); want every object Applied", s.DeployedStatus, s.Error)
	case ch.fails == "":
		r.outcome = "applied"
		if len(objs) == 0 {
			t.Errorf("no objects")
		}
	case s.DeployedStatus != lifecycle.StatusInstantiateFailed:
		t.Errorf("instantiate ended %s; want it failed for %q", s.DeployedStatus, ch.fails)
	default:
		r.outcome = "fails: " + s.Error
		for _, o := range objs {
			if o.DeployedStatus == lifecycle.ResFailed {
				r.outcome = "fails: " + o.String() + ": " + o.Error
				break
			}
		}
		if !strings.Contains(s.Error, ch.fails) && !slices.ContainsFunc(objs, func(o resource) bool { return strings.Contains(o.Error, ch.fails) }) {
			t.Errorf("instantiate failed with %q, objects %v; want a reason containing %q", s.Error, failedErrors(objs), ch.fails)
		}
	}
	if r.outcome == "" {
		r.outcome = "unexpected: " + s.DeployedStatus + " " + s.Error
	}
	t.Logf("%s: %s in %s, %d objects (%d applied, %d failed, %d with a warning)", ch.name, s.DeployedStatus,
		r.instantiate.Round(time.Millisecond), len(objs), len(applied), r.failed, r.warned)

	// A failed instantiate that reached the cluster leaves the DIG Instantiated: terminate
	// it too, so the next chart has the cluster to itself.
	if s.state() == lifecycle.StatusInstantiated {
		start = time.Now()
		c.do("POST", dig+"/terminate", nil).must(t, 202)
		done = true
		ts := await(t, c, dig, "the terminate to end", 3*time.Minute, func(s status) bool {
			return s.DeployedStatus == lifecycle.StatusTerminated || s.DeployedStatus == lifecycle.StatusTerminateFailed
		}, func() []string { return lingering(t, cl, applied) })
		r.terminate = time.Since(start)
		if ts.DeployedStatus != lifecycle.StatusTerminated {
			t.Errorf("terminate ended %s: %s %v", ts.DeployedStatus, ts.Error, failedErrors(ts.resources()))
		}
		r.recreated = allGone(t, cl, applied)
	}
	resultsMu.Lock()
	results = append(results, r)
	resultsMu.Unlock()
}

// lingering describes the objects of objs still on the cluster, with what their deletion
// waits for (finalizers; a CRD's conditions): why a terminate has not ended.
func lingering(t *testing.T, cl *devstack.Cluster, objs []resource) []string {
	t.Helper()
	dc, err := cl.Dynamic()
	if err != nil {
		return []string{err.Error()}
	}
	cs, err := cl.Clientset()
	if err != nil {
		return []string{err.Error()}
	}
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(cs.Discovery()))
	var out []string
	for _, o := range objs {
		m, err := mapper.RESTMapping(schema.GroupKind{Group: o.GVK.Group, Kind: o.GVK.Kind}, o.GVK.Version)
		if err != nil {
			continue
		}
		var ri dynamic.ResourceInterface = dc.Resource(m.Resource)
		if m.Scope.Name() == "namespace" {
			ri = dc.Resource(m.Resource).Namespace(o.Namespace)
		}
		got, err := ri.Get(context.Background(), o.Name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
		case err != nil:
			out = append(out, fmt.Sprintf("%s: %v", o, err))
		default:
			conds, _, _ := unstructured.NestedSlice(got.Object, "status", "conditions")
			out = append(out, fmt.Sprintf("%s: deletion %v, finalizers %v, conditions %v", o, got.GetDeletionTimestamp(), got.GetFinalizers(), conds))
		}
	}
	return out
}

// terminateQuietly terminates the DIG if it is instantiated and waits (a while) for it.
func terminateQuietly(dig string) {
	c := &client{}
	if c.do("POST", dig+"/terminate", nil).code != 202 {
		return
	}
	for deadline := time.Now().Add(2 * time.Minute); time.Now().Before(deadline); time.Sleep(500 * time.Millisecond) {
		var s status
		if r := c.do("GET", dig+"/status?status=deployed&output=summary", nil); r.decode(&s) == nil &&
			(s.DeployedStatus == lifecycle.StatusTerminated || s.DeployedStatus == lifecycle.StatusTerminateFailed) {
			return
		}
	}
}

// await polls the DIG's status until cond holds, or fails the test at the deadline.
// explain, when not nil, adds to the failure what the cluster shows.
func await(t *testing.T, c *client, dig, what string, timeout time.Duration, cond func(status) bool, explain func() []string) status {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		var s status
		if err := c.do("GET", dig+"/status?status=deployed", nil).must(t, 200).decode(&s); err != nil {
			t.Fatal(err)
		}
		if cond(s) {
			return s
		}
		if time.Now().After(deadline) {
			var more []string
			if explain != nil {
				more = explain()
			}
			t.Fatalf("%s: not within %s; status %s %v, error %q, objects not applied: %v; on the cluster: %v", what, timeout,
				s.DeployedStatus, s.DeployedCounts, s.Error, failedErrors(s.resources()), more)
		}
		time.Sleep(300 * time.Millisecond)
	}
}

func failedErrors(objs []resource) []string {
	var out []string
	for _, o := range objs {
		if o.DeployedStatus != lifecycle.ResApplied {
			out = append(out, fmt.Sprintf("%s %s (attempts %d): %s", o, o.DeployedStatus, o.Attempts, o.Error))
		}
	}
	return out
}

// allGone waits until none of objs is on the cluster any more; CRDs excepted (terminate
// leaves them, as Helm does). An object that is there again without a field temco applied
// — kube-controller-manager's clusterrole-aggregation-controller server-side applies the
// rules of an aggregated ClusterRole, which creates it anew when the terminate deleted it
// just before (a race of Kubernetes') — is not temco's: it is deleted and returned.
func allGone(t *testing.T, cl *devstack.Cluster, objs []resource) (recreated []string) {
	t.Helper()
	dc, err := cl.Dynamic()
	if err != nil {
		t.Fatal(err)
	}
	cs, err := cl.Clientset()
	if err != nil {
		t.Fatal(err)
	}
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(cs.Discovery()))
	ctx := context.Background()
	deadline := time.Now().Add(time.Minute)
	for {
		var left []string
		for _, o := range objs {
			if o.GVK.Kind == "CustomResourceDefinition" {
				continue
			}
			m, err := mapper.RESTMapping(schema.GroupKind{Group: o.GVK.Group, Kind: o.GVK.Kind}, o.GVK.Version)
			if err != nil {
				continue // the kind went with its CRD
			}
			var ri dynamic.ResourceInterface = dc.Resource(m.Resource)
			if m.Scope.Name() == "namespace" {
				ri = dc.Resource(m.Resource).Namespace(o.Namespace)
			}
			got, err := ri.Get(ctx, o.Name, metav1.GetOptions{})
			switch {
			case apierrors.IsNotFound(err):
			case err != nil:
				left = append(left, fmt.Sprintf("%s (%v)", o, err))
			case !managedBy(got, fieldManager):
				var managers []string
				for _, f := range got.GetManagedFields() {
					managers = append(managers, f.Manager)
				}
				recreated = append(recreated, fmt.Sprintf("%s (made again by %s)", o, strings.Join(managers, ", ")))
				t.Logf("after the terminate, %s is there again, made by %v, not temco: deleted", o, managers)
				if err := ri.Delete(ctx, o.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
					t.Errorf("delete %s: %v", o, err)
				}
				left = append(left, o.String()+" (deleted by the test)")
			default:
				left = append(left, o.String())
			}
		}
		if len(left) == 0 {
			return recreated
		}
		if time.Now().After(deadline) {
			t.Errorf("after the terminate, still on %s: %v", cl.Name, left)
			return recreated
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// fieldManager is the field manager of temco's applies (activities/cluster).
const fieldManager = "temco"

func managedBy(u *unstructured.Unstructured, manager string) bool {
	for _, f := range u.GetManagedFields() {
		if f.Manager == manager {
			return true
		}
	}
	return false
}

// listedCharts reads the names tools/charts/charts.txt lists.
func listedCharts(t *testing.T) []string {
	f, err := os.Open(filepath.Join(repo, "tools", "charts", "charts.txt"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if fields := strings.Fields(sc.Text()); len(fields) > 0 && !strings.HasPrefix(fields[0], "#") {
			out = append(out, fields[0])
		}
	}
	return out
}

// summary logs the results as a table (BENCHMARKS.md keeps a copy).
func summary(t *testing.T) {
	resultsMu.Lock()
	defer resultsMu.Unlock()
	sort.Slice(results, func(i, j int) bool { return results[i].chart < results[j].chart })
	var b strings.Builder
	b.WriteString("\n| chart | objects | outcome | warnings | instantiate | terminate |\n|---|---|---|---|---|---|\n")
	for _, r := range results {
		fmt.Fprintf(&b, "| %s | %d | %s | %d | %.1f s | %.1f s |\n", r.chart, r.objects, r.outcome, r.warned,
			r.instantiate.Seconds(), r.terminate.Seconds())
	}
	for _, r := range results {
		for _, w := range r.warnings {
			fmt.Fprintf(&b, "%s: warning: %s\n", r.chart, w)
		}
		for _, o := range r.recreated {
			fmt.Fprintf(&b, "%s: after the terminate: %s\n", r.chart, o)
		}
	}
	t.Log(b.String())
}
