package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	temporalclient "go.temporal.io/sdk/client"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/temco/temco/features/drift/flow"
	"github.com/temco/temco/internal/core/lifecycle"
	"github.com/temco/temco/internal/dev/testenv"
)

// BenchmarkDriftCheck (`make bench-drift CLUSTERS=N`): the clusters of BenchmarkScale (N
// namespaces of the stack's three API servers) get a DIG of 3 one-ConfigMap charts with
// drift detection; once instantiated, one drift check is triggered and timed (from the
// check's start to its summary), with the API requests it made per cluster as temco
// counts them and as the API servers count them (apiserver_request_total, LIST and GET
// of configmaps), the worker's CPU and peak RSS. A second check runs with correctDrift
// after a ConfigMap was deleted on every tenth cluster. Then the DIG is terminated.
func BenchmarkDriftCheck(b *testing.B) {
	n := scaleN(100)
	prov := fmt.Sprintf("scale%d", n)
	setup := time.Now()
	importScaleClusters(b, prov, "", scaleClusters(b, prov, n), nil)
	d := &deployment{t: &testing.T{}, c: &client{}, project: fmt.Sprintf("drift%d", n), logicalCloud: "all"}
	for _, a := range []string{"d1", "d2", "d3"} {
		d.apps = append(d.apps, app{name: a, placement: map[string]any{"allOf": []any{map[string]any{"clusterProvider": prov, "clusterLabel": "scale"}}},
			chart: testenv.Chart(a, "", map[string]string{"cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: " + a + "\ndata:\n  k: v\n"})})
	}
	d.setUpCloud = func(d *deployment) {
		lc := "/projects/" + d.project + "/logical-clouds/all"
		mustCode(b, d.c.do("POST", "/projects/"+d.project+"/logical-clouds", res("all", map[string]any{"level": "0"})), 201)
		parallel(b, n, 8, func(i int) error {
			name := "s" + strconv.Itoa(i)
			return created(func() response {
				return d.c.do("POST", lc+"/cluster-references", res(name, map[string]any{"clusterProvider": prov, "cluster": name}))
			})
		})
		mustCode(b, d.c.do("POST", lc+"/instantiate", nil), 202)
		d.awaitCloud("all", lifecycle.StatusInstantiated)
	}
	d.create()
	spec := map[string]any{"compositeProfile": "prof", "version": "r1", "logicalCloud": "all", "driftDetection": map[string]any{"interval": "1h"}}
	mustCode(b, d.c.do("PUT", d.dig(), res("dig", spec)), 200)
	mustCode(b, d.c.do("POST", d.dig()+"/approve", nil), 202)
	tc := dialTemporal(b)
	defer tc.Close()
	operate(b, d, tc, lifecycle.OpInstantiate)
	fmt.Printf("drift: %d clusters, DIG instantiated in %s\n", n, time.Since(setup).Round(time.Second))

	sched := tc.ScheduleClient().GetHandle(context.Background(), flow.ScheduleID(d.ref()))
	worker := stack.Worker.Cmd.Process.Pid
	for run := 1; run <= 2; run++ {
		if run == 2 {
			spec["driftDetection"] = map[string]any{"interval": "1h", "correctDrift": true}
			mustCode(b, d.c.do("PUT", d.dig(), res("dig", spec)), 200)
			sets := scaleClientsets(b)
			parallel(b, n/10, 8, func(k int) error {
				i := 10 * k
				return sets[i%len(sets)].CoreV1().ConfigMaps("s"+strconv.Itoa(i)).Delete(context.Background(), "d1", metav1.DeleteOptions{})
			})
		}
		resetPeak(worker)
		cpu := cpuSeconds(worker)
		before := apiserverRequests(b)
		since := time.Now().UTC()
		if err := sched.Trigger(context.Background(), temporalclient.ScheduleTriggerOptions{}); err != nil {
			b.Fatal(err)
		}
		var v driftBenchView
		for deadline := time.Now().Add(10 * time.Minute); ; time.Sleep(200 * time.Millisecond) {
			r := d.c.do("GET", d.dig()+"/status?output=summary", nil)
			mustCode(b, r, 200)
			v = driftBenchView{}
			_ = json.Unmarshal(r.body, &v)
			if v.Drift != nil && v.Drift.Started.After(since) {
				break
			}
			if time.Now().After(deadline) {
				b.Fatalf("no drift check after 10 min: %s", pretty(v))
			}
		}
		seen := time.Since(since)
		after := apiserverRequests(b)
		dr := v.Drift
		wall := dr.Finished.Sub(dr.Started)
		fmt.Printf("drift: N=%d run %d (correctDrift %v): check %s (trigger to status %s), %d clusters, in sync %d, drifted %d, corrected %d, "+
			"API requests %d (%.2f per cluster; API servers counted %d LIST and %d GET of configmaps, %d PATCH), worker %.1f CPU s, peak RSS %d MiB\n",
			n, run, dr.CorrectDrift, wall.Round(time.Millisecond), seen.Round(time.Millisecond), dr.ClustersChecked, dr.InSync, dr.Drifted, dr.Corrected,
			dr.APIRequests, float64(dr.APIRequests)/float64(max(dr.ClustersChecked, 1)), after["LIST"]-before["LIST"], after["GET"]-before["GET"],
			after["PATCH"]-before["PATCH"], cpuSeconds(worker)-cpu, rssKiB(worker, "VmHWM")>>10)
		b.ReportMetric(wall.Seconds(), fmt.Sprintf("check-s/run%d", run))
		if dr.ClustersChecked != n {
			b.Errorf("checked %d clusters of %d", dr.ClustersChecked, n)
		}
	}
	operate(b, d, tc, lifecycle.OpTerminate)
	for _, child := range []string{"/intents/intents", "/generic-placement-intents/gpi/app-intents/d1-placement",
		"/generic-placement-intents/gpi/app-intents/d2-placement", "/generic-placement-intents/gpi/app-intents/d3-placement",
		"/generic-placement-intents/gpi", ""} {
		mustCode(b, d.c.do("DELETE", d.dig()+child, nil), 204) // the DIG's delete removes its drift schedule
	}
}

type driftBenchView struct {
	Drift *struct {
		Started         time.Time `json:"started"`
		Finished        time.Time `json:"finished"`
		CorrectDrift    bool      `json:"correctDrift"`
		ClustersChecked int       `json:"clustersChecked"`
		InSync          int       `json:"inSync"`
		Drifted         int       `json:"drifted"`
		Corrected       int       `json:"corrected"`
		APIRequests     int       `json:"apiRequests"`
	} `json:"drift"`
}

// apiserverRequests sums apiserver_request_total of configmaps by verb over the stack's
// API servers.
func apiserverRequests(b *testing.B) map[string]int64 {
	out := map[string]int64{}
	for _, cs := range scaleClientsets(b) {
		raw, err := cs.RESTClient().Get().AbsPath("/metrics").DoRaw(context.Background())
		if err != nil {
			b.Fatal(err)
		}
		sc := bufio.NewScanner(strings.NewReader(string(raw)))
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			if !strings.HasPrefix(line, "apiserver_request_total{") || !strings.Contains(line, `resource="configmaps"`) {
				continue
			}
			i := strings.Index(line, `verb="`)
			sp := strings.LastIndexByte(line, ' ')
			if i < 0 || sp < 0 {
				continue
			}
			verb := line[i+6:]
			verb = verb[:strings.IndexByte(verb, '"')]
			v, _ := strconv.ParseFloat(line[sp+1:], 64)
			if verb == "APPLY" {
				verb = "PATCH"
			}
			out[verb] += int64(v)
		}
	}
	return out
}

// scaleClientsets are clients of the stack's API servers, in the order the scale
// clusters are spread over them, unthrottled.
func scaleClientsets(b *testing.B) []*kubernetes.Clientset {
	var out []*kubernetes.Clientset
	for _, cl := range stack.Clusters {
		cfg, err := clientcmd.BuildConfigFromFlags("", cl.Kubeconfig())
		if err != nil {
			b.Fatal(err)
		}
		cfg.QPS, cfg.Burst = 1000, 1000
		cs, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			b.Fatal(err)
		}
		out = append(out, cs)
	}
	return out
}
