// Package wildcharts proves that temco deploys public Helm charts as they are published —
// popular charts taken from the Go modules that ship them (tools/charts, copied into
// .bin/charts by `make tools`), not charts written for temco: each is uploaded as an app,
// instantiated on a real local cluster and ends either with every object Applied
// (warnings allowed: fields the cluster's schema does not declare, dropped) or failed with
// a clear, permanent reason on every failed object — never Retrying without end — and its
// terminate leaves nothing of it on the cluster. The outcome of each chart is pinned in a
// table (charts_test.go), so a change in what temco makes of a real chart is caught; the
// results are recorded in BENCHMARKS.md ("Charts in the wild").
//
// The package starts its own local stack (two clusters, no GitOps cluster), so it runs
// beside the other test packages under `go test ./...`.
package wildcharts

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/temco/temco/internal/core/lifecycle"
	"github.com/temco/temco/internal/dev/devstack"
	"github.com/temco/temco/internal/dev/testenv"
)

var (
	stack   *devstack.Stack
	apiURL  string
	repo    string // the repository root
	chartsD string // .bin/charts
)

const (
	provider = "local"
	project  = "wild"
)

func TestMain(m *testing.M) {
	flag.Parse()
	if testing.Short() {
		fmt.Println("wildcharts: skipped in -short mode")
		os.Exit(0)
	}
	code, err := run(m)
	if err != nil {
		fmt.Fprintln(os.Stderr, "wildcharts:", err)
		os.Exit(1)
	}
	os.Exit(code)
}

func run(m *testing.M) (int, error) {
	var err error
	if repo, err = testenv.RepoRoot(); err != nil {
		return 0, err
	}
	chartsD = filepath.Join(repo, ".bin", "charts")
	if _, err := os.Stat(chartsD); err != nil {
		return 0, fmt.Errorf("%v: run `make tools` (tools/build.sh charts)", err)
	}
	s, err := testenv.StartStack("wildcharts", devstack.Config{Clusters: 2,
		Namespace: "default", TaskQueue: "temco", SearchAttributes: lifecycle.SearchAttributeTypes()})
	if err != nil {
		return 0, err
	}
	stack, apiURL = s.Stack, s.API
	code := 1
	defer func() { s.Stop(code != 0) }()
	if err := setUp(); err != nil {
		return 0, err
	}
	code = m.Run()
	return code, nil
}

// setUp registers the stack's clusters and makes project "wild" with an admin logical
// cloud "default" (namespace default) over both.
func setUp() error {
	c := &client{}
	if r := c.do("POST", "/cluster-providers", res(provider, nil)); r.code != 201 {
		return fmt.Errorf("create provider: %d %s", r.code, r.body)
	}
	for _, cl := range stack.Clusters {
		kc, err := os.ReadFile(cl.Kubeconfig())
		if err != nil {
			return err
		}
		if r := c.multipart("POST", "/cluster-providers/"+provider+"/clusters", res(cl.Name, nil), kc); r.code != 201 {
			return fmt.Errorf("register %s: %d %s", cl.Name, r.code, r.body)
		}
	}
	if r := c.do("POST", "/projects", res(project, nil)); r.code != 201 {
		return fmt.Errorf("create project: %d %s", r.code, r.body)
	}
	lc := "/projects/" + project + "/logical-clouds/default"
	if r := c.do("POST", "/projects/"+project+"/logical-clouds", res("default", map[string]any{"level": "0"})); r.code != 201 {
		return fmt.Errorf("create logical cloud: %d %s", r.code, r.body)
	}
	for _, cl := range stack.Clusters {
		ref := res(cl.Name, map[string]any{"clusterProvider": provider, "cluster": cl.Name})
		if r := c.do("POST", lc+"/cluster-references", ref); r.code != 201 {
			return fmt.Errorf("reference %s: %d %s", cl.Name, r.code, r.body)
		}
	}
	if r := c.do("POST", lc+"/instantiate", nil); r.code != 202 {
		return fmt.Errorf("instantiate the logical cloud: %d %s", r.code, r.body)
	}
	deadline := time.Now().Add(2 * time.Minute)
	for {
		var s status
		r := c.do("GET", lc+"/status?status=deployed&output=summary", nil)
		if r.code == 200 && r.decode(&s) == nil && s.DeployedStatus == lifecycle.StatusInstantiated {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("logical cloud not instantiated: %d %s", r.code, r.body)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
