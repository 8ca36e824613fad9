package chaos

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.temporal.io/api/workflowservice/v1"
	temporalclient "go.temporal.io/sdk/client"

	"github.com/temco/temco/internal/dev/devstack"
)

// run is one chaos run: its configuration, what it saw and what it found wrong.
type run struct {
	cfg      chaosConfig
	clusters []string // placement's choices: the direct clusters, the GitOps one, the agent one last
	sv       *devstack.Supervisor
	tc       temporalclient.Client

	mu         sync.Mutex
	violations []string
	counts     map[string]int
	// agentOps counts the operations that ended (and the stops sent) whose revision before
	// or after placed apps on the agent cluster: the run's proof that the agent path ran.
	agentOps map[string]int
}

func (r *run) violation(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.violations = append(r.violations, fmt.Sprintf(format, args...))
}

func (r *run) count(what string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.counts[what]++
}

func (r *run) countAgent(what string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.agentOps[what]++
}

// pause is the wait between two tries while a component is down.
func (r *run) pause(ctx context.Context) {
	select {
	case <-ctx.Done():
	case <-time.After(500 * time.Millisecond):
	}
}

// startedLate reports whether an operation whose request got no answer was handed to
// Temporal all the same (the api died after starting its workflow, or Temporal before
// running it): once every component is up again, the workflow shows in Temporal's list,
// though it may not have recorded anything yet.
func (r *run) startedLate(ctx context.Context, prefix string, since time.Time) (bool, error) {
	up, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	if err := r.sv.WaitUp(up); err != nil {
		return false, err
	}
	deadline := time.Now().Add(15 * time.Second) // for Temporal's list to catch up
	query := "StartTime >= '" + since.Add(-time.Second).UTC().Format(time.RFC3339) + "'"
	for {
		var token []byte
		for {
			resp, err := r.tc.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Query: query, NextPageToken: token})
			if err != nil {
				break // Temporal is restarting: ask again
			}
			for _, e := range resp.Executions {
				if strings.HasPrefix(e.Execution.WorkflowId, prefix) {
					return true, nil
				}
			}
			if token = resp.NextPageToken; len(token) == 0 {
				break
			}
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return false, ctx.Err()
		}
		r.pause(ctx)
	}
}

// The components the killer picks from (the second api and worker are never killed: they
// are the witnesses of the leak check). temco agent is the agent cluster's agent.
var killTargets = []string{"temco worker", "temco api", "temporal", "ferretdb", "cluster2/kube-apiserver", "git server", "temco agent"}

// kill is one kill the killer made.
type kill struct {
	Component string
	At        time.Time
	Down      time.Duration
}

// killer SIGKILLs a random component every so often (exponentially distributed, mean
// KillEvery) until ctx ends; the supervisor restarts each after its down time. It draws
// the components from a shuffled bag of all of them, refilled when empty, so that every
// len(killTargets) kills hit each one once: the short run kills every component.
func killer(ctx context.Context, t *testing.T, sv *devstack.Supervisor, cfg chaosConfig, rnd *rand.Rand) []kill {
	var kills []kill
	var bag []string
	for {
		wait := time.Duration(rnd.ExpFloat64() * float64(cfg.KillEvery))
		select {
		case <-ctx.Done():
			return kills
		case <-time.After(wait):
		}
		if len(bag) == 0 {
			bag = slices.Clone(killTargets)
			rnd.Shuffle(len(bag), func(i, j int) { bag[i], bag[j] = bag[j], bag[i] })
		}
		k := kill{Component: bag[0], At: time.Now(), Down: time.Duration(rnd.Int64N(int64(cfg.MaxDown) + 1))}
		if err := sv.Kill(k.Component, k.Down); err != nil {
			// Still coming back from the kill before: it stays in the bag, behind another.
			if n := len(bag); n > 1 {
				i := 1 + rnd.IntN(n-1)
				bag[0], bag[i] = bag[i], bag[0]
			}
			continue
		}
		bag = bag[1:]
		kills = append(kills, k)
	}
}

func TestChaos(t *testing.T) {
	cfg, err := configFromEnv()
	if err != nil {
		t.Fatal(err)
	}
	r := &run{cfg: cfg, counts: map[string]int{}, agentOps: map[string]int{}}
	apis := []string{stack.API}
	for _, p := range stack.APIPorts {
		apis = append(apis, "http://127.0.0.1:"+strconv.Itoa(p)+"/v2")
	}
	j := &journal{}
	setup := newClient(apis, j, 0)
	projects := []string{}
	for i := range cfg.Clients {
		projects = append(projects, "chaos-c"+strconv.Itoa(i))
	}
	if cfg.Clouds {
		projects = append(projects, "chaos-lc")
	}
	r.clusters = register(t, setup, projects)

	// The actors, each with its own seeded randomness: the same seed makes the same choices.
	var digs []*digActor
	for i := range cfg.Clients {
		for k := range cfg.DIGs {
			digs = append(digs, &digActor{r: r, c: newClient(apis, j, i+k), rnd: rand.New(rand.NewPCG(cfg.Seed, uint64(100*i+k))),
				project: projects[i], id: "d" + strconv.Itoa(k), rollout: k%2 == 1, revs: map[string]config{}})
		}
	}
	ctx := context.Background()
	for _, d := range digs {
		if err := d.setUp(ctx); err != nil {
			t.Fatal(err)
		}
	}
	var clouds *cloudActor
	if cfg.Clouds {
		clouds = &cloudActor{r: r, c: newClient(apis, j, 7), rnd: rand.New(rand.NewPCG(cfg.Seed, 999)), project: "chaos-lc", live: map[string]bool{},
			workflowOps: map[string]int{}, unresolved: map[string]int{}, removing: map[string]bool{}}
	}
	before := witnesses(t)

	sv := stack.Supervise(ctx, os.Stdout)
	r.sv = sv
	if r.tc, err = temporalclient.Dial(temporalclient.Options{HostPort: stack.Temporal.Address(), Logger: quiet{}}); err != nil {
		t.Fatal(err)
	}
	defer r.tc.Close()
	for _, name := range killTargets {
		if !slices.Contains(sv.Components(), name) {
			t.Fatalf("the supervisor has no component %q: %v", name, sv.Components())
		}
	}
	start := time.Now()
	chaos, stopChaos := context.WithTimeout(ctx, cfg.Duration)
	defer stopChaos()
	var kills []kill
	var wg sync.WaitGroup
	wg.Go(func() { kills = killer(chaos, t, sv, cfg, rand.New(rand.NewPCG(cfg.Seed, 0))) })
	// Each client works through its DIGs in turn, one request at a time.
	for i := range cfg.Clients {
		mine := digs[i*cfg.DIGs : (i+1)*cfg.DIGs]
		wg.Go(func() {
			for n := 0; chaos.Err() == nil; n++ {
				if err := mine[n%len(mine)].step(chaos); err != nil && chaos.Err() == nil {
					t.Errorf("client %d: %v", i, err)
					return
				}
			}
		})
	}
	if clouds != nil {
		wg.Go(func() {
			for chaos.Err() == nil {
				if err := clouds.step(chaos); err != nil && chaos.Err() == nil {
					t.Errorf("logical clouds: %v", err)
					return
				}
			}
		})
	}
	wg.Wait()
	t.Logf("chaos: %s of operations and %d kills; settling", time.Since(start).Round(time.Second), len(kills))

	// Every component back, then every operation ended within the bound.
	// 5 minutes: a kube-apiserver restarted while make test loads the machine may fail its
	// RBAC bootstrap and need the supervisor's second restart (90 s each); slow is not lost.
	up, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	if err := sv.WaitUp(up); err != nil {
		t.Fatalf("the stack did not come back after the kills: %v", err)
	}
	settle, cancelSettle := context.WithTimeout(ctx, cfg.Settle)
	defer cancelSettle()
	for _, d := range digs { // each on its own: one stuck must not hold the others' bound
		wg.Go(func() {
			if err := d.settle(settle); err != nil {
				r.violation("stuck: %v", err)
			}
		})
	}
	if clouds != nil {
		wg.Go(func() {
			for name := range clouds.live {
				if err := clouds.settle(settle, name); err != nil {
					r.violation("stuck: %v", err)
				}
			}
		})
	}
	wg.Wait()

	check := &checker{t: t, r: r, c: setup, digs: digs, clouds: clouds, kills: kills}
	check.restarts(sv)
	check.liveObjects(ctx, 3*time.Minute)
	check.namespaces(ctx)
	check.workflows(ctx, projects)
	check.applies(start)
	check.leaks(before, witnesses(t))
	check.selfTest(ctx)

	byComponent := map[string]int{}
	for _, k := range kills {
		byComponent[k.Component]++
	}
	ops := 0
	for k, n := range r.counts {
		if !strings.HasPrefix(k, "refused") {
			ops += n
		}
	}
	fmt.Printf("chaos: seed=%d duration=%s clients=%d digs=%d operations=%d %v on the agent cluster %v kills=%d %v answers=%v violations=%d\n",
		cfg.Seed, cfg.Duration, cfg.Clients, len(digs), ops, r.counts, r.agentOps, len(kills), byComponent, j.codes, len(r.violations))
	for _, f := range j.five {
		t.Logf("5xx: %s", f)
	}
	for _, v := range r.violations {
		t.Errorf("violation: %s", v)
	}
	if ops == 0 || len(kills) == 0 {
		t.Errorf("the run did nothing: %d operations, %d kills", ops, len(kills))
	}
	if len(r.agentOps) == 0 {
		t.Errorf("no operation of the run placed anything on the agent cluster %s", devstack.AgentClusterID())
	}
}
