package chaos

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/workflowservice/v1"
	temporalclient "go.temporal.io/sdk/client"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/temco/temco/internal/dev/devstack"
)

// checker holds the invariants checked after a run, each against the store (through the
// API), Temporal or the live clusters.
type checker struct {
	t      *testing.T
	r      *run
	c      *client
	digs   []*digActor
	clouds *cloudActor
	kills  []kill
	ops    []opRun // every operation's workflow run, from Temporal
	probe  bool    // selfTest's: a difference is expected, its trails are not worth printing
}

// opRun is one run of an operation's workflow.
type opRun struct {
	ID           string
	Target, Op   string
	Start, Close time.Time
	Status       enumspb.WorkflowExecutionStatus
}

// restarts: every component killed came back as often as it was killed.
func (k *checker) restarts(sv *devstack.Supervisor) {
	killed := map[string]int{}
	for _, x := range k.kills {
		killed[x.Component]++
	}
	got := sv.Restarts()
	for name, n := range killed {
		if got[name] < n {
			k.r.violation("%s was killed %d times and restarted %d times", name, n, got[name])
		}
	}
}

// liveObjects: what every cluster holds is exactly what each DIG's final state says:
// its current revision's apps on that revision's clusters, nothing of a DIG not deployed.
func (k *checker) liveObjects(ctx context.Context, wait time.Duration) {
	want := map[string]bool{}
	for _, d := range k.digs {
		if !d.exists {
			continue
		}
		v, found, err := d.view(ctx)
		if err != nil || !found {
			k.r.violation("DIG %s: %v (found %v)", d.dig(), err, found)
			continue
		}
		if v.State != "Instantiated" {
			continue
		}
		cfg, ok := d.revs[v.ContextID]
		if !ok || cfg.Gen < 0 {
			k.t.Logf("DIG %s: revision %d's configuration is not known to the test: its objects are not checked; its trail:\n%s",
				d.dig(), v.Revision, strings.Join(d.trail, "\n"))
			want["unchecked "+d.label()] = true
			continue
		}
		for _, cl := range cfg.Clusters {
			for _, a := range appNames {
				want[fmt.Sprintf("%s default/%s-%s gen=%d chart=%d", cl, d.label(), a, cfg.Gen, cfg.Chart)] = true
			}
		}
	}
	var last []string
	deadline := time.Now().Add(wait) // the GitOps cluster follows git through Flux
	for {
		got, err := k.labelled(ctx, want)
		if err == nil {
			var missing, extra []string
			for w := range want {
				if !got[w] && !strings.HasPrefix(w, "unchecked ") {
					missing = append(missing, w)
				}
			}
			for g := range got {
				if !want[g] {
					extra = append(extra, g)
				}
			}
			if len(missing)+len(extra) == 0 {
				if !k.probe {
					byCluster := map[string]int{}
					for w := range want {
						if cl, _, _ := strings.Cut(w, " "); cl != "unchecked" {
							byCluster[cl]++
						}
					}
					k.t.Logf("live objects: every cluster holds what the DIGs' final states say (ConfigMaps by cluster: %v)", byCluster)
				}
				return
			}
			slices.Sort(missing)
			slices.Sort(extra)
			last = []string{fmt.Sprintf("missing %v", missing), fmt.Sprintf("extra %v", extra)}
		} else {
			last = []string{err.Error()}
		}
		if time.Now().After(deadline) {
			k.r.violation("live objects differ from the DIGs' final states: %s", strings.Join(last, "; "))
			for _, d := range k.digs {
				if !k.probe && strings.Contains(strings.Join(last, " "), d.label()+"-") {
					k.t.Logf("DIG %s's trail:\n%s", d.dig(), strings.Join(d.trail, "\n"))
				}
			}
			return
		}
		k.r.pause(ctx)
	}
}

// selfTest shows the live objects' check finds a difference on a direct cluster and on the
// agent cluster: it deletes one object of an instantiated DIG from each (on the cluster's
// own API server) and puts a stray chaos ConfigMap on the agent cluster (whether or not a
// DIG is deployed there at the end), and expects exactly those reported, nothing else.
func (k *checker) selfTest(ctx context.Context) {
	clusters := map[string]*devstack.Cluster{}
	for _, lc := range liveClusters() {
		clusters[lc.name] = lc.c
	}
	var deleted []string // as liveObjects names them
	for _, agent := range []bool{false, true} {
		on := func(cl string) bool {
			return (cl == agentCluster) == agent && cl != stack.GitOps.Cluster.Name // Flux would not notice a deletion at once
		}
		found := false
		for _, d := range k.digs {
			v, _, err := d.view(ctx)
			cfg, ok := d.revs[v.ContextID]
			if err != nil || v.State != "Instantiated" || !ok || cfg.Gen < 0 {
				continue
			}
			i := slices.IndexFunc(cfg.Clusters, on)
			if i < 0 {
				continue
			}
			cl := cfg.Clusters[i]
			cs, err := clusters[cl].Clientset()
			if err != nil {
				k.t.Fatal(err)
			}
			name := d.label() + "-" + appNames[0]
			if err := cs.CoreV1().ConfigMaps("default").Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
				k.t.Fatal(err)
			}
			deleted = append(deleted, fmt.Sprintf("%s default/%s gen=%d chart=%d", cl, name, cfg.Gen, cfg.Chart))
			found = true
			break
		}
		if !found {
			k.t.Logf("no instantiated DIG on a cluster of that kind (agent %v) at the end: no deletion probes the check there", agent)
		}
	}
	cs, err := stack.AgentCluster.Clientset()
	if err != nil {
		k.t.Fatal(err)
	}
	stray := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "chaos-probe-" + appNames[0], Namespace: "default",
		Labels: map[string]string{digLabel: "chaos-probe"}}, Data: map[string]string{"gen": "0", "chart": "0"}}
	if _, err := cs.CoreV1().ConfigMaps("default").Create(ctx, stray, metav1.CreateOptions{}); err != nil {
		k.t.Fatal(err)
	}
	extra := []string{agentCluster + " default/" + stray.Name + " gen=0 chart=0"}
	slices.Sort(deleted)
	probe := &checker{t: k.t, r: &run{counts: map[string]int{}}, digs: k.digs, probe: true}
	probe.liveObjects(ctx, 0)
	want := fmt.Sprintf("live objects differ from the DIGs' final states: missing %v; extra %v", deleted, extra)
	if len(probe.r.violations) != 1 || probe.r.violations[0] != want {
		k.t.Errorf("the live objects' check missed objects deleted %v or added %v: %v", deleted, extra, probe.r.violations)
	} else {
		k.t.Logf("the live objects' check found the objects deleted %v and added %v to probe it", deleted, extra)
	}
}

// liveCluster is a cluster the checks read on its own API server, by its name in temco.
type liveCluster struct {
	name string
	c    *devstack.Cluster
}

// liveClusters are the clusters the DIGs place on: the direct ones, the GitOps one (Flux
// applies there) and the agent one (its agent applies there; temco holds no kubeconfig of
// it, the test reads the cluster's own).
func liveClusters() []liveCluster {
	var out []liveCluster
	for _, c := range stack.Clusters {
		out = append(out, liveCluster{c.Name, c})
	}
	return append(out, liveCluster{stack.GitOps.Cluster.Name, stack.GitOps.Cluster}, liveCluster{agentCluster, stack.AgentCluster})
}

// labelled lists the chaos DIGs' ConfigMaps on every cluster (those of DIGs the test does
// not check left out).
func (k *checker) labelled(ctx context.Context, want map[string]bool) (map[string]bool, error) {
	got := map[string]bool{}
	for _, lc := range liveClusters() {
		cs, err := lc.c.Clientset()
		if err != nil {
			return nil, err
		}
		list, err := cs.CoreV1().ConfigMaps("").List(ctx, metav1.ListOptions{LabelSelector: digLabel})
		if err != nil {
			return nil, fmt.Errorf("%s: %w", lc.name, err)
		}
		for _, cm := range list.Items {
			if want["unchecked "+cm.Labels[digLabel]] {
				continue
			}
			got[fmt.Sprintf("%s %s/%s gen=%s chart=%s", lc.name, cm.Namespace, cm.Name, cm.Data["gen"], cm.Data["chart"])] = true
		}
	}
	return got, nil
}

// namespaces: each instantiated logical cloud has its namespace on its clusters, and no
// other cloud of the run has one.
func (k *checker) namespaces(ctx context.Context) {
	if k.clouds == nil {
		return
	}
	want, err := k.clouds.wantNamespaces(ctx)
	if err != nil {
		k.r.violation("logical clouds: %v", err)
		return
	}
	var last string
	deadline := time.Now().Add(2 * time.Minute) // a namespace's deletion takes its controller a while
	for {
		last = ""
		for _, cl := range stack.Clusters[:2] {
			cs, err := cl.Clientset()
			if err != nil {
				last = err.Error()
				break
			}
			list, err := cs.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
			if err != nil {
				last = err.Error()
				break
			}
			got := map[string]bool{}
			for _, ns := range list.Items {
				if strings.HasPrefix(ns.Name, k.clouds.project+"-") {
					got[ns.Name] = true
				}
			}
			for ns := range want {
				if !got[ns] {
					last += fmt.Sprintf(" %s: %s missing;", cl.Name, ns)
				}
			}
			for ns := range got {
				if !want[ns] {
					last += fmt.Sprintf(" %s: %s left;", cl.Name, ns)
				}
			}
		}
		if last == "" {
			return
		}
		if time.Now().After(deadline) {
			k.r.violation("logical clouds' namespaces:%s", last)
			return
		}
		k.r.pause(ctx)
	}
}

// workflows: every operation a client saw accepted ran exactly once, to its end: one
// workflow run per accepted operation of each target, none still running.
func (k *checker) workflows(ctx context.Context, projects []string) {
	tc, err := temporalclient.Dial(temporalclient.Options{HostPort: stack.Temporal.Address(), Logger: quiet{}})
	if err != nil {
		k.r.violation("Temporal: %v", err)
		return
	}
	defer tc.Close()
	var token []byte
	for {
		resp, err := tc.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{NextPageToken: token})
		if err != nil {
			k.r.violation("list workflows: %v", err)
			return
		}
		for _, e := range resp.Executions {
			target, op, ok := splitOpID(e.Execution.WorkflowId)
			if !ok {
				continue
			}
			run := opRun{ID: e.Execution.WorkflowId, Target: target, Op: op, Start: e.StartTime.AsTime(), Status: e.Status}
			if e.CloseTime != nil {
				run.Close = e.CloseTime.AsTime()
			}
			k.ops = append(k.ops, run)
		}
		if token = resp.NextPageToken; len(token) == 0 {
			break
		}
	}
	runs := map[string]int{}
	for _, o := range k.ops {
		runs[o.Target]++
		if o.Status == enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
			k.r.violation("operation %s still runs after the settle", o.ID)
		}
	}
	for _, d := range k.digs {
		target := d.workflowID()
		if n := runs[target]; n < d.workflowOps || n > d.workflowOps+d.unresolved {
			k.r.violation("DIG %s: %d operation workflows ran for %d operations accepted (and %d not known)", d.dig(), n, d.workflowOps, d.unresolved)
			k.t.Logf("DIG %s's trail:\n%s", d.dig(), strings.Join(d.trail, "\n"))
		}
	}
	if k.clouds != nil {
		for name, n := range k.clouds.workflowOps {
			target := "logical-cloud/" + k.clouds.project + "/" + name
			if got := runs[target]; got < n || got > n+k.clouds.unresolved[name] {
				k.r.violation("logical cloud %s: %d operation workflows ran for %d operations accepted", name, got, n)
			}
		}
	}
}

// splitOpID reads "<target's workflow id>/<op>/<context>" for the operations that apply
// or delete (an operation's children have longer ids).
func splitOpID(id string) (target, op string, ok bool) {
	parts := strings.Split(id, "/")
	n := len(parts)
	if n < 4 || !slices.Contains([]string{"instantiate", "update", "rollback", "terminate"}, parts[n-2]) {
		return "", "", false
	}
	target = strings.Join(parts[:n-2], "/")
	if !(strings.HasPrefix(target, "dig/chaos-") && strings.Count(target, "/") == 4 ||
		strings.HasPrefix(target, "logical-cloud/chaos-") && strings.Count(target, "/") == 2) {
		return "", "", false
	}
	return target, parts[n-2], true
}

// applies: no object was applied twice by one operation, beyond the retries a kill during
// it explains: the API servers' audit logs count every server-side apply temco made.
func (k *checker) applies(since time.Time) {
	for _, cl := range stack.Clusters { // not the GitOps cluster: Flux applies there
		perOp := map[string]int{} // "<op run> <object>"
		total := 0
		targets := map[string]string{} // object name → its DIG's workflow id
		for _, d := range k.digs {
			for _, a := range appNames {
				targets[d.label()+"-"+a] = d.workflowID()
			}
		}
		for _, ev := range auditApplies(k.t, filepath.Join(cl.Dir, "audit.log")) {
			target, ok := targets[ev.name]
			if ev.at.Before(since) || !ok {
				continue
			}
			total++
			i := slices.IndexFunc(k.ops, func(o opRun) bool {
				return o.Target == target && !ev.at.Before(o.Start) && (o.Close.IsZero() || !ev.at.After(o.Close))
			})
			if i < 0 {
				k.r.violation("%s: %s applied at %s outside any operation of its DIG", cl.Name, ev.name, ev.at.Format(time.RFC3339Nano))
				continue
			}
			perOp[k.ops[i].ID+" "+ev.name]++
		}
		for key, n := range perOp {
			id := key[:strings.Index(key, " ")]
			o := k.ops[slices.IndexFunc(k.ops, func(o opRun) bool { return o.ID == id })]
			kills := 0
			for _, x := range k.kills {
				if !x.At.Before(o.Start) && !x.At.After(o.Close) {
					kills++
				}
			}
			if n > 1+kills {
				k.r.violation("%s: %s applied %d times with %d kills during the operation", cl.Name, key, n, kills)
			}
		}
		k.t.Logf("%s: %d server-side applies of the chaos DIGs' objects", cl.Name, total)
	}
}

type applyEvent struct {
	name string
	at   time.Time
}

// auditApplies reads the server-side applies (patches with fieldManager=temco that
// succeeded) of ConfigMaps from a kube-apiserver's audit log.
func auditApplies(t *testing.T, path string) []applyEvent {
	f, err := os.Open(path)
	if err != nil {
		t.Errorf("audit log: %v", err)
		return nil
	}
	defer f.Close()
	var out []applyEvent
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var ev struct {
			Verb       string `json:"verb"`
			RequestURI string `json:"requestURI"`
			ObjectRef  struct {
				Resource, Name string
			} `json:"objectRef"`
			ResponseStatus struct {
				Code int `json:"code"`
			} `json:"responseStatus"`
			Received time.Time `json:"requestReceivedTimestamp"`
		}
		if json.Unmarshal(sc.Bytes(), &ev) != nil || ev.Verb != "patch" || ev.ObjectRef.Resource != "configmaps" ||
			!strings.Contains(ev.RequestURI, "fieldManager=temco&") && !strings.HasSuffix(ev.RequestURI, "fieldManager=temco") ||
			ev.ResponseStatus.Code/100 != 2 {
			continue
		}
		out = append(out, applyEvent{name: ev.ObjectRef.Name, at: ev.Received})
	}
	return out
}

// leaks: the witnesses' goroutines and memory after the run are near what they were
// before it, though every other process restarted around them.
func (k *checker) leaks(before, after map[string]usage) {
	for name, b := range before {
		a := after[name]
		k.t.Logf("%s: goroutines %d → %d, RSS %d → %d MiB, workflows cached %d → %d", name, b.Goroutines, a.Goroutines,
			b.RSSKiB>>10, a.RSSKiB>>10, b.Cached, a.Cached)
		// The workflows a worker caches keep their coroutines while they idle (a DIG's and a
		// cloud's entity workflow until they time out): up to perCached each is theirs.
		if extra := a.Goroutines - b.Goroutines - perCached*max(0, a.Cached-b.Cached); extra > b.Goroutines/2+50 {
			k.r.violation("%s: goroutines grew from %d to %d, %d beyond its %d more cached workflows'", name, b.Goroutines,
				a.Goroutines, extra, a.Cached-b.Cached)
		}
		if a.RSSKiB > 2*b.RSSKiB+64<<10 {
			k.r.violation("%s: resident memory grew from %d to %d MiB", name, b.RSSKiB>>10, a.RSSKiB>>10)
		}
	}
}

// perCached is the goroutines a cached workflow may hold (its main coroutine, the ones it
// starts with workflow.Go, and the SDK's for its pending timers and signals).
const perCached = 4

type quiet struct{}

func (quiet) Debug(string, ...any) {}
func (quiet) Info(string, ...any)  {}
func (quiet) Warn(string, ...any)  {}
func (quiet) Error(string, ...any) {}
