// Package e2e drives temco end to end on the real local stack — the Temporal dev
// server, FerretDB, local Kubernetes clusters, and the temco api and worker processes —
// through the REST API, as an operator would.
package e2e

import (
	"cmp"
	"context"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/temco/temco/internal/core/appctx"
	"github.com/temco/temco/internal/core/lifecycle"
	"github.com/temco/temco/internal/core/store"
	"github.com/temco/temco/internal/dev/devstack"
	"github.com/temco/temco/internal/dev/testenv"
)

var (
	stack   *devstack.Stack
	apiURL  string
	binDir  string
	tmpRoot string
	self    string // the temco binary under test
)

// Clusters of the shared stack: cluster1 and cluster2 carry label "edge", cluster3 "core".
const provider = "local"

func TestMain(m *testing.M) {
	flag.Parse()
	if testing.Short() {
		fmt.Println("e2e: skipped in -short mode")
		os.Exit(0)
	}
	if f := flag.Lookup("test.list"); f != nil && f.Value.String() != "" {
		os.Exit(m.Run()) // tests/run.sh lists the tests to shard them: no stack for that
	}
	code, err := runSuite(m)
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		os.Exit(1)
	}
	os.Exit(code)
}

func runSuite(m *testing.M) (int, error) {
	bin, err := testenv.BinDir()
	if err != nil {
		return 0, err
	}
	binDir = bin
	// GitOps: one more cluster, cluster4, that Flux reconciles from the stack's git server.
	// cert-manager's controller runs against cluster1, ca-certs' issuing cluster.
	// AuditApplies: the clusters' API servers log every patch of a ConfigMap, so that a
	// test counts the server-side applies of each object (agent_restart_test.go).
	cfg := devstack.Config{Clusters: 3, GitOps: true, CertManager: true, AuditApplies: true,
		Namespace: "default", TaskQueue: "temco", SearchAttributes: lifecycle.SearchAttributeTypes(),
		// Two clusters per batch, so three clusters fan out through batch child workflows.
		// Clusters probed every 10 s, so TestClusterProbes sees a change well within its
		// minute: every 2 s was load the tests did not need.
		Env: []string{"TEMCO_CLUSTERS_PER_BATCH=2", "TEMCO_CLUSTER_PROBE_INTERVAL=10s"},
		// FerretDB on PostgreSQL, the production backend: on SQLite FerretDB reads and decodes
		// a whole collection (chart blobs included) for every filter but {_id}, and the
		// collections grow with each test. Measured 2026-11-30, the first 26 tests of a
		// shard alone: SQLite 572 s and 841 CPU s (FerretDB 189), PostgreSQL 407 s and 435
		// CPU s (FerretDB 32, PostgreSQL 11). SQLite stays tested by the other stacks.
		MongoBackend: cmp.Or(os.Getenv("TEMCO_E2E_MONGO_BACKEND"), "postgresql")}
	if os.Getenv("TEMCO_E2E_CLUSTERS_PER_BATCH") != "" { // the benchmarks: what they time alone, no probes
		cfg.Env = []string{"TEMCO_CLUSTERS_PER_BATCH=" + os.Getenv("TEMCO_E2E_CLUSTERS_PER_BATCH"), "TEMCO_CLUSTER_PROBE_INTERVAL=0"}
		cfg.AuditApplies = false // nor an audit log written as they apply
	}
	// The scale benchmark on a production Temporal (PostgreSQL, several history shards),
	// with more than one api and worker.
	cfg.TemporalBackend = os.Getenv("TEMCO_E2E_TEMPORAL_BACKEND")
	cfg.Replicas, _ = strconv.Atoi(os.Getenv("TEMCO_E2E_REPLICAS"))
	fmt.Printf("e2e: MongoDB wire backend %s, Temporal %s, %d api and worker processes\n", cfg.MongoBackend,
		cmp.Or(cfg.TemporalBackend, "dev server"), max(1, cfg.Replicas))
	// tests/run.sh runs the package in shards, each with its stack (and its logs' folder).
	s, err := testenv.StartStack(strings.TrimSuffix("e2e-"+os.Getenv("TEMCO_E2E_SHARD"), "-"), cfg)
	if err != nil {
		return 0, err
	}
	stack, apiURL, tmpRoot, self = s.Stack, s.API, s.Dir, s.Self()
	code := 1
	defer func() { s.Stop(code != 0) }()
	if err := registerClusters(); err != nil {
		return 0, err
	}
	code = m.Run()
	return code, nil
}

// registerClusters onboards the stack's clusters, as an operator does with curl.
func registerClusters() error {
	c := &client{}
	if r := c.do("POST", "/cluster-providers", res(provider, nil)); r.code != 201 {
		return fmt.Errorf("create provider: %d %s", r.code, r.body)
	}
	labels := []string{"edge", "edge", "core"}
	for i, cl := range stack.Clusters {
		kc, err := os.ReadFile(cl.Kubeconfig())
		if err != nil {
			return err
		}
		if r := c.multipart("POST", "/cluster-providers/"+provider+"/clusters", res(cl.Name, nil), kc); r.code != 201 {
			return fmt.Errorf("register %s: %d %s", cl.Name, r.code, r.body)
		}
		if r := c.do("POST", "/cluster-providers/"+provider+"/clusters/"+cl.Name+"/labels", map[string]string{"clusterLabel": labels[i]}); r.code != 201 {
			return fmt.Errorf("label %s: %d %s", cl.Name, r.code, r.body)
		}
	}
	return nil
}

// openStore opens the stack's store as the worker and the api do, for a test that reads or
// writes what they keep; it is closed when the test ends.
func openStore(t *testing.T) (*store.Store, *appctx.Store) {
	t.Helper()
	ctx := context.Background()
	st, mc, err := store.Open(ctx, stack.Mongo.URI(), "temco")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = mc.Disconnect(context.Background()) })
	contexts, err := appctx.New(ctx, st.Database())
	if err != nil {
		t.Fatal(err)
	}
	return st, contexts
}
