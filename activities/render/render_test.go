package render

import (
	"context"
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/temco/temco/internal/adapters/profile"
	"github.com/temco/temco/internal/core/appctx"
	"github.com/temco/temco/internal/core/capabilities"
	"github.com/temco/temco/internal/core/model"
	"github.com/temco/temco/internal/dev/testenv"
)

var webChart = testenv.Chart("web", "replicas: 1\nmessage: chart\nnested: {a: {b: x}}\n", map[string]string{
	"deploy.yaml": "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: {{ .Release.Name }}-web\nspec:\n  replicas: {{ .Values.replicas }}\n",
	"cm.yaml":     "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web\ndata:\n  message: {{ .Values.message | quote }}\n  b: {{ .Values.nested.a.b | quote }}\n",
	"ns.yaml":     "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: web-ns\n",
	"crd.yaml":    "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: widgets.example.com\n",
	"widget.yaml": "apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: w\n",
	"empty.yaml":  "{{- if false }}\nkind: Nothing\n{{- end }}\n",
	"test.yaml":   "apiVersion: v1\nkind: Pod\nmetadata:\n  name: t\n  annotations: {\"helm.sh/hook\": test}\n",
})

func field(t *testing.T, o appctx.Object, path ...string) any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(o.Manifest), &m); err != nil {
		t.Fatal(err)
	}
	var v any = m
	for _, p := range path {
		v = v.(map[string]any)[p]
	}
	return v
}

func TestRenderAppliesProfileThenDIGOverridesInOrder(t *testing.T) {
	p, err := profile.Parse(testenv.Profile("message: profile\nreplicas: 2\n"))
	if err != nil {
		t.Fatal(err)
	}
	objs, err := renderChart(context.Background(), chartInput{archive: webChart, profile: p,
		overrides: map[string]string{"replicas": "5", "nested.a.b": "y"}, release: "r1", namespace: "default"})
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, o := range objs {
		kinds = append(kinds, o.Kind+"/"+o.Name)
	}
	want := "Namespace/web-ns CustomResourceDefinition/widgets.example.com ConfigMap/web Deployment/r1-web Widget/w"
	if strings.Join(kinds, " ") != want {
		t.Fatalf("objects %v, want %s (test hooks and empty documents dropped)", kinds, want)
	}
	if got := field(t, objs[2], "data", "message"); got != "profile" {
		t.Errorf("message %v: the profile must override the chart", got)
	}
	if got := field(t, objs[2], "data", "b"); got != "y" {
		t.Errorf("nested value %v: the DIG override must apply", got)
	}
	if got := field(t, objs[3], "spec", "replicas"); got != float64(5) {
		t.Errorf("replicas %v: the DIG override must win over the profile", got)
	}
	if objs[3].Hash == "" || objs[3].Hash == objs[2].Hash {
		t.Error("objects need distinct content hashes")
	}
}

func TestRenderIsDeterministic(t *testing.T) {
	in := chartInput{archive: webChart, release: "r1", namespace: "default", overrides: map[string]string{"a": "1", "b": "2"}}
	a, err := renderChart(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := renderChart(context.Background(), in)
	for i := range a {
		if a[i].Hash != b[i].Hash {
			t.Fatalf("object %s rendered differently twice", a[i].Ref)
		}
	}
}

func TestRenderErrorsAreClear(t *testing.T) {
	broken := testenv.Chart("x", "", map[string]string{"a.yaml": "{{ .Values.missing.field }}"})
	if _, err := renderChart(context.Background(), chartInput{archive: broken, release: "r"}); err == nil || !strings.Contains(err.Error(), "render chart x") {
		t.Errorf("error %v", err)
	}
	noName := testenv.Chart("x", "", map[string]string{"a.yaml": "apiVersion: v1\nkind: ConfigMap\n"})
	if _, err := renderChart(context.Background(), chartInput{archive: noName, release: "r"}); err == nil || !strings.Contains(err.Error(), "no metadata.name") {
		t.Errorf("error %v", err)
	}
}

func TestDependencyOrder(t *testing.T) {
	app := func(name string, deps ...string) *appctx.App {
		a := &appctx.App{Name: name}
		for _, d := range deps {
			a.Deps = append(a.Deps, model.AppDependencySpec{App: d, OpStatus: model.OpStatusReady})
		}
		return a
	}
	order, err := dependencyOrder([]*appctx.App{app("web", "db", "cache"), app("cache", "db"), app("db"), app("alone")})
	if err != nil || strings.Join(order, ",") != "alone,db,cache,web" {
		t.Errorf("order %v %v", order, err)
	}
	if _, err := dependencyOrder([]*appctx.App{app("a", "b"), app("b", "a")}); err == nil || !strings.Contains(err.Error(), "cycle") {
		t.Errorf("cycle not detected: %v", err)
	}
}

func BenchmarkRenderChart(b *testing.B) {
	in := chartInput{archive: webChart, release: "r1", namespace: "default", labels: map[string]string{"emco/deployment-id": "1-web"}}
	for b.Loop() {
		if _, err := renderChart(context.Background(), in); err != nil {
			b.Fatal(err)
		}
	}
}

// Rendering loads the chart from every layout the API accepts, and a profile's
// replacement files land in it whichever folder, if any, holds it.
func TestRenderLoadsEveryAcceptedChartLayout(t *testing.T) {
	chart := func(prefix string) map[string]string {
		return map[string]string{
			prefix + "Chart.yaml":        "apiVersion: v2\nname: web\nversion: 0.1.0\n",
			prefix + "values.yaml":       "message: chart\n",
			prefix + "templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web\ndata:\n  message: {{ .Values.message }}\n",
		}
	}
	both := chart("web/")
	maps.Copy(both, chart("old/"))
	p, err := profile.Parse(testenv.TarOf(map[string]string{
		"./":                     "",
		"./manifest.yaml":        "version: v1\ntype:\n  values: override_values.yaml\n  configresource:\n  - {filepath: extra.yaml, chartpath: web/templates/extra.yaml}\n",
		"./override_values.yaml": "message: profile\n",
		"./extra.yaml":           "apiVersion: v1\nkind: Secret\nmetadata:\n  name: extra\n",
	}, true))
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, app string
		archive   []byte
	}{
		{"folder named like the app", "web", testenv.TarOf(chart("web/"), true)},
		{"./ prefix, plain tar", "web", testenv.TarOf(chart("./web/"), false)},
		{"at the archive root", "web", testenv.TarOf(chart(""), true)},
		{"the only chart folder, named otherwise", "frontend", testenv.TarOf(chart("web/"), true)},
		{"the app's folder among others", "web", testenv.TarOf(both, true)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			objs, err := renderChart(context.Background(), chartInput{app: tc.app, archive: tc.archive, profile: p, release: "r", namespace: "default"})
			if err != nil {
				t.Fatal(err)
			}
			if len(objs) != 2 || objs[0].Kind != "Secret" || objs[1].Kind != "ConfigMap" {
				t.Fatalf("objects %v, want the profile's Secret and the chart's ConfigMap", objs)
			}
			if got := field(t, objs[1], "data", "message"); got != "profile" {
				t.Errorf("message %v: the profile's values must apply", got)
			}
		})
	}
}

// A chart reading .Capabilities renders with the cluster's version and APIs when given
// them, and says that it reads them; a chart that does not, says so.
func TestRenderWithTheClustersCapabilities(t *testing.T) {
	caps := testenv.Chart("caps", "", map[string]string{"cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: caps\ndata:\n" +
		"  kube: {{ .Capabilities.KubeVersion.Version | quote }}\n" +
		"  probe: {{ if .Capabilities.APIVersions.Has \"probe.example.com/v1\" }}served{{ else }}absent{{ end }}\n"})
	in := chartInput{app: "caps", archive: caps, release: "r", namespace: "default"}
	def, err := render(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	in.caps = &capabilities.Capabilities{KubeVersion: "v1.31.2", APIVersions: []string{"probe.example.com/v1"}}
	got, err := render(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	if !def.readsCapabilities || field(t, def.objects[0], "data", "probe") != "absent" {
		t.Errorf("with Helm's defaults: %s (reads capabilities: %v)", def.objects[0].Manifest, def.readsCapabilities)
	}
	if field(t, got.objects[0], "data", "kube") != "v1.31.2" || field(t, got.objects[0], "data", "probe") != "served" {
		t.Errorf("for the cluster: %s", got.objects[0].Manifest)
	}
	in.caps.KubeVersion = "not a version"
	if _, err := render(context.Background(), in); err == nil || !strings.Contains(err.Error(), `"not a version"`) {
		t.Errorf("a bad version: %v", err)
	}
	plain, err := render(context.Background(), chartInput{app: "web", archive: webChart, release: "r", namespace: "default"})
	if err != nil || plain.readsCapabilities {
		t.Errorf("a chart without .Capabilities: %v, reads %v", err, plain.readsCapabilities)
	}
}

// A chart requiring a Kubernetes version renders by default for the one temco's libraries
// are built for (not Helm's 1.20), its constraint left to the rendering for its clusters,
// which refuses a cluster outside it.
func TestAChartsKubeVersionIsCheckedAgainstItsClusters(t *testing.T) {
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	mod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`k8s\.io/apimachinery v0\.(\d+)\.(\d+)`).FindStringSubmatch(string(mod))
	if m == nil || defaultKubeVersion.Version != "v1."+m[1]+"."+m[2] || defaultKubeVersion.Minor != m[1] {
		t.Fatalf("default Kubernetes version %+v, want the one of go.mod's k8s.io/apimachinery %v", defaultKubeVersion, m)
	}
	files := map[string]string{
		"new/Chart.yaml":        "apiVersion: v2\nname: new\nversion: 0.1.0\nkubeVersion: \">= 1.30.0-0\"\n",
		"new/templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: new\ndata:\n  v: {{ .Capabilities.KubeVersion.Minor | quote }}\n",
	}
	in := chartInput{app: "new", archive: testenv.TarGz(files), release: "r", namespace: "default"}
	def, err := render(context.Background(), in)
	if err != nil || !def.readsCapabilities || field(t, def.objects[0], "data", "v") != defaultKubeVersion.Minor {
		t.Fatalf("default rendering: %v, reads capabilities %v", err, def.readsCapabilities)
	}
	in.caps = &capabilities.Capabilities{KubeVersion: "v1.29.3"}
	if _, err := render(context.Background(), in); err == nil || !strings.Contains(err.Error(), "incompatible with Kubernetes v1.29.3") {
		t.Errorf("rendered for a 1.29 cluster: %v, want the chart's constraint", err)
	}
	in.caps.KubeVersion = "v1.35.4"
	if r, err := render(context.Background(), in); err != nil || field(t, r.objects[0], "data", "v") != "35" {
		t.Errorf("rendered for a 1.35 cluster: %v", err)
	}
}
