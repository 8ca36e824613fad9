// Package chaos drives many DIGs and logical clouds through random lifecycle sequences
// from concurrent clients while the stack's processes are SIGKILLed at random, then
// checks that nothing was stuck, lost or done twice (docs/chaos.md).
//
// `make test` runs a short seeded run; `make chaos` a longer one, sized by CHAOS_*
// variables. The package starts its own stack, so it runs beside the other test packages.
package chaos

import (
	"cmp"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/temco/temco/internal/core/lifecycle"
	"github.com/temco/temco/internal/dev/devstack"
	"github.com/temco/temco/internal/dev/testenv"
)

const provider = "local"

// The stack's agent cluster, as temco knows it (devstack's agents+edge1): the stack
// registers it with spec.access "agent" and runs its temco agent, which the supervisor
// restarts like any other component.
var agentProvider, agentCluster, _ = strings.Cut(devstack.AgentClusterID(), "+")

// providerOf is the provider cluster name was registered under.
func providerOf(cluster string) string {
	if cluster == agentCluster {
		return agentProvider
	}
	return provider
}

var stack *testenv.Stack

// chaosConfig sizes a run (CHAOS_* variables; the defaults are make test's short run).
type chaosConfig struct {
	Seed        uint64
	Duration    time.Duration // of the kills and the clients' random operations
	Clients     int           // concurrent clients, each with its project
	DIGs        int           // per client
	Clouds      bool          // one more client cycling logical clouds (CHAOS_CLOUDS=false: none)
	KillEvery   time.Duration // mean time between two kills
	MaxDown     time.Duration // a killed component stays down up to this long
	StopPercent int           // of operations a client tries to stop while they run
	Settle      time.Duration // bound for every operation to end once the kills stop
}

func configFromEnv() (chaosConfig, error) {
	c := chaosConfig{Seed: 1, Duration: 90 * time.Second, Clients: 2, DIGs: 2, KillEvery: 8 * time.Second,
		MaxDown: 4 * time.Second, StopPercent: 10, Settle: 5 * time.Minute}
	var err error
	num := func(name string, dst *int) {
		if v := os.Getenv(name); v != "" && err == nil {
			*dst, err = strconv.Atoi(v)
		}
	}
	dur := func(name string, dst *time.Duration) {
		if v := os.Getenv(name); v != "" && err == nil {
			*dst, err = time.ParseDuration(v)
		}
	}
	if v := os.Getenv("CHAOS_SEED"); v != "" {
		c.Seed, err = strconv.ParseUint(v, 10, 64)
	}
	num("CHAOS_CLIENTS", &c.Clients)
	num("CHAOS_DIGS", &c.DIGs)
	num("CHAOS_STOP_PERCENT", &c.StopPercent)
	dur("CHAOS_DURATION", &c.Duration)
	dur("CHAOS_KILL_EVERY", &c.KillEvery)
	dur("CHAOS_MAX_DOWN", &c.MaxDown)
	dur("CHAOS_SETTLE", &c.Settle)
	c.Clouds = os.Getenv("CHAOS_CLOUDS") != "false"
	if err != nil {
		return c, fmt.Errorf("CHAOS_* variables: %w", err)
	}
	return c, nil
}

func TestMain(m *testing.M) {
	flag.Parse()
	if testing.Short() {
		fmt.Println("chaos: skipped in -short mode")
		os.Exit(0)
	}
	// Two api and two worker processes: the first ones are killed, the others are the
	// witnesses whose goroutines and memory must not grow across the others' restarts.
	// Agent: one more cluster that temco reaches only through its temco agent, a process
	// the supervisor restarts when the killer kills it.
	s, err := testenv.StartStack("chaos", devstack.Config{Clusters: 2, GitOps: true, Agent: true, Replicas: 2, AuditApplies: true,
		Namespace: "default", TaskQueue: "temco", SearchAttributes: lifecycle.SearchAttributeTypes(),
		MongoBackend: cmp.Or(os.Getenv("CHAOS_MONGO_BACKEND"), "sqlite")})
	if err != nil {
		fmt.Fprintln(os.Stderr, "chaos:", err)
		os.Exit(1)
	}
	stack = s
	code := m.Run()
	s.Stop(code != 0)
	os.Exit(code)
}
