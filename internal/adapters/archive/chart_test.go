package archive

import (
	"archive/tar"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/temco/temco/internal/dev/testenv"
)

// chartFiles is a small chart named name with its files under prefix ("web/", "./", "").
func chartFiles(prefix, name string) map[string]string {
	return map[string]string{
		prefix + "Chart.yaml":          "apiVersion: v2\nname: " + name + "\nversion: 0.1.0\n",
		prefix + "values.yaml":         "replicas: 1\n",
		prefix + "templates/cm.yaml":   "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: " + name + "\n",
		prefix + "templates/_help.tpl": `{{- define "x" }}x{{ end }}`,
	}
}

func with(files map[string]string, more map[string]string) map[string]string {
	out := maps.Clone(files)
	maps.Copy(out, more)
	return out
}

func TestLoadChartAcceptsEveryLayout(t *testing.T) {
	db := string(testenv.TarOf(chartFiles("db/", "db"), true))
	cases := []struct {
		name      string
		archive   []byte
		chart     string   // the name of the chart loaded
		templates []string // its templates, when the case is about them
		deps      []string // its subcharts, when the case is about them
	}{
		{"folder named like the app (tar -C helm web)", testenv.TarOf(chartFiles("web/", "web"), true), "web", nil, nil},
		{"tar -C helm . (./ prefix, directory entries)", testenv.TarOf(with(chartFiles("./web/", "web"),
			map[string]string{"./": "", "./web/": "", "./web/templates/": ""}), true), "web", nil, nil},
		{"plain tar", testenv.TarOf(chartFiles("web/", "web"), false), "web", nil, nil},
		{"at the archive root", testenv.TarOf(chartFiles("", "web"), true), "web", nil, nil},
		{"at the archive root, ./ prefix, plain tar", testenv.TarOf(chartFiles("./", "web"), false), "web", nil, nil},
		{"the only folder with a chart, named otherwise", testenv.TarOf(with(chartFiles("nginx/", "nginx"),
			map[string]string{"docs/README.md": "x"}), true), "nginx", nil, nil},
		{"the app's folder among other charts", testenv.TarOf(with(chartFiles("web/", "web-chart"), chartFiles("other/", "other")), true),
			"web-chart", nil, nil},
		{"the app's folder before a chart at the root", testenv.TarOf(with(chartFiles("web/", "web-chart"), chartFiles("", "root")), true),
			"web-chart", nil, nil},
		{"other files at the root are ignored", testenv.TarOf(with(chartFiles("web/", "web"),
			map[string]string{"manifest.yaml": "not: [yaml", "README": "x"}), true), "web", nil, nil},
		{".helmignore and dotfiles in templates/", testenv.TarOf(with(chartFiles("web/", "web"), map[string]string{
			"web/.helmignore": "*.bak\nscratch/\n", "web/templates/cm.yaml.bak": "{{ broken", "web/templates/.swp": "{{ broken",
			"web/templates/scratch/x.yaml": "{{ broken"}), true), "web", []string{"templates/_help.tpl", "templates/cm.yaml"}, nil},
		{"packaged and folder subcharts", testenv.TarOf(with(chartFiles("web/", "web"), with(chartFiles("web/charts/cache/", "cache"),
			map[string]string{"web/charts/db.tgz": db})), true), "web", nil, []string{"cache", "db"}},
		{"a packaged subchart inside a folder subchart", testenv.TarOf(with(chartFiles("web/", "web"), with(chartFiles("web/charts/cache/", "cache"),
			map[string]string{"web/charts/cache/charts/db.tgz": db})), true), "web", nil, []string{"cache"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ch, err := LoadChart(tc.archive, "web")
			if err != nil {
				t.Fatal(err)
			}
			if ch.Name() != tc.chart {
				t.Errorf("loaded chart %q, want %q", ch.Name(), tc.chart)
			}
			if ch.Values["replicas"] != float64(1) {
				t.Errorf("values %v: values.yaml not loaded", ch.Values)
			}
			var templates, deps []string
			for _, f := range ch.Templates {
				templates = append(templates, f.Name)
			}
			for _, d := range ch.Dependencies() {
				deps = append(deps, d.Name())
			}
			slices.Sort(templates)
			slices.Sort(deps)
			if tc.templates != nil && !slices.Equal(templates, tc.templates) {
				t.Errorf("templates %q, want %q", templates, tc.templates)
			}
			if tc.deps != nil && !slices.Equal(deps, tc.deps) {
				t.Errorf("subcharts %q, want %q", deps, tc.deps)
			}
		})
	}
}

func TestLoadChartRefusesWithTheReason(t *testing.T) {
	bomb := tarWith(func(tw *tar.Writer) {
		_ = tw.WriteHeader(&tar.Header{Name: "b/Chart.yaml", Size: 20 << 20, Typeflag: tar.TypeReg})
		_, _ = tw.Write(make([]byte, 20<<20))
	})
	symlink := tarWith(func(tw *tar.Writer) {
		_ = tw.WriteHeader(&tar.Header{Name: "db/values.yaml", Linkname: "/etc/shadow", Typeflag: tar.TypeSymlink})
	})
	cases := []struct {
		name    string
		archive []byte
		want    string
	}{
		{"not an archive", []byte("apiVersion: v2\nname: web\n"), "neither a tar nor a gzip-compressed tar archive"},
		{"no Chart.yaml", testenv.TarOf(map[string]string{"x/values.yaml": "a: 1", "y/README": ""}, true),
			"no Chart.yaml found at the archive root or in the top-level folders x, y (EMCO expects web/Chart.yaml)"},
		{"no Chart.yaml and no folder", testenv.TarOf(map[string]string{"values.yaml": "a: 1"}, true),
			"no Chart.yaml found at the archive root, and the archive has no top-level folder (EMCO expects web/Chart.yaml)"},
		{"Chart.yaml deeper than a top folder", testenv.TarOf(chartFiles("src/helm/web/", "web"), true),
			"no Chart.yaml found at the archive root or in the top-level folders src"},
		{"several charts, none named like the app", testenv.TarOf(with(chartFiles("a/", "a"), chartFiles("b/", "b")), true),
			"the archive holds several charts, in folders a, b, and none in a folder named like the app (EMCO expects web/Chart.yaml)"},
		{"Chart.yaml not YAML", testenv.TarOf(map[string]string{"web/Chart.yaml": "name: ["}, true),
			`cannot load the chart in folder "web": cannot load Chart.yaml`},
		{"chart without a version", testenv.TarOf(map[string]string{"Chart.yaml": "apiVersion: v2\nname: web\n"}, true),
			"cannot load the chart at the archive root: validation: chart.metadata.version is required"},
		{"values.yaml not YAML", testenv.TarOf(with(chartFiles("web/", "web"), map[string]string{"web/values.yaml": "a: ["}), true),
			"cannot load values.yaml"},
		{"bad .helmignore", testenv.TarOf(with(chartFiles("web/", "web"), map[string]string{"web/.helmignore": "a/**/b\n"}), true),
			".helmignore: double-star (**) syntax is not supported"},
		{"subcharts unpacking over 32 MiB together", testenv.TarOf(with(chartFiles("web/", "web"), map[string]string{
			"web/charts/b1.tgz": string(gzipped(bomb)), "web/charts/b2.tgz": string(gzipped(bomb))}), true),
			`cannot load the chart in folder "web": subchart charts/b2.tgz: the archive unpacks to more than 32 MiB`},
		{"a link in a packaged subchart", testenv.TarOf(with(chartFiles("web/", "web"), map[string]string{
			"web/charts/db.tgz": string(gzipped(symlink))}), true),
			`subchart charts/db.tgz: archive entry "db/values.yaml" is a symbolic link`},
		{"a packaged subchart and a folder of its name", testenv.TarOf(with(chartFiles("web/", "web"), with(chartFiles("web/charts/db/", "db"),
			map[string]string{"web/charts/db.tgz": string(testenv.TarOf(chartFiles("db/", "db"), true))})), true),
			"subchart charts/db.tgz: the chart also has a folder charts/db/"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := LoadChart(tc.archive, "web"); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one saying %q", err, tc.want)
			}
		})
	}
}
