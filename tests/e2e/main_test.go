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
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/temco/temco/internal/devstack"
	"github.com/temco/temco/internal/lifecycle"
	"github.com/temco/temco/internal/testenv"
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
	code, err := runSuite(m)
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		os.Exit(1)
	}
	os.Exit(code)
}

func runSuite(m *testing.M) (int, error) {
	root, err := testenv.RepoRoot()
	if err != nil {
		return 0, err
	}
	binDir = filepath.Join(root, ".bin")
	if tmpRoot, err = os.MkdirTemp("", "temco-e2e-"); err != nil {
		return 0, err
	}
	if err := os.Chmod(tmpRoot, 0o755); err != nil { // PostgreSQL runs as its own user
		return 0, err
	}
	defer os.RemoveAll(tmpRoot)
	self = filepath.Join(tmpRoot, "temco")
	build := exec.Command("go", "build", "-o", self, "./cmd/temco")
	build.Dir, build.Stdout, build.Stderr = root, os.Stdout, os.Stderr
	if err := build.Run(); err != nil {
		return 0, fmt.Errorf("build temco: %w", err)
	}
	// GitOps: one more cluster, cluster4, that Flux reconciles from the stack's git server.
	// cert-manager's controller runs against cluster1, ca-certs' issuing cluster.
	cfg := devstack.Config{BinDir: binDir, DataDir: filepath.Join(tmpRoot, "data"), Self: self, Clusters: 3, GitOps: true, CertManager: true,
		Namespace: "default", TaskQueue: "temco", SearchAttributes: lifecycle.SearchAttributeTypes(), Out: os.Stdout,
		// Two clusters per batch, so three clusters fan out through batch child workflows.
		Env: []string{"TEMCO_CLUSTERS_PER_BATCH=2"}, MongoBackend: os.Getenv("TEMCO_E2E_MONGO_BACKEND")}
	if os.Getenv("TEMCO_E2E_CLUSTERS_PER_BATCH") != "" {
		cfg.Env = []string{"TEMCO_CLUSTERS_PER_BATCH=" + os.Getenv("TEMCO_E2E_CLUSTERS_PER_BATCH")}
	}
	for _, p := range []*int{&cfg.TemporalPort, &cfg.UIPort, &cfg.MongoPort, &cfg.APIPort, &cfg.PostgresPort, &cfg.MetricsPort} {
		if *p, err = devstack.FreePort(); err != nil {
			return 0, err
		}
	}
	// The clusters and, after them, the GitOps cluster.
	if cfg.ClusterBasePort, err = devstack.FreeClusterBase(cfg.Clusters + 1); err != nil {
		return 0, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	start := time.Now()
	if stack, err = devstack.Start(ctx, cfg); err != nil {
		return 0, fmt.Errorf("start the stack: %w (logs under %s)", err, cfg.DataDir)
	}
	defer stack.Stop()
	fmt.Printf("e2e: stack up in %s (MongoDB wire backend: %s)\n", time.Since(start).Round(time.Millisecond), cmp.Or(cfg.MongoBackend, "sqlite"))
	apiURL = "http://127.0.0.1:" + strconv.Itoa(cfg.APIPort) + "/v2"
	if err := registerClusters(); err != nil {
		return 0, err
	}
	code := m.Run()
	if code != 0 {
		fmt.Printf("e2e: logs kept in %s\n", cfg.DataDir)
		keep := filepath.Join(os.TempDir(), "temco-e2e-failed-logs")
		_ = os.RemoveAll(keep)
		_ = exec.Command("cp", "-r", filepath.Join(cfg.DataDir, "logs"), keep).Run()
	}
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
