package kubeschema

import (
	"compress/gzip"
	"encoding/json"
	"io"
	"os"
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// appsV1 is the OpenAPI v3 document of apps/v1 as a Kubernetes 1.35 API server publishes
// it (testdata: /openapi/v3/apis/apps/v1 of a local cluster).
func appsV1(tb testing.TB) *Schema {
	tb.Helper()
	f, err := os.Open("testdata/apps-v1.json.gz")
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	z, err := gzip.NewReader(f)
	if err != nil {
		tb.Fatal(err)
	}
	doc, err := io.ReadAll(z)
	if err != nil {
		tb.Fatal(err)
	}
	s, err := Parse(doc)
	if err != nil {
		tb.Fatal(err)
	}
	return s
}

const strayDeployment = `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","labels":{"a":"b"}},
  "spec":{"replicas":2,"selector":{"matchLabels":{"app":"web"}},"template":{"metadata":{"labels":{"app":"web"}},
  "spec":{"restartpolicy":"Always","containers":[{"name":"web","image":"x:1","pullPolicy":"Always","ports":[{"containerPort":80}],
  "resources":{"requests":{"cpu":"100m"},"limits":{"example.com/gpu":1}}}]}}}}`

// A real server's schema: a DaemonSet's replicas and a Deployment's mistyped pod fields go;
// free-form maps (labels, resource quantities) and declared fields stay.
func TestPruneWithARealServersSchema(t *testing.T) {
	s := appsV1(t)
	var ds map[string]any
	_ = json.Unmarshal([]byte(`{"apiVersion":"apps/v1","kind":"DaemonSet","metadata":{"name":"a"},"spec":{"replicas":2,
	  "selector":{"matchLabels":{"app":"a"}},"template":{"metadata":{"labels":{"app":"a"}},"spec":{"containers":[{"name":"a","image":"a"}]}}}}`), &ds)
	if got := s.Prune(schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "DaemonSet"}, ds); !slices.Equal(got, []string{"spec.replicas"}) {
		t.Errorf("DaemonSet: dropped %v", got)
	}
	var dep map[string]any
	_ = json.Unmarshal([]byte(strayDeployment), &dep)
	want := []string{"spec.template.spec.containers[0].pullPolicy", "spec.template.spec.restartpolicy"}
	if got := s.Prune(schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}, dep); !slices.Equal(got, want) {
		t.Errorf("Deployment: dropped %v, want %v", got, want)
	}
	spec := dep["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)
	limits := spec["containers"].([]any)[0].(map[string]any)["resources"].(map[string]any)["limits"]
	if spec["restartpolicy"] != nil || limits.(map[string]any)["example.com/gpu"] == nil {
		t.Errorf("pruned pod spec: %v", spec)
	}
}

// The cost of a worker's first object of a group-version (the document parsed once, then
// cached by its hash) and of each distinct object (decode, prune, encode; then memoized).
func BenchmarkParseAppsV1(b *testing.B) {
	f, _ := os.Open("testdata/apps-v1.json.gz")
	z, _ := gzip.NewReader(f)
	doc, _ := io.ReadAll(z)
	for b.Loop() {
		if _, err := Parse(doc); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkPruneDeployment(b *testing.B) {
	s := appsV1(b)
	gvk := schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}
	for b.Loop() {
		var m map[string]any
		_ = json.Unmarshal([]byte(strayDeployment), &m)
		if d := s.Prune(gvk, m); len(d) != 2 {
			b.Fatal(d)
		}
		_, _ = json.Marshal(m)
	}
}
