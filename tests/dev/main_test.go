// Package dev tests `temco dev`, the local stack as an operator starts it: stopped by
// SIGINT with nothing left behind, its data reused, a taken port refused. It runs its own
// stacks, so it runs beside the other test packages (it was part of tests/e2e, whose
// time is the suite's).
package dev

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/temco/temco/internal/dev/testenv"
)

var (
	binDir  string // the built tools (.bin)
	tmpRoot string // the temco binary and the stacks' data
)

func TestMain(m *testing.M) {
	flag.Parse()
	if testing.Short() {
		fmt.Println("dev: skipped in -short mode")
		os.Exit(0)
	}
	os.Exit(run(m))
}

func run(m *testing.M) int {
	var err error
	if binDir, err = testenv.BinDir(); err != nil {
		fmt.Fprintln(os.Stderr, "dev:", err)
		return 1
	}
	root, err := testenv.RepoRoot()
	if err != nil {
		fmt.Fprintln(os.Stderr, "dev:", err)
		return 1
	}
	if tmpRoot, err = os.MkdirTemp("", "temco-dev-"); err != nil {
		fmt.Fprintln(os.Stderr, "dev:", err)
		return 1
	}
	defer os.RemoveAll(tmpRoot)
	build := exec.Command("go", "build", "-o", filepath.Join(tmpRoot, "temco"), "./cmd/temco")
	build.Dir, build.Stdout, build.Stderr = root, os.Stdout, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "dev: build temco:", err)
		return 1
	}
	return m.Run()
}
