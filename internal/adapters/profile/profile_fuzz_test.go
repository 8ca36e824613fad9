package profile

import (
	"path"
	"strings"
	"testing"

	"github.com/temco/temco/internal/adapters/archive"
	"github.com/temco/temco/internal/dev/testenv"
)

// Hostile archives are refused or reduced to harmless content; nothing panics, and no
// accepted template path escapes its chart.
func FuzzParse(f *testing.F) {
	f.Add(testenv.Profile("replicas: 2\n"))
	f.Add(testenv.TarGz(map[string]string{
		"p/manifest.yaml": "version: v1\ntype:\n  values: v.yaml\n  configresource:\n  - filepath: cm.yaml\n    chartpath: web/templates/cm.yaml\n",
		"p/v.yaml":        "a: {b: [1, 2]}\n", "p/cm.yaml": "kind: ConfigMap\n",
	}))
	for name, a := range testenv.HostileArchives("p") {
		if name == "bomb" {
			continue // each run would unpack 32 MiB: TestHostileArchivesAreRefused covers it
		}
		f.Add(a)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := Parse(data)
		if err != nil {
			return
		}
		total := 0
		for name, content := range p.Templates {
			if path.IsAbs(name) || name == ".." || strings.HasPrefix(name, "../") {
				t.Fatalf("template path %q escapes the chart", name)
			}
			total += len(content)
		}
		if total > archive.MaxSize {
			t.Fatalf("%d bytes of templates accepted", total)
		}
	})
}

func TestHostileArchivesAreRefused(t *testing.T) {
	want := map[string]string{"bomb": "unpacks to more than 32 MiB", "huge-header": "unpacks to more than 32 MiB",
		"traversal": `"../../etc/cron.d/x" leads outside the archive`, "symlink": `"p/values.yaml" is a symbolic link`,
		"device": `"p/values.yaml" is a device`, "flood": "more than 1000 entries"}
	for name, a := range testenv.HostileArchives("p") {
		if _, err := Parse(a); err == nil || !strings.Contains(err.Error(), want[name]) {
			t.Errorf("%s archive: %v, want an error saying %q", name, err, want[name])
		}
	}
}
