// Package docs checks what the documentation says of the code against the code.
package docs

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// maxWalkFiles is the most files the instantiate walk may name: a reader follows it in
// one sitting (issue 65).
const maxWalkFiles = 20

var (
	// fileRef is a file the walk names, with the functions named beside it:
	// `path.go` (`A`, `B`).
	fileRef = regexp.MustCompile("`([a-z][\\w.-]*/[\\w./-]*\\.go)`(?: \\(((?:`\\w+`(?:, )?)+)\\))?")
	name    = regexp.MustCompile("`(\\w+)`")
)

// Every file docs/architecture.md's instantiate walk names exists and defines the
// functions named beside it, and the walk names at most maxWalkFiles files.
func TestTheInstantiateWalkMatchesTheCode(t *testing.T) {
	doc, err := os.ReadFile("../../docs/architecture.md")
	if err != nil {
		t.Fatal(err)
	}
	walk := section(string(doc), "## One instantiate")
	if walk == "" {
		t.Fatal("docs/architecture.md has no section \"One instantiate\"")
	}
	files := map[string]bool{}
	for _, m := range fileRef.FindAllStringSubmatch(walk, -1) {
		path := m[1]
		files[path] = true
		src, err := os.ReadFile(filepath.Join("../..", path))
		if err != nil {
			t.Errorf("the walk names %s: %v", path, err)
			continue
		}
		for _, n := range name.FindAllStringSubmatch(m[2], -1) {
			if !defines(string(src), n[1]) {
				t.Errorf("the walk names %s (%s), which that file does not define", path, n[1])
			}
		}
	}
	if len(files) == 0 || len(files) > maxWalkFiles {
		t.Errorf("the walk names %d files; want 1 to %d", len(files), maxWalkFiles)
	}
}

// The checks find a function, a method and a variable, and nothing else.
func TestDefinesFindsOnlyDefinitions(t *testing.T) {
	src := "package p\n\nfunc A() {}\n\nfunc (s *S) B(x int) {}\n\nfunc G[T any]() {}\n\nvar C = 1\n\nvar (\n\tD = 2\n)\n\n// E is called by A: E()\n"
	for n, want := range map[string]bool{"A": true, "B": true, "G": true, "C": true, "D": true, "E": false, "x": false} {
		if got := defines(src, n); got != want {
			t.Errorf("defines(%s) = %v, want %v", n, got, want)
		}
	}
	if got := section("# T\n## One\na\n## Two\nb\n", "## One"); got != "## One\na\n" {
		t.Errorf("section: %q", got)
	}
}

// section is doc from the heading that starts with heading to the next "## ".
func section(doc, heading string) string {
	i := strings.Index(doc, "\n"+heading)
	if i < 0 {
		return ""
	}
	rest := doc[i+1:]
	if j := strings.Index(rest[len(heading):], "\n## "); j >= 0 {
		return rest[:len(heading)+j+1]
	}
	return rest
}

// defines reports whether Go source src declares n at the top level: a function, a
// method or a variable.
func defines(src, n string) bool {
	q := regexp.QuoteMeta(n)
	return regexp.MustCompile(`(?m)^func (\([^)]*\) )?` + q + `[\[(]|^var ` + q + `\b|^\t` + q + ` +=`).MatchString(src)
}
