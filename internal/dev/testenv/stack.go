package testenv

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	"github.com/temco/temco/internal/dev/devstack"
)

// Stack is a whole local stack for one test package: a temco binary built from the
// working tree, and devstack started with it on free ports.
type Stack struct {
	*devstack.Stack
	API  string // the REST API's base URL, ".../v2"
	Dir  string // a temporary folder of the stack's, removed by Stop: the binary, the data
	name string
}

// StartStack builds temco and starts a stack configured as cfg says, on free ports (the
// caller sets what its tests need: clusters, GitOps, environment). name labels the
// messages and the logs kept on failure.
func StartStack(name string, cfg devstack.Config) (*Stack, error) {
	root, err := RepoRoot()
	if err != nil {
		return nil, err
	}
	tmp, err := os.MkdirTemp("", "temco-"+name+"-")
	if err != nil {
		return nil, err
	}
	if err := os.Chmod(tmp, 0o755); err != nil { // PostgreSQL runs as its own user
		return nil, err
	}
	s := &Stack{name: name, Dir: tmp}
	fail := func(err error) (*Stack, error) { _ = os.RemoveAll(tmp); return nil, err }
	cfg.Self = filepath.Join(tmp, "temco")
	build := exec.Command("go", "build", "-o", cfg.Self, "./cmd/temco")
	build.Dir, build.Stdout, build.Stderr = root, os.Stdout, os.Stderr
	if err := build.Run(); err != nil {
		return fail(fmt.Errorf("build temco: %w", err))
	}
	cfg.BinDir, cfg.Out = filepath.Join(root, ".bin"), os.Stdout
	// A second try, on other ports, when the first fails: the ports are free when chosen,
	// but the stacks of test packages run at once, and any outgoing connection may take
	// one of the ephemeral range before its server binds it.
	start := time.Now()
	for try := 1; ; try++ {
		cfg.DataDir = filepath.Join(tmp, "data"+strconv.Itoa(try))
		if s.Stack, err = startOnFreePorts(cfg); err == nil {
			break
		}
		if try == 2 {
			return nil, fmt.Errorf("start the stack: %w (logs under %s)", err, cfg.DataDir)
		}
		fmt.Printf("%s: start the stack: %v (logs under %s); starting it again on other ports\n", name, err, cfg.DataDir)
	}
	fmt.Printf("%s: stack up in %s\n", name, time.Since(start).Round(time.Millisecond))
	s.API = "http://127.0.0.1:" + strconv.Itoa(s.Stack.APIPort()) + "/v2"
	return s, nil
}

// startOnFreePorts starts devstack on ports free at the time.
func startOnFreePorts(cfg devstack.Config) (*devstack.Stack, error) {
	var err error
	for _, p := range []*int{&cfg.TemporalPort, &cfg.UIPort, &cfg.MongoPort, &cfg.APIPort, &cfg.PostgresPort, &cfg.MetricsPort} {
		if *p, err = devstack.FreePort(); err != nil {
			return nil, err
		}
	}
	clusters := cfg.Clusters
	if cfg.GitOps { // the GitOps cluster comes after the others
		clusters++
	}
	if cfg.ClusterBasePort, err = devstack.FreeClusterBase(clusters); err != nil {
		return nil, err
	}
	// Its clusters may wait for start slots other stacks hold (devstack's startGate): the
	// bound is for a stack that never comes up, not a slow one.
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	return devstack.Start(ctx, cfg)
}

// Stop stops the stack and removes its files; after failed tests it first copies the
// logs to a folder of the temporary directory named after the stack, and says where.
func (s *Stack) Stop(failed bool) {
	s.Stack.Stop()
	if failed {
		keep := filepath.Join(os.TempDir(), "temco-"+s.name+"-failed-logs")
		_ = os.RemoveAll(keep)
		_ = exec.Command("cp", "-r", filepath.Join(s.DataDir(), "logs"), keep).Run()
		// The clusters' own logs too (kube-apiserver, controller-manager, kwok, Flux): what a
		// cluster did is half of why an apply or a delete did not end.
		clusters := s.Clusters
		if s.GitOps != nil { // Flux's logs are there
			clusters = append(slices.Clone(clusters), s.GitOps.Cluster)
		}
		for _, c := range clusters {
			logs, _ := filepath.Glob(filepath.Join(c.Dir, "*.log"))
			if dir := filepath.Join(keep, "clusters", c.Name); len(logs) > 0 && os.MkdirAll(dir, 0o755) == nil {
				_ = exec.Command("cp", append(logs, dir)...).Run()
			}
		}
		fmt.Printf("%s: logs copied to %s\n", s.name, keep)
	}
	_ = os.RemoveAll(s.Dir)
}

// Self is the temco binary the stack runs.
func (s *Stack) Self() string { return filepath.Join(s.Dir, "temco") }
