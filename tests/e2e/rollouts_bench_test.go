package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/temco/temco/internal/core/lifecycle"
	"github.com/temco/temco/internal/dev/testenv"
)

// BenchmarkRolloutFleet (`make bench-rollouts CLUSTERS=N DIGS=M`): N clusters as
// BenchmarkScale makes them (each its own credentials), then two measurements set beside
// KubeFleet's published ones (1,000 member clusters: 100 staged updates at once p90 135 s;
// a placement picking 100 of them p90 20 s):
//
//   - M DIGs (default 100) of a one-ConfigMap chart, each with a three-stage rollout
//     strategy (a canary of 1 % of the clusters, a wave of 10 %, then the rest) over all N,
//     instantiated at once: p50, p90 and p99 of the time from the request to the end of
//     each rollout (every stage applied and Ready);
//   - one DIG placed by label on 10 % of the N clusters, instantiated and terminated 10
//     times: p50 and p90 of the instantiate.
func BenchmarkRolloutFleet(b *testing.B) {
	n, _ := strconv.Atoi(os.Getenv("TEMCO_SCALE_CLUSTERS"))
	if n < 100 {
		n = 1000
	}
	digs, _ := strconv.Atoi(os.Getenv("TEMCO_ROLLOUT_DIGS"))
	if digs <= 0 {
		digs = 100
	}
	prov := fmt.Sprintf("fleet%d", n)
	c := &client{}
	kubeconfigs := scaleClusters(b, prov, n)
	mustCode(b, c.do("POST", "/projects", res(prov, nil)), 201)
	lc := "/projects/" + prov + "/logical-clouds/all"
	mustCode(b, c.do("POST", "/projects/"+prov+"/logical-clouds", res("all", map[string]any{"level": "0"})), 201)
	pick := n / 10
	importScaleClusters(b, prov, prov, kubeconfigs, func(i int) []string {
		if i < pick {
			return []string{"pick"}
		}
		return nil
	})
	mustCode(b, c.do("POST", lc+"/instantiate", nil), 202)
	(&deployment{t: &testing.T{}, c: c, project: prov}).awaitCloud("all", lifecycle.StatusInstantiated)

	// One composite app, a ConfigMap named after the release (the DIG's version), so that
	// the DIGs' objects do not collide on a cluster.
	ca := "/projects/" + prov + "/composite-apps/fleet/v1"
	mustCode(b, c.do("POST", "/projects/"+prov+"/composite-apps", res("fleet", map[string]any{"compositeAppVersion": "v1"})), 201)
	chart := testenv.Chart("cm", "", map[string]string{"cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}\ndata:\n  k: v\n"})
	mustCode(b, c.multipart("POST", ca+"/apps", res("cm", nil), chart), 201)
	mustCode(b, c.do("POST", ca+"/composite-profiles", res("prof", nil)), 201)
	mustCode(b, c.multipart("POST", ca+"/composite-profiles/prof/profiles", res("cm-profile", map[string]any{"app": "cm"}),
		testenv.Profile("k: v\n")), 201)
	names := func(from, to int) []string {
		var out []string
		for i := from; i < to; i++ {
			out = append(out, "s"+strconv.Itoa(i))
		}
		return out
	}
	canary, wave := max(1, n/100), n/10
	// The progress deadline is a safety limit, not what is measured: 100 rollouts at once
	// on two cores outlast its default (10 minutes) before their last stage is Ready.
	stages := []map[string]any{{"name": "canary", "clusters": names(0, canary), "progressDeadline": "2h"},
		{"name": "wave", "clusters": names(canary, canary+wave), "progressDeadline": "2h"}, {"name": "rest", "progressDeadline": "2h"}}
	dig := func(name, label string, rollout bool) string {
		d := ca + "/deployment-intent-groups/" + name
		mustCode(b, c.do("POST", ca+"/deployment-intent-groups", res(name, map[string]any{
			"compositeProfile": "prof", "version": name, "logicalCloud": "all"})), 201)
		mustCode(b, c.do("POST", d+"/generic-placement-intents", res("gpi", nil)), 201)
		mustCode(b, c.do("POST", d+"/generic-placement-intents/gpi/app-intents", res("cm", map[string]any{"app": "cm",
			"intent": map[string]any{"allOf": []any{map[string]any{"clusterProvider": prov, "clusterLabel": label}}}})), 201)
		mustCode(b, c.do("POST", d+"/intents", res("intents", map[string]any{"intent": map[string]string{"genericPlacementIntent": "gpi"}})), 201)
		if rollout {
			mustCode(b, c.do("POST", d+"/rollout-strategies", res("rings", map[string]any{"stages": stages})), 201)
		}
		mustCode(b, c.do("POST", d+"/approve", nil), 202)
		return d
	}
	paths := make([]string, digs)
	parallel(b, digs, 8, func(j int) error { paths[j] = dig("r"+strconv.Itoa(j), "scale", true); return nil })
	one := dig("picked", "pick", false)

	tc := dialTemporal(b)
	defer tc.Close()
	await := func(path, op string) (time.Duration, error) {
		start := time.Now()
		r := c.do("POST", path+"/"+op, nil)
		if err := expect(r, 202); err != nil {
			return 0, err
		}
		var acc lifecycle.OpAccepted
		_ = json.Unmarshal(r.body, &acc)
		if err := tc.GetWorkflow(context.Background(), acc.WorkflowID, "").Get(context.Background(), nil); err != nil {
			return 0, fmt.Errorf("%s %s: %w", op, path, err)
		}
		return time.Since(start), nil
	}

	var mu sync.Mutex
	var took []time.Duration
	start, cpu0, cmds0, reqs0 := time.Now(), cpuByProcess(), storeCommands(b), temporalRequests(b)
	acts0, tasks0 := counters(b, "temporal_activity_execution_latency_count", "activity_type"),
		counters(b, "temporal_workflow_task_execution_latency_count", "workflow_type")
	parallel(b, digs, digs, func(j int) error {
		d, err := await(paths[j], lifecycle.OpInstantiate)
		mu.Lock()
		took = append(took, d)
		mu.Unlock()
		return err
	})
	all := time.Since(start)
	cpu := map[string]time.Duration{}
	cpuDelta(cpu, cpu0, cpuByProcess())
	fmt.Printf("rollouts: N=%dx%d CPU ms by process over the rollouts: %s\n", digs, n, cpuReport(cpu, 1))
	fmt.Printf("rollouts: N=%dx%d store commands per DIG and cluster: %s\n", digs, n, perCluster(cmds0, storeCommands(b), digs*n))
	fmt.Printf("rollouts: N=%dx%d Temporal requests per DIG: %s\n", digs, n, perCluster(reqs0, temporalRequests(b), digs))
	fmt.Printf("rollouts: N=%dx%d activities per DIG: %s\n", digs, n,
		perCluster(acts0, counters(b, "temporal_activity_execution_latency_count", "activity_type"), digs))
	fmt.Printf("rollouts: N=%dx%d workflow tasks per DIG: %s\n", digs, n,
		perCluster(tasks0, counters(b, "temporal_workflow_task_execution_latency_count", "workflow_type"), digs))
	// Issue 66's line: seconds from each request to its rollout's end.
	fmt.Printf("rollouts: N=%dx%d p50 %.1f p90 %.1f p99 %.1f\n", digs, n,
		percentile(took, 50).Seconds(), percentile(took, 90).Seconds(), percentile(took, 99).Seconds())
	for _, p := range paths[:1] { // every stage reached every cluster
		var s status
		r := c.do("GET", p+"/status?output=summary", nil)
		mustCode(b, r, 200)
		_ = json.Unmarshal(r.body, &s)
		if s.RsyncStatus[lifecycle.ResApplied] != n {
			b.Fatalf("%s: %v, want %d objects Applied", p, s.RsyncStatus, n)
		}
	}
	fmt.Printf("rollouts: N=%d %d DIGs with 3-stage rollouts (%d, %d, %d clusters) at once: p50 %s p90 %s p99 %s, all in %s (KubeFleet, 100 staged updates at once over 1,000: p90 135 s)\n",
		n, digs, canary, wave, n-canary-wave, percentile(took, 50), percentile(took, 90), percentile(took, 99), all.Round(time.Second))

	var picked []time.Duration
	for range 10 {
		d, err := await(one, lifecycle.OpInstantiate)
		if err != nil {
			b.Fatal(err)
		}
		picked = append(picked, d)
		if _, err := await(one, lifecycle.OpTerminate); err != nil {
			b.Fatal(err)
		}
	}
	fmt.Printf("rollouts: N=%d one DIG placed by label on %d clusters, 10 instantiates: p50 %s p90 %s (KubeFleet, 100 of 1,000: p90 20 s)\n",
		n, pick, percentile(picked, 50), percentile(picked, 90))
}
