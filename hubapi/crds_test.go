package hubapi_test

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// The committed definitions and deepcopy functions are what controller-gen makes of the
// Go types now: a change of a type without `make generate` fails here.
func TestGeneratedFilesAreFresh(t *testing.T) {
	root, err := repoRoot()
	if err != nil {
		t.Fatal(err)
	}
	gen := filepath.Join(root, ".bin", "controller-gen")
	if _, err := os.Stat(gen); err != nil {
		if testing.Short() {
			t.Skip("no controller-gen (make tools)")
		}
		t.Fatalf("%v: run make tools", err)
	}
	out := t.TempDir()
	cmd := exec.Command(gen, "crd:crdVersions=v1", "paths=./...", "output:crd:artifacts:config="+out)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("controller-gen: %v\n%s", err, b)
	}
	want, _ := filepath.Glob(filepath.Join(out, "*.yaml"))
	have, _ := filepath.Glob("crds/*.yaml")
	if len(want) != len(have) || len(want) == 0 {
		t.Fatalf("controller-gen makes %d definitions, crds/ holds %d: run make generate", len(want), len(have))
	}
	for _, w := range want {
		a, _ := os.ReadFile(w)
		b, err := os.ReadFile(filepath.Join("crds", filepath.Base(w)))
		if err != nil || !bytes.Equal(a, b) {
			t.Errorf("crds/%s is stale (%v): run make generate", filepath.Base(w), err)
		}
	}
	// The Helm chart ships copies (Helm installs only a chart's own crds/): the same files.
	chart, _ := filepath.Glob(filepath.Join(root, "deploy", "temco", "crds", "*.yaml"))
	if len(chart) != len(have) {
		t.Errorf("deploy/temco/crds holds %d definitions, crds/ %d: run make generate", len(chart), len(have))
	}
	for _, c := range chart {
		a, _ := os.ReadFile(c)
		b, err := os.ReadFile(filepath.Join("crds", filepath.Base(c)))
		if err != nil || !bytes.Equal(a, b) {
			t.Errorf("deploy/temco/crds/%s differs from crds/ (%v): run make generate", filepath.Base(c), err)
		}
	}
	// deepcopy: generated into a copy of the package, compared with the committed file.
	pkg := filepath.Join(t.TempDir(), "v1alpha1")
	if err := os.MkdirAll(pkg, 0o755); err != nil {
		t.Fatal(err)
	}
	srcs, _ := filepath.Glob("v1alpha1/*.go")
	for _, s := range srcs {
		if filepath.Base(s) == "zz_generated.deepcopy.go" {
			continue
		}
		b, _ := os.ReadFile(s)
		if err := os.WriteFile(filepath.Join(pkg, filepath.Base(s)), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cmd = exec.Command(gen, "object", "paths=./v1alpha1", "output:object:dir="+pkg)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("controller-gen object: %v\n%s", err, b)
	}
	a, _ := os.ReadFile(filepath.Join(pkg, "zz_generated.deepcopy.go"))
	b, _ := os.ReadFile("v1alpha1/zz_generated.deepcopy.go")
	if !bytes.Equal(a, b) || len(a) == 0 {
		t.Error("v1alpha1/zz_generated.deepcopy.go is stale: run make generate")
	}
}

// repoRoot is the repository's root above the working directory (the folder holding
// tools/build.sh, which builds .bin): hubapi is a module of its own and imports none of
// temco's.
func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "tools", "build.sh")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("repository root not found above the working directory")
		}
		dir = parent
	}
}
