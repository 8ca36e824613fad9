package e2e

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/tools/clientcmd"

	"github.com/temco/temco/activities/cluster"
	"github.com/temco/temco/edgeagent"
	"github.com/temco/temco/internal/core/lifecycle"
	"github.com/temco/temco/internal/dev/testenv"
)

// BenchmarkAgents (`make bench-agents AGENTS=N`): N agent clusters, each a namespace of
// one of the stack's three API servers reached by its own agent, run in this process
// (each with its own credential, and a token confined to its namespace), get the scale
// benchmark's composite app (3 one-ConfigMap charts). It times instantiate and terminate
// through the agents, beside the same on the same namespaces reached with their
// kubeconfigs (the push path) and the raw server-side apply; then the api's, Temporal's
// and the store's CPU while the agents only poll; then the agents offline for
// TEMCO_AGENTS_OFFLINE (10m) across an update, and the time from their return to the
// update's end.
func BenchmarkAgents(b *testing.B) {
	n, _ := strconv.Atoi(os.Getenv("TEMCO_AGENTS"))
	n = max(n, 1)
	offline, err := time.ParseDuration(cmp.Or(os.Getenv("TEMCO_AGENTS_OFFLINE"), "10m"))
	if err != nil {
		b.Fatal(err)
	}
	tc := dialTemporal(b)
	defer tc.Close()

	// The push path first, on its own namespaces' kubeconfigs.
	push, kubeconfigs := scaleDeployment(b, fmt.Sprintf("push%d", n), n)
	start := time.Now()
	operate(b, push, tc, lifecycle.OpInstantiate)
	pushInst := time.Since(start)
	start = time.Now()
	operate(b, push, tc, lifecycle.OpTerminate)
	pushTerm := time.Since(start)
	apply, del := rawScaleApply(b, n, kubeconfigs)

	// The agents, on the same namespaces.
	fleet := &agentFleet{kubeconfigs: kubeconfigs}
	d := agentDeployment(b, fmt.Sprintf("agents%d", n), n, fleet)
	defer fleet.stop()

	cpu0 := cpuByProcess()
	start = time.Now()
	operate(b, d, tc, lifecycle.OpInstantiate)
	inst := time.Since(start)
	instCPU := map[string]time.Duration{}
	cpuDelta(instCPU, cpu0, cpuByProcess())
	fmt.Printf("agents: N=%d instantiate CPU ms by process: %s\n", n, cpuReport(instCPU, 1))

	// Idle: the agents only poll, held at the api (and read their clusters every 5 minutes).
	const window = time.Minute
	idle0 := cpuByProcess()
	time.Sleep(window) // the window measured, not a wait for a state
	idle := map[string]time.Duration{}
	cpuDelta(idle, idle0, cpuByProcess())
	per := func(names ...string) float64 {
		var sum time.Duration
		for _, name := range names {
			sum += idle[name]
		}
		return float64(sum.Milliseconds()) / float64(n) / window.Minutes()
	}
	fmt.Printf("agents: N=%d idle CPU ms per agent per minute: api %.2f temporal %.2f store %.2f (all: %s)\n",
		n, per("temco api"), per("temporal", "temporal-server"), per("ferretdb", "postgres"), cpuReport(idle, int(window/time.Second)))

	// Offline across an update: the update waits (the default offline policy), and ends
	// once the agents are back.
	fleet.stop()
	d.c.multipart("PUT", d.ca()+"/apps/a1", res("a1", nil), testenv.Chart("a1", "",
		map[string]string{"cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a1\ndata:\n  k: updated\n"}))
	r := d.c.do("POST", d.dig()+"/update", nil)
	mustCode(b, r, 202)
	var acc lifecycle.OpAccepted
	_ = json.Unmarshal(r.body, &acc)
	time.Sleep(offline) // the agents' time offline: the scenario, not a wait for a state
	back := time.Now()
	fleet.start(b)
	if err := tc.GetWorkflow(context.Background(), acc.WorkflowID, "").Get(context.Background(), nil); err != nil {
		b.Fatalf("update: %v", err)
	}
	converged := time.Since(back)

	start = time.Now()
	operate(b, d, tc, lifecycle.OpTerminate)
	term := time.Since(start)
	fmt.Printf("agents: N=%d offline %s: the update converged %s after the agents returned\n", n, offline, converged.Round(time.Millisecond))
	fmt.Printf("agents: N=%d instantiate %s terminate %s; push path instantiate %s terminate %s; raw apply %s delete %s\n", n,
		inst.Round(time.Millisecond), term.Round(time.Millisecond), pushInst.Round(time.Millisecond), pushTerm.Round(time.Millisecond),
		apply.Round(time.Millisecond), del.Round(time.Millisecond))
	fmt.Printf("agents: N=%d ratio to the raw apply instantiate %.2f terminate %.2f (push path %.2f %.2f)\n", n,
		inst.Seconds()/apply.Seconds(), term.Seconds()/del.Seconds(), pushInst.Seconds()/apply.Seconds(), pushTerm.Seconds()/del.Seconds())
}

// agentDeployment registers prov's n agent clusters s0..s<n-1> (no kubeconfig) in a
// logical cloud "all" of project prov, joins each agent and starts the fleet (the cloud's
// set-up waits for the agents too), then creates and approves the benchmark's DIG.
func agentDeployment(b *testing.B, prov string, n int, fleet *agentFleet) *deployment {
	c := &client{}
	mustCode(b, c.do("POST", "/cluster-providers", res(prov, nil)), 201)
	d := &deployment{t: &testing.T{}, c: c, project: prov, logicalCloud: "all"}
	for _, a := range []string{"a1", "a2", "a3"} {
		d.apps = append(d.apps, app{name: a, placement: map[string]any{"allOf": []any{map[string]any{"clusterProvider": prov, "clusterLabel": "scale"}}},
			chart: testenv.Chart(a, "", map[string]string{"cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: " + a + "\ndata:\n  k: v\n"})})
	}
	d.setUpCloud = func(d *deployment) {
		mustCode(b, c.do("POST", "/projects/"+prov+"/logical-clouds", res("all", map[string]any{"level": "0"})), 201)
		imports := (n + scaleImport - 1) / scaleImport
		parallel(b, imports, 2, func(k int) error {
			var clusters []map[string]any
			for i := k * scaleImport; i < min(n, (k+1)*scaleImport); i++ {
				clusters = append(clusters, map[string]any{"metadata": map[string]any{"name": "s" + strconv.Itoa(i)},
					"spec": map[string]any{"access": "agent"}, "labels": []string{"scale"},
					"logicalClouds": []map[string]string{{"project": prov, "logicalCloud": "all"}}})
			}
			return created(func() response {
				return c.do("POST", "/cluster-providers/"+prov+"/cluster-imports", map[string]any{"clusters": clusters})
			})
		})
		fleet.creds = make([]string, n)
		start := time.Now()
		parallel(b, n, 16, func(i int) error {
			var tok struct{ Token string }
			r := c.do("POST", "/cluster-providers/"+prov+"/clusters/s"+strconv.Itoa(i)+"/agent-token", nil)
			if err := expect(r, 201); err != nil {
				return err
			}
			_ = json.Unmarshal(r.body, &tok)
			j, err := edgeagent.Join(context.Background(), strings.TrimSuffix(apiURL, "/v2"), tok.Token, http.DefaultClient)
			fleet.creds[i] = j.Credential
			return err
		})
		fmt.Printf("agents: N=%d join tokens issued and exchanged in %s\n", n, time.Since(start).Round(time.Millisecond))
		fleet.start(b)
		mustCode(b, c.do("POST", "/projects/"+prov+"/logical-clouds/all/instantiate", nil), 202)
		d.awaitCloud("all", lifecycle.StatusInstantiated)
	}
	d.create()
	return d
}

// agentFleet runs the agents of one benchmark in this process.
type agentFleet struct {
	creds       []string
	kubeconfigs [][]byte
	locals      cluster.Locals
	cancel      context.CancelFunc
	wg          sync.WaitGroup
}

func (f *agentFleet) start(b *testing.B) {
	ctx, cancel := context.WithCancel(context.Background())
	f.cancel = cancel
	// An idle connection per agent, as each agent in its own process would keep its own.
	hc := &http.Client{Timeout: 2 * time.Minute, Transport: &http.Transport{MaxIdleConnsPerHost: len(f.creds) + 16}}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	for i, cred := range f.creds {
		cfg, err := clientcmd.RESTConfigFromKubeConfig(f.kubeconfigs[i])
		if err != nil {
			b.Fatal(err)
		}
		a := &edgeagent.Agent{API: &edgeagent.API{Base: strings.TrimSuffix(apiURL, "/v2"), Credential: cred, HTTP: hc},
			Local: f.locals.New("agent", cfg, "s"+strconv.Itoa(i)), Log: quiet}
		f.wg.Go(func() { _ = a.Run(ctx) })
	}
}

func (f *agentFleet) stop() {
	if f.cancel != nil {
		f.cancel()
		f.wg.Wait()
		f.cancel = nil
	}
}
