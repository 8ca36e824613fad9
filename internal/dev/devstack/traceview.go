package devstack

import (
	"embed"
	"io/fs"
	"os"
	"path/filepath"
)

// traceView is temco's trace viewer (traceview/): a static page, with no build step, that
// Jaeger serves as its UI when no built jaeger-ui is given. It reads Jaeger's query API v3
// on the same origin: the services, a service's recent traces, and a trace's spans as a
// waterfall with each span's attributes. Jaeger serves index.html for every path but
// /static/ (rewriting its <base href> under a base path), and the files under static/.
//
//go:embed traceview
var traceView embed.FS

// traceViewDir is the folder, under the collector's, that the viewer is written to.
const traceViewDir = "traceview"

// writeTraceView writes the viewer into dir, replacing what an earlier run left there.
func writeTraceView(dir string) error {
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	root, err := fs.Sub(traceView, "traceview")
	if err != nil {
		return err
	}
	return fs.WalkDir(root, ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		target := filepath.Join(dir, filepath.FromSlash(path))
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		data, err := fs.ReadFile(root, path)
		if err != nil {
			return err
		}
		return os.WriteFile(target, data, 0o644)
	})
}
