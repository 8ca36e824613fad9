package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/temco/temco/internal/core/lifecycle"
	"github.com/temco/temco/internal/dev/testenv"
)

// session is an emcoctl file as EMCO users write them: one document per resource, in
// the order they depend on each other, the variable parts in a values file (clusters, a
// logical cloud, a composite app of Apps, a DIG placed by label, instantiate). The
// production-Temporal smoke test (tests/production) runs it too.
var session = func() string {
	b, err := os.ReadFile("../testdata/emcoctl/session.yaml")
	if err != nil {
		panic(err)
	}
	return string(b)
}()

// temco runs the temco binary's client commands against the stack's API.
func temco(t *testing.T, dir string, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(self, append(args, "--api", strings.TrimSuffix(apiURL, "/v2"))...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	t.Logf("temco %s:\n%s", strings.Join(args, " "), out)
	return string(out), err
}

// An operator's scripted session: one emcoctl file onboards two clusters, a logical cloud
// and a composite app of two charts, then approves and instantiates it; the apps reach
// both clusters. Deleting the same file terminates and removes everything, in reverse.
func TestEmcoctlFileSession(t *testing.T) {
	dir := t.TempDir()
	d := newDeployment(t)
	apps := []string{"cli-front", "cli-back"}
	write := func(name string, data []byte) {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for _, a := range apps {
		write(a+".tgz", webChart(a))
	}
	write("profile.tgz", testenv.Profile("message: from-the-cli\n"))
	write("session.yaml", []byte(session))
	values := "Project: " + d.project + "\nProvider: cli-provider\nLabel: cli\nApps: [" + strings.Join(apps, ", ") + "]\nClusters:\n"
	for _, cl := range stack.Clusters[:2] {
		values += "- {name: " + cl.Name + ", kubeconfig: " + cl.Kubeconfig() + "}\n"
	}
	write("values.yaml", []byte(values))

	out, err := temco(t, dir, "apply", "-f", "session.yaml", "-v", "values.yaml", "--wait")
	if err != nil {
		t.Fatalf("apply: %v", err)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 23 { // 2 + 2x2 clusters, 1 + 2 + 1 cloud, 1 + 2 + 1 + 2 apps, 1 + 1 + 2 + 1 + 2 DIG
		t.Errorf("apply printed %d lines, want one per document (23)", len(lines))
	}
	for _, l := range lines { // "N anchor: METHOD /v2/path STATUS"
		if f := strings.Fields(l); len(f) < 5 || (f[4] != "201" && f[4] != "202") {
			t.Errorf("apply line %q: want 201 or 202", l)
		}
	}
	dig := "/projects/" + d.project + "/composite-apps/shop/v1/deployment-intent-groups/shop-dig"
	var s status
	d.c.do("GET", dig+"/status", nil).must(t, 200).json(t, &s)
	if s.Status != lifecycle.StatusInstantiated {
		t.Fatalf("after apply --wait the DIG is %s: %s", s.Status, s.Error)
	}
	for _, cl := range stack.Clusters {
		for _, a := range apps {
			got := objectsOf(t, cl, s.Instance, a)
			if cl.Name == "cluster3" {
				if len(got) != 0 {
					t.Errorf("%s must not be on cluster3 (not in the cloud), found %v", a, got)
				}
			} else if strings.Join(got, " ") != strings.Join(webObjects(a), " ") {
				t.Errorf("%s on %s: %v, want %v", a, cl.Name, got, webObjects(a))
			}
		}
	}
	// Applying the same file again creates nothing twice: every resource answers 409.
	out, err = temco(t, dir, "apply", "-f", "session.yaml", "-v", "values.yaml", "--stop-on-error")
	if err == nil || !strings.HasPrefix(out, "1 projects: POST /v2/projects 409 ") || strings.Count(out, "/v2/") != 1 {
		t.Errorf("re-apply with --stop-on-error: want one 409 line and a failure, got %v", err)
	}

	out, err = temco(t, dir, "delete", "-f", "session.yaml", "-v", "values.yaml")
	if err != nil {
		t.Fatalf("delete: %v", err)
	}
	if first, _, _ := strings.Cut(out, "\n"); !strings.HasPrefix(first, "23 ") || !strings.HasSuffix(first, ": POST /v2"+dig+"/terminate 202") {
		t.Errorf("delete must begin by terminating the DIG:\n%s", out)
	}
	for _, cl := range stack.Clusters[:2] {
		for _, a := range apps {
			if got := objectsOf(t, cl, s.Instance, a); len(got) != 0 {
				t.Errorf("after delete %s still has %v of %s", cl.Name, got, a)
			}
		}
	}
	d.c.do("GET", "/projects/"+d.project, nil).must(t, 404)
	d.c.do("GET", "/cluster-providers/cli-provider", nil).must(t, 404)
}

// The same session with its charts by reference: each app's document names its chart in
// the stack's private OCI registry (spec.chart, no file:) and the project's registry login
// is an artifact-credentials document, its password from a second values file. The chart's
// tag "1.0" reaches the API as written, not as YAML's number 1; the password is masked in
// get's answer; the app deploys and delete removes everything, the credential included.
func TestEmcoctlFileWithChartsByReference(t *testing.T) {
	dir := t.TempDir()
	d := newDeployment(t)
	reg, app := stack.Registry.Address(), "cli-ref"
	digest := testenv.PushChart(t, stack, webChart(app), "charts/"+app, "1.0")
	const project = "  name: {{.Project}}\n---\n"
	file := strings.Replace(session, project, project+`version: emco/v2
resourceContext:
  anchor: projects/{{.Project}}/artifact-credentials
metadata:
  name: registry
spec:
  host: {{.Registry}}
  username: {{.RegistryUser}}
  password: {{.RegistryPassword}}
---
`, 1)
	file = strings.Replace(file, "file: {{.}}.tgz\n", `spec:
  chart:
    oci: oci://{{$.Registry}}/charts/{{.}}
    version: {{$.ChartVersion}}
    plainHTTP: true
`, 1)
	if !strings.Contains(file, "artifact-credentials") || strings.Contains(file, "file: {{.}}.tgz") {
		t.Fatal("session.yaml changed: the test's edits no longer apply")
	}
	cl := stack.Clusters[0]
	for name, data := range map[string]string{
		"session.yaml": file,
		"profile.tgz":  string(testenv.Profile("message: by-reference\n")),
		"values.yaml": "Project: " + d.project + "\nProvider: cliref-provider\nLabel: cliref\nApps: [" + app + "]\n" +
			"Registry: " + reg + "\nChartVersion: \"1.0\"\nClusters:\n- {name: " + cl.Name + ", kubeconfig: " + cl.Kubeconfig() + "}\n",
		"registry-login.yaml": "RegistryUser: " + stack.Registry.User + "\nRegistryPassword: \"" + stack.Registry.Password + "\"\n",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	vals := []string{"-v", "values.yaml", "-v", "registry-login.yaml"}

	out, err := temco(t, dir, append([]string{"apply", "-f", "session.yaml", "--wait"}, vals...)...)
	if err != nil {
		t.Fatalf("apply: %v", err)
	}
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		if f := strings.Fields(l); len(f) < 5 || (f[4] != "201" && f[4] != "202") {
			t.Errorf("apply line %q: want 201 or 202", l)
		}
	}
	dig := "/projects/" + d.project + "/composite-apps/shop/v1/deployment-intent-groups/shop-dig"
	v := getAs[artifactsView](t, d.c, dig+"/status?status=deployed&output=summary")
	if v.DeployedStatus != lifecycle.StatusInstantiated {
		t.Fatalf("after apply --wait the DIG is %s: %s", v.DeployedStatus, v.Error)
	}
	if a := v.of(app); a.Version != "1.0" || a.Digest != digest {
		t.Errorf("%s's artifact %+v, want tag 1.0 pinned to %s", app, a, digest)
	}
	if got := objectsOf(t, cl, v.Instance, app); strings.Join(got, " ") != strings.Join(webObjects(app), " ") {
		t.Errorf("%s on %s: %v, want %v", app, cl.Name, got, webObjects(app))
	}

	out, err = temco(t, dir, append([]string{"get", "-f", "session.yaml"}, vals...)...)
	if err != nil {
		t.Fatalf("get: %v", err)
	}
	if strings.Contains(out, stack.Registry.Password) || !strings.Contains(out, `"password":"********"`) ||
		!strings.Contains(out, `"version":"1.0"`) {
		t.Errorf("get must show the masked credential and the app's chart as sent:\n%s", out)
	}

	if _, err := temco(t, dir, append([]string{"delete", "-f", "session.yaml"}, vals...)...); err != nil {
		t.Fatalf("delete: %v", err)
	}
	if got := objectsOf(t, cl, v.Instance, app); len(got) != 0 {
		t.Errorf("after delete %s still has %v", cl.Name, got)
	}
	d.c.do("GET", "/projects/"+d.project, nil).must(t, 404)
}
