package devstack

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The viewer is written whole, over what an earlier run left, in the layout Jaeger's
// assets handler serves: index.html (with the <base href="/" it rewrites under a base
// path) at the top, the rest under static/.
func TestTheTraceViewerIsWrittenAsJaegersUIAssets(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "traceview")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "stale.js"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := writeTraceView(dir); err != nil {
		t.Fatal(err)
	}
	index, err := os.ReadFile(filepath.Join(dir, "index.html"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`<base href="/"`, `src="static/traceview.js"`, `href="static/traceview.css"`} {
		if !strings.Contains(string(index), want) {
			t.Errorf("index.html lacks %s", want)
		}
	}
	for _, f := range []string{"static/traceview.js", "static/traceview.css"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Error(err)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "stale.js")); !os.IsNotExist(err) {
		t.Errorf("an earlier run's file stays: %v", err)
	}
}
