package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/temco/temco/internal/core/lifecycle"
)

// EMCO's gac example, in its order (written anew): the intents file names gac and ends
// with approve; gac's resources and customizations come in their own file after it; then
// instantiate.
const (
	gacIntentsFile = `version: emco/v2
resourceContext:
  anchor: controllers
metadata:
  name: gac-{{.Project}}
spec:
  host: gac
  port: 9020
  type: action
  priority: 1
---
version: emco/v2
resourceContext:
  anchor: {{.DIG}}/intents
metadata:
  name: gac-intents
spec:
  intent:
    gac-{{.Project}}: gi
---
version: emco/v2
resourceContext:
  anchor: {{.DIG}}/generic-k8s-intents
metadata:
  name: gi
---
version: emco/v2
resourceContext:
  anchor: {{.DIG}}/approve
`
	gacResourcesFile = `version: emco/v2
resourceContext:
  anchor: {{.DIG}}/generic-k8s-intents/gi/resources
metadata:
  name: extra
spec:
  app: web
  newObject: "true"
  resourceGVK:
    apiVersion: v1
    kind: ConfigMap
    name: extra
file: extra.yaml
---
version: emco/v2
resourceContext:
  anchor: {{.DIG}}/generic-k8s-intents/gi/resources/extra/customizations
metadata:
  name: extra-everywhere
spec:
  clusterSpecific: "false"
  clusterInfo:
    scope: label
    clusterProvider: {{.Provider}}
    clusterLabel: edge
    mode: allow
files:
- settings.txt
`
	gacInstantiateFile = `version: emco/v2
resourceContext:
  anchor: {{.DIG}}/instantiate
`
)

// Controllers' intents created after approve keep the approval, as in EMCO: its own
// order — approve in the intents file, then gac's file, then instantiate — deploys, and
// gac's ConfigMap reaches the cluster.
func TestApproveThenGacIntentsThenInstantiate(t *testing.T) {
	d := newDeployment(t, app{name: "web", chart: webChart("web"), placement: clusterNamed("cluster1")})
	d.create()
	dir := t.TempDir()
	for name, data := range map[string]string{
		"intents.yaml": gacIntentsFile, "gac.yaml": gacResourcesFile, "instantiate.yaml": gacInstantiateFile,
		"extra.yaml":   "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: extra\ndata:\n  from: template\n",
		"settings.txt": "level=1\n",
		"values.yaml":  "Project: " + d.project + "\nProvider: " + provider + "\nDIG: " + strings.TrimPrefix(d.dig(), "/") + "\n",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		if s := d.status(""); s.Instance != "" && s.Status != lifecycle.StatusTerminated && s.state() != lifecycle.StateApproved {
			d.operate(lifecycle.OpTerminate)
			d.await("Terminated", 2*time.Minute, "", func(s status) bool { return s.Status == lifecycle.StatusTerminated })
		}
		if out, err := temco(t, dir, "delete", "-f", "intents.yaml", "-f", "gac.yaml", "-v", "values.yaml"); err != nil {
			t.Logf("clean-up: temco delete: %v\n%s", err, out)
		}
	})
	apply := func(file string, more ...string) {
		t.Helper()
		if out, err := temco(t, dir, append([]string{"apply", "-f", file, "-v", "values.yaml"}, more...)...); err != nil {
			t.Fatalf("temco apply -f %s: %v\n%s", file, err, out)
		}
	}
	apply("intents.yaml")
	apply("gac.yaml")
	if s := d.status(""); s.state() != lifecycle.StateApproved {
		t.Fatalf("after gac's file the DIG is %s, want still Approved", s.state())
	}
	apply("instantiate.yaml", "--wait")
	if s := d.status(""); s.Status != lifecycle.StatusInstantiated {
		t.Fatalf("the DIG is %s after instantiate: %s", s.Status, s.Error)
	}
	cm := liveObject(t, 0, configMaps, "extra")
	if data := fmt.Sprint(cm["data"]); cm == nil || data != "map[from:template settings.txt:level=1\n]" {
		t.Errorf("gac's ConfigMap extra on cluster1: %v, want data from the template and the customization's file", cm)
	}
}
