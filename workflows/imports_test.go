// Package workflows is only this test, of every workflow package: those under it, and
// each feature's flow (features/<name>/flow).
package workflows

import (
	"bytes"
	"encoding/json"
	"io"
	"maps"
	"os/exec"
	"path"
	"slices"
	"strings"
	"testing"
)

// temco is the module path: its packages are checked, the others' (the Temporal SDK's,
// the standard library's) are not.
const temco = "github.com/temco/temco"

// A workflow's code runs again on every replay and must do the same each time: all I/O
// goes through activities. So no workflow package may build on the packages that do I/O,
// directly or through any temco package it imports, lest one of their functions be called
// from workflow code by mistake. The lists, by import path; "x/..." is x and below it, and
// "*" one path element.
var (
	// noIOTemco are the temco packages that do I/O (or run activities, servers, workers,
	// clients of Temporal): no workflow package may depend on them at all.
	noIOTemco = []string{
		temco + "/activities/...",
		temco + "/api/...",
		temco + "/internal/adapters/...",
		temco + "/internal/dev/...",
		temco + "/internal/core/store/...",
		temco + "/cmd/...",
		temco + "/workers/...",
		temco + "/starter/...",
		temco + "/hub/...",
		temco + "/features/*/work", // a feature's activities
	}
	// noIOImports are the packages of the network, processes, databases, Kubernetes
	// clients, Helm and the HTTP server: no temco package a workflow package depends on may
	// import them. (The Temporal SDK's own dependencies do, of course.)
	noIOImports = []string{
		"net", // net/url, net/netip are pure
		"net/http/...",
		"os/exec",
		"database/sql/...",
		"go.mongodb.org/...",
		"k8s.io/client-go/...",
		"helm.sh/...",
		"github.com/labstack/echo/...",
	}
)

// knownIO are the temco packages that break the rule today, and what they break it with:
// the imports of noIOImports they make, or "" for one of noIOTemco. The test fails on
// anything else, and when one of these no longer holds (then its line goes). None today.
var knownIO = map[string][]string{}

// pkg is what go list says of a package.
type pkg struct {
	ImportPath string
	Imports    []string
	DepOnly    bool
	GoFiles    []string
}

// No workflow package depends on I/O (but knownIO), directly or through temco's packages.
func TestWorkflowsDoNoIO(t *testing.T) {
	graph, roots := list(t)
	type breach struct{ pkg, imports string }
	known := map[breach]bool{}
	for _, v := range violations(graph, roots) {
		if slices.Contains(knownIO[v.pkg], v.imports) {
			t.Logf("known: %s", v)
			known[breach{v.pkg, v.imports}] = true
			continue
		}
		t.Error(v)
	}
	for _, p := range slices.Sorted(maps.Keys(knownIO)) {
		for _, imp := range knownIO[p] {
			if !known[breach{p, imp}] {
				t.Errorf("knownIO: %s no longer breaks the rule with %q for the workflows: drop it", p, imp)
			}
		}
	}
}

// The check finds a forbidden package however deep, and a forbidden import, with the path
// from the workflow package.
func TestWorkflowIOIsFound(t *testing.T) {
	graph := map[string]pkg{}
	for _, p := range []pkg{
		{ImportPath: temco + "/workflows/a",
			Imports: []string{temco + "/internal/core/x", "go.temporal.io/sdk/workflow"}},
		{ImportPath: temco + "/internal/core/x", Imports: []string{temco + "/internal/core/y", "net/url"}},
		{ImportPath: temco + "/internal/core/y",
			Imports: []string{temco + "/starter", "net/http/httptrace"}},
		{ImportPath: temco + "/starter", Imports: []string{"go.temporal.io/sdk/client"}},
		{ImportPath: "go.temporal.io/sdk/workflow", Imports: []string{"net/http"}},
		{ImportPath: temco + "/features/d/flow", Imports: []string{temco + "/features/d/work"}},
		{ImportPath: temco + "/features/d/work"},
	} {
		graph[p.ImportPath] = p
	}
	var got []string
	for _, v := range violations(graph, []string{temco + "/workflows/a", temco + "/features/d/flow"}) {
		got = append(got, v.String())
	}
	want := []string{
		"features/d/flow -> features/d/work: a package that does I/O",
		"workflows/a -> internal/core/x -> internal/core/y -> starter: a package that does I/O",
		"workflows/a -> internal/core/x -> internal/core/y imports net/http/httptrace",
	}
	if !slices.Equal(got, want) {
		t.Errorf("found\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// violation is a temco package, reached from a workflow package by path, that is one of
// noIOTemco (imports "") or imports one of noIOImports.
type violation struct {
	path    []string // from the workflow package to pkg
	pkg     string
	imports string
}

func (v violation) String() string {
	var short []string
	for _, p := range v.path {
		short = append(short, strings.TrimPrefix(p, temco+"/"))
	}
	if v.imports == "" {
		return strings.Join(short, " -> ") + ": a package that does I/O"
	}
	return strings.Join(short, " -> ") + " imports " + v.imports
}

// violations walks the temco packages of graph from roots, breadth first, and says the
// first path to each one that breaks the rule, with what breaks it.
func violations(graph map[string]pkg, roots []string) []violation {
	var out []violation
	seen := map[string]bool{}
	for _, root := range roots {
		paths := map[string][]string{root: {root}}
		queue := []string{root}
		for len(queue) > 0 {
			p := queue[0]
			queue = queue[1:]
			if seen[p] {
				continue
			}
			seen[p] = true
			if matches(noIOTemco, p) {
				out = append(out, violation{path: paths[p], pkg: p})
				continue
			}
			for _, imp := range graph[p].Imports {
				switch {
				case matches(noIOImports, imp):
					out = append(out, violation{path: paths[p], pkg: p, imports: imp})
				case isTemco(imp) && paths[imp] == nil:
					paths[imp] = append(slices.Clip(paths[p]), imp)
					queue = append(queue, imp)
				}
			}
		}
	}
	slices.SortFunc(out, func(a, b violation) int { return strings.Compare(a.String(), b.String()) })
	return out
}

// matches says whether path is one of patterns ("x/...": x or below it).
func matches(patterns []string, pkg string) bool {
	for _, p := range patterns {
		if base, ok := strings.CutSuffix(p, "/..."); ok {
			if pkg == base || strings.HasPrefix(pkg, base+"/") {
				return true
			}
		} else if ok, _ := path.Match(p, pkg); ok {
			return true
		}
	}
	return false
}

// isFlow says whether path is a feature's workflow package, features/<name>/flow.
func isFlow(path string) bool {
	name, ok := strings.CutPrefix(path, temco+"/features/")
	return ok && strings.Count(name, "/") == 1 && strings.HasSuffix(name, "/flow")
}

func isTemco(path string) bool { return path == temco || strings.HasPrefix(path, temco+"/") }

// list is what go list says of the workflow packages and everything they import (tests
// left out), by import path, and the workflow packages.
func list(t *testing.T) (map[string]pkg, []string) {
	t.Helper()
	cmd := exec.Command("go", "list", "-deps", "-json=ImportPath,Imports,DepOnly,GoFiles", "./...", "../features/.../flow")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.String())
	}
	graph := map[string]pkg{}
	var roots []string
	for dec := json.NewDecoder(bytes.NewReader(out)); ; {
		var p pkg
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		graph[p.ImportPath] = p
		if !p.DepOnly && len(p.GoFiles) > 0 {
			roots = append(roots, p.ImportPath)
		}
	}
	if len(roots) < 10 {
		t.Fatalf("go list found %d workflow packages: %v", len(roots), roots)
	}
	for _, r := range roots {
		if !strings.HasPrefix(r, temco+"/workflows/") && !isFlow(r) {
			t.Fatalf("go list found %s among the workflow packages", r)
		}
	}
	return graph, roots
}
