package hubapi_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/temco/temco/internal/dev/testenv"
)

// The committed definitions and deepcopy functions are what controller-gen makes of the
// Go types now: a change of a type without `make generate` fails here.
func TestGeneratedFilesAreFresh(t *testing.T) {
	bin, err := testenv.BinDir()
	if err != nil {
		t.Fatal(err)
	}
	gen := filepath.Join(bin, "controller-gen")
	if _, err := os.Stat(gen); err != nil {
		if testing.Short() {
			t.Skip("no controller-gen (make tools)")
		}
		t.Fatalf("%v: run make tools", err)
	}
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	cmd := exec.Command(gen, "crd:crdVersions=v1", "paths=./hubapi/...", "output:crd:artifacts:config="+out)
	cmd.Dir = root
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
	cmd = exec.Command(gen, "object", "paths="+filepath.Join(root, "hubapi", "v1alpha1"), "output:object:dir="+pkg)
	cmd.Dir = root
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("controller-gen object: %v\n%s", err, b)
	}
	a, _ := os.ReadFile(filepath.Join(pkg, "zz_generated.deepcopy.go"))
	b, _ := os.ReadFile("v1alpha1/zz_generated.deepcopy.go")
	if !bytes.Equal(a, b) || len(a) == 0 {
		t.Error("v1alpha1/zz_generated.deepcopy.go is stale: run make generate")
	}
}
