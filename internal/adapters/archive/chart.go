package archive

import (
	"bytes"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strings"
	"time"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/ignore"
)

// LoadChart reads a chart archive and loads the chart of app with Helm (validated). The
// chart is where EMCO looks for it, in a top-level folder named like the app; failing
// that, at the archive root or in the only top-level folder holding a Chart.yaml.
func LoadChart(data []byte, app string) (*chart.Chart, error) {
	b := newBudget()
	files, err := read(data, b)
	if err != nil {
		return nil, err
	}
	root, err := chartRoot(files, app)
	if err != nil {
		return nil, err
	}
	ch, err := load(under(files, root), b)
	if err != nil {
		where := "at the archive root"
		if root != "" {
			where = fmt.Sprintf("in folder %q", root)
		}
		return nil, fmt.Errorf("cannot load the chart %s: %v", where, err)
	}
	return ch, nil
}

// chartRoot returns the folder of files holding the chart of app ("" for the root).
func chartRoot(files map[string][]byte, app string) (string, error) {
	if _, ok := files[app+"/Chart.yaml"]; ok {
		return app, nil
	}
	if _, ok := files["Chart.yaml"]; ok {
		return "", nil
	}
	folders := map[string]bool{} // top-level folder -> holds a Chart.yaml
	for name := range files {
		if dir, rest, ok := strings.Cut(name, "/"); ok {
			folders[dir] = folders[dir] || rest == "Chart.yaml"
		}
	}
	var charts, all []string
	for dir, isChart := range folders {
		all = append(all, dir)
		if isChart {
			charts = append(charts, dir)
		}
	}
	sort.Strings(charts)
	sort.Strings(all)
	expected := ""
	if app != "" {
		expected = fmt.Sprintf(" (EMCO expects %s/Chart.yaml)", app)
	}
	switch {
	case len(charts) == 1:
		return charts[0], nil
	case len(charts) > 1:
		return "", fmt.Errorf("the archive holds several charts, in folders %s, and none in a folder named like the app%s",
			strings.Join(charts, ", "), expected)
	case len(all) == 0:
		return "", fmt.Errorf("no Chart.yaml found at the archive root, and the archive has no top-level folder%s", expected)
	default:
		return "", fmt.Errorf("no Chart.yaml found at the archive root or in the top-level folders %s%s", strings.Join(all, ", "), expected)
	}
}

// under returns the files below dir, by path relative to it.
func under(files map[string][]byte, dir string) map[string][]byte {
	if dir == "" {
		return files
	}
	out := map[string][]byte{}
	for name, data := range files {
		if rel, ok := strings.CutPrefix(name, dir+"/"); ok {
			out[rel] = data
		}
	}
	return out
}

var utf8BOM = []byte{0xEF, 0xBB, 0xBF}

// load builds a chart from its files as `helm template <dir>` does on the unpacked
// folder, as EMCO renders: the chart's .helmignore applies.
func load(files map[string][]byte, b *budget) (*chart.Chart, error) {
	kept, err := withoutIgnored(files)
	if err != nil {
		return nil, err
	}
	if err := unpackSubcharts(kept, b); err != nil {
		return nil, err
	}
	names := make([]string, 0, len(kept))
	for name := range kept {
		names = append(names, name)
	}
	sort.Strings(names)
	buffered := make([]*loader.BufferedFile, 0, len(names))
	for _, name := range names {
		buffered = append(buffered, &loader.BufferedFile{Name: name, Data: bytes.TrimPrefix(kept[name], utf8BOM)})
	}
	return loader.LoadFiles(buffered)
}

// withoutIgnored drops the files the chart's .helmignore (and Helm's default, dotfiles
// in templates/) excludes; an ignored folder excludes all it holds.
func withoutIgnored(files map[string][]byte) (map[string][]byte, error) {
	rules := ignore.Empty()
	if raw, ok := files[ignore.HelmIgnore]; ok {
		r, err := ignore.Parse(bytes.NewReader(raw))
		if err != nil {
			return nil, fmt.Errorf("%s: %v", ignore.HelmIgnore, err)
		}
		rules = r
	}
	rules.AddDefaults()
	kept := map[string][]byte{}
next:
	for name, data := range files {
		for i := range len(name) {
			if name[i] == '/' && rules.Ignore(name[:i], entryInfo(true)) {
				continue next
			}
		}
		if !rules.Ignore(name, entryInfo(false)) {
			kept[name] = data
		}
	}
	return kept, nil
}

// unpackSubcharts replaces every packaged subchart (charts/x.tgz, also inside subcharts)
// by its files under charts/x/. Helm would unpack them itself, each within its own
// limit: here they draw on the upload's budget, and are held to the same rules.
func unpackSubcharts(files map[string][]byte, b *budget) error {
	var packed []string
	for name := range files {
		if isPackedSubchart(name) {
			packed = append(packed, name)
		}
	}
	sort.Strings(packed)
	for _, name := range packed {
		sub, err := read(files[name], b)
		if err != nil {
			return fmt.Errorf("subchart %s: %w", name, err)
		}
		root, err := chartRoot(sub, "")
		if err != nil {
			return fmt.Errorf("subchart %s: %w", name, err)
		}
		sub = under(sub, root)
		if err := unpackSubcharts(sub, b); err != nil {
			return fmt.Errorf("subchart %s: %w", name, err)
		}
		dir := strings.TrimSuffix(name, ".tgz") + "/"
		for other := range files {
			if strings.HasPrefix(other, dir) {
				return fmt.Errorf("subchart %s: the chart also has a folder %s", name, dir)
			}
		}
		delete(files, name)
		for rel, data := range sub {
			files[dir+rel] = data
		}
	}
	return nil
}

// isPackedSubchart tells whether Helm would unpack name as a subchart archive:
// charts/x.tgz or charts/a/charts/x.tgz, skipping names starting with "_" or ".".
func isPackedSubchart(name string) bool {
	parts := strings.Split(name, "/")
	if len(parts)%2 != 0 || path.Ext(name) != ".tgz" {
		return false
	}
	for i := 0; i < len(parts); i += 2 {
		if parts[i] != "charts" || strings.IndexAny(parts[i+1], "_.") == 0 {
			return false
		}
	}
	return true
}

// entryInfo is the little of fs.FileInfo .helmignore rules look at: a folder or not.
type entryInfo bool

func (e entryInfo) Name() string       { return "" }
func (e entryInfo) Size() int64        { return 0 }
func (e entryInfo) Mode() fs.FileMode  { return 0 }
func (e entryInfo) ModTime() time.Time { return time.Time{} }
func (e entryInfo) IsDir() bool        { return bool(e) }
func (e entryInfo) Sys() any           { return nil }
