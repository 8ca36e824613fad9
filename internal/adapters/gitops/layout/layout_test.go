package layout

import (
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/temco/temco/internal/adapters/syncobject"
)

func deployment() Deployment {
	return Deployment{Cluster: "edge+c1", Instance: "7f3a", Namespace: "apps",
		Flux: FluxOptions{Interval: 30 * time.Second, RetryInterval: time.Minute, Timeout: 90 * time.Second},
		Apps: []App{{Name: "web", Objects: []Object{
			{Version: "v1", Kind: "ConfigMap", Name: "cfg", Manifest: []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cfg"},"data":{"k":"v"}}`)},
			{Group: "apps", Version: "v1", Kind: "Deployment", Namespace: "other", Name: "web",
				Manifest: []byte(`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","namespace":"other"}}`)},
			{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "ClusterRole", Name: "reader",
				Manifest: []byte(`{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRole","metadata":{"name":"reader"}}`)},
			{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition", Name: "widgets.example.com",
				Manifest: []byte(`{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","metadata":{"name":"widgets.example.com"},"spec":{"group":"example.com","scope":"Cluster","names":{"kind":"Widget"}}}`)},
			{Group: "example.com", Version: "v1", Kind: "Widget", Name: "w",
				Manifest: []byte(`{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w"}}`)},
		}}, {Name: "db", Objects: []Object{
			{Version: "v1", Kind: "Service", Name: "db", Manifest: []byte(`{"apiVersion":"v1","kind":"Service","metadata":{"name":"db"}}`)},
			{Version: "v1", Kind: "Service", Namespace: "b", Name: "db", Manifest: []byte(`{"apiVersion":"v1","kind":"Service","metadata":{"name":"db","namespace":"b"}}`)},
		}}},
	}
}

func keys(m map[string][]byte) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func namespaceIn(t *testing.T, body []byte) string {
	t.Helper()
	var m struct{ Metadata struct{ Namespace string } }
	if err := yaml.Unmarshal(body, &m); err != nil {
		t.Fatal(err)
	}
	return m.Metadata.Namespace
}

func TestFluxLayout(t *testing.T) {
	c, err := For(syncobject.FluxCD, deployment())
	if err != nil {
		t.Fatal(err)
	}
	dir := "clusters/edge+c1/context/7f3a/"
	want := []string{
		"clusters/edge+c1/context/7f3a/app/db/db+Service+2.yaml",
		"clusters/edge+c1/context/7f3a/app/db/db+Service.yaml",
		"clusters/edge+c1/context/7f3a/app/web/cfg+ConfigMap.yaml",
		"clusters/edge+c1/context/7f3a/app/web/reader+ClusterRole.yaml",
		"clusters/edge+c1/context/7f3a/app/web/w+Widget.yaml",
		"clusters/edge+c1/context/7f3a/app/web/web+Deployment.yaml",
		"clusters/edge+c1/context/7f3a/app/web/widgets.example.com+CustomResourceDefinition.yaml",
		"clusters/edge+c1/context/kustomization.yaml",
		"clusters/edge+c1/kust7f3a.yaml",
	}
	if got := keys(c.Files); !slices.Equal(got, want) {
		t.Fatalf("files:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if !slices.Equal(c.Replace, []string{dir, "clusters/edge+c1/kust7f3a.yaml"}) {
		t.Errorf("replace %v", c.Replace)
	}
	for file, ns := range map[string]string{
		"app/web/cfg+ConfigMap.yaml": "apps", "app/web/web+Deployment.yaml": "other",
		"app/web/reader+ClusterRole.yaml": "", "app/web/w+Widget.yaml": "",
		"app/web/widgets.example.com+CustomResourceDefinition.yaml": "", "app/db/db+Service+2.yaml": "b",
	} {
		if got := namespaceIn(t, c.Files[dir+file]); got != ns {
			t.Errorf("%s: namespace %q, want %q", file, got, ns)
		}
	}
	var k struct {
		APIVersion, Kind string
		Metadata         struct{ Name, Namespace string }
		Spec             struct {
			Interval, RetryInterval, Timeout, Path string
			Prune                                  bool
			SourceRef                              struct{ Kind, Name string }
		}
	}
	if err := yaml.Unmarshal(c.Files["clusters/edge+c1/kust7f3a.yaml"], &k); err != nil {
		t.Fatal(err)
	}
	if k.APIVersion != "kustomize.toolkit.fluxcd.io/v1" || k.Metadata.Name != "kust7f3a" || k.Metadata.Namespace != "flux-system" ||
		k.Spec.Path != "./clusters/edge+c1/context/7f3a" || !k.Spec.Prune || k.Spec.SourceRef.Name != "flux-system" ||
		k.Spec.Interval != "30s" || k.Spec.RetryInterval != "1m0s" || k.Spec.Timeout != "1m30s" {
		t.Errorf("Kustomization %+v", k)
	}
	if ns, name := KustomizationOf(deployment()); ns != k.Metadata.Namespace || name != k.Metadata.Name {
		t.Errorf("KustomizationOf %s/%s", ns, name)
	}
}

// A deployment into a standard logical cloud: its Kustomization lives in the cloud's
// namespace, impersonates the cloud's ServiceAccount there and reads the bootstrap source
// across namespaces; its objects land in the cloud's namespace as any deployment's do.
func TestFluxLayoutOfALogicalCloudDeployment(t *testing.T) {
	dep := deployment()
	dep.Tenant = &ServiceAccount{Namespace: "apps", Name: "team-sa"}
	c, err := For(syncobject.FluxCD, dep)
	if err != nil {
		t.Fatal(err)
	}
	var k struct {
		Metadata struct{ Name, Namespace string }
		Spec     struct {
			Path               string
			ServiceAccountName string `json:"serviceAccountName"`
			SourceRef          struct{ Kind, Name, Namespace string }
		}
	}
	if err := yaml.Unmarshal(c.Files["clusters/edge+c1/kust7f3a.yaml"], &k); err != nil {
		t.Fatal(err)
	}
	if k.Metadata.Name != "kust7f3a" || k.Metadata.Namespace != "apps" || k.Spec.ServiceAccountName != "team-sa" ||
		k.Spec.SourceRef.Kind != "GitRepository" || k.Spec.SourceRef.Name != "flux-system" || k.Spec.SourceRef.Namespace != "flux-system" ||
		k.Spec.Path != "./clusters/edge+c1/context/7f3a" {
		t.Errorf("Kustomization %+v", k)
	}
	if ns, name := KustomizationOf(dep); ns != "apps" || name != "kust7f3a" {
		t.Errorf("KustomizationOf %s/%s", ns, name)
	}
	if ns := namespaceIn(t, c.Files["clusters/edge+c1/context/7f3a/app/web/cfg+ConfigMap.yaml"]); ns != "apps" {
		t.Errorf("ConfigMap in %q", ns)
	}
	// Without the cloud's ServiceAccount the bootstrap's own rights would apply it: refused.
	dep.Tenant = &ServiceAccount{Namespace: "apps"}
	if _, err := For(syncobject.FluxCD, dep); err == nil {
		t.Error("a logical cloud's deployment without its ServiceAccount was written")
	}
	dep.Tenant = &ServiceAccount{Namespace: "apps", Name: "team-sa"}
	if _, err := For(syncobject.AzureArcV2, dep); err == nil {
		t.Errorf("azureArcV2: a logical cloud's deployment was written without anything confining it")
	}
}

// On anthos a logical cloud's deployment goes where the cloud's RepoSync reads, EMCO's
// namespaces/<ns>/<c>/context/<i>/, with its deployed file; nothing under clusters/.
func TestAnthosLayoutOfALogicalCloudDeployment(t *testing.T) {
	dep := deployment()
	dep.Tenant = &ServiceAccount{Namespace: "config-management-system", Name: "ns-reconciler-apps-repo-sync-team-14"}
	c, err := For(syncobject.Anthos, dep)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"namespaces/apps/edge+c1/context/7f3a/app/db/db+Service+2.yaml",
		"namespaces/apps/edge+c1/context/7f3a/app/db/db+Service.yaml",
		"namespaces/apps/edge+c1/context/7f3a/app/web/cfg+ConfigMap.yaml",
		"namespaces/apps/edge+c1/context/7f3a/app/web/reader+ClusterRole.yaml",
		"namespaces/apps/edge+c1/context/7f3a/app/web/w+Widget.yaml",
		"namespaces/apps/edge+c1/context/7f3a/app/web/web+Deployment.yaml",
		"namespaces/apps/edge+c1/context/7f3a/app/web/widgets.example.com+CustomResourceDefinition.yaml",
		"namespaces/apps/edge+c1/context/7f3a/deployed",
	}
	if got := keys(c.Files); !slices.Equal(got, want) {
		t.Errorf("files\n got %v\nwant %v", got, want)
	}
	if !slices.Equal(c.Replace, []string{"namespaces/apps/edge+c1/context/7f3a/"}) {
		t.Errorf("replace %v", c.Replace)
	}
	if ns := namespaceIn(t, c.Files["namespaces/apps/edge+c1/context/7f3a/app/web/cfg+ConfigMap.yaml"]); ns != "apps" {
		t.Errorf("ConfigMap in %q", ns)
	}
	dep.Namespace = ""
	if _, err := For(syncobject.Anthos, dep); err == nil {
		t.Error("a logical cloud's deployment without its namespace was written")
	}
}

// A logical cloud's set-up commits its Namespace with its Kustomization, for the
// bootstrap Kustomization to apply (it applies the cloud's deployments' Kustomizations,
// in that namespace, too), and not in its folder.
func TestBootstrapNamespacesGoWithTheKustomization(t *testing.T) {
	dep := deployment()
	dep.Apps = []App{{Name: "logical-cloud", Objects: []Object{
		{Version: "v1", Kind: "Namespace", Name: "team-ns", Manifest: []byte(`{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"team-ns"}}`)},
		{Version: "v1", Kind: "ServiceAccount", Namespace: "team-ns", Name: "team-sa", Manifest: []byte(`{"apiVersion":"v1","kind":"ServiceAccount","metadata":{"name":"team-sa","namespace":"team-ns"}}`)},
	}}}
	dep.BootstrapNamespaces = true
	c, err := For(syncobject.FluxCD, dep)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"clusters/edge+c1/context/7f3a/app/logical-cloud/team-sa+ServiceAccount.yaml", "clusters/edge+c1/context/kustomization.yaml", "clusters/edge+c1/kust7f3a.yaml"}
	if got := keys(c.Files); !slices.Equal(got, want) {
		t.Errorf("files\n got %v\nwant %v", got, want)
	}
	docs := strings.Split(string(c.Files["clusters/edge+c1/kust7f3a.yaml"]), "---\n")
	var kinds []string
	for _, d := range docs {
		var m struct {
			Kind     string
			Metadata struct{ Name string }
		}
		if err := yaml.Unmarshal([]byte(d), &m); err != nil {
			t.Fatal(err)
		}
		kinds = append(kinds, m.Kind+"/"+m.Metadata.Name)
	}
	if !slices.Equal(kinds, []string{"Kustomization/kust7f3a", "Namespace/team-ns"}) {
		t.Errorf("the Kustomization's file holds %v", kinds)
	}
	if c, _ := For(syncobject.Anthos, dep); c.Files["clusters/edge+c1/context/7f3a/app/logical-cloud/team-ns+Namespace.yaml"] == nil {
		t.Error("anthos: the Namespace left its folder")
	}
}

// A deployment with no apps left removes its folder and its Kustomization.
func TestEmptyDeploymentRemovesEverything(t *testing.T) {
	dep := deployment()
	dep.Apps = nil
	c, err := For(syncobject.FluxCD, dep)
	if err != nil {
		t.Fatal(err)
	}
	if got := keys(c.Files); !slices.Equal(got, []string{"clusters/edge+c1/context/kustomization.yaml"}) {
		t.Errorf("files %v", got)
	}
	if !slices.Contains(c.Replace, "clusters/edge+c1/kust7f3a.yaml") || !slices.Contains(c.Replace, "clusters/edge+c1/context/7f3a/") {
		t.Errorf("replace %v", c.Replace)
	}
}

func TestAzureArcAndAnthosLayouts(t *testing.T) {
	arc, err := For(syncobject.AzureArcV2, deployment())
	if err != nil {
		t.Fatal(err)
	}
	anthos, err := For(syncobject.Anthos, deployment())
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []map[string][]byte{arc.Files, anthos.Files} {
		if c["clusters/edge+c1/context/7f3a/app/web/cfg+ConfigMap.yaml"] == nil {
			t.Errorf("no object file in %v", keys(c))
		}
		if c["clusters/edge+c1/kust7f3a.yaml"] != nil || c["clusters/edge+c1/context/kustomization.yaml"] != nil {
			t.Errorf("Flux files written for another type: %v", keys(c))
		}
	}
	if _, ok := arc.Files["clusters/edge+c1/context/7f3a/deployed"]; ok {
		t.Error("azureArcV2 got anthos' deployed file")
	}
	if got := string(anthos.Files["clusters/edge+c1/context/7f3a/deployed"]); got != "web\ndb\n" {
		t.Errorf("anthos deployed file %q", got)
	}
}

func TestNamespaceOf(t *testing.T) {
	dep := deployment()
	for _, c := range []struct {
		group, kind, namespace string
		want                   string
	}{
		{"", "ConfigMap", "", "apps"},
		{"", "ConfigMap", "own", "own"},
		{"", "Namespace", "", ""},
		{"example.com", "Widget", "", ""},
		{"example.com", "Gadget", "", "apps"},
	} {
		if got := NamespaceOf(dep, c.group, c.kind, c.namespace); got != c.want {
			t.Errorf("%+v: %q, want %q", c, got, c.want)
		}
	}
}

func TestInvalidInput(t *testing.T) {
	dep := deployment()
	dep.Instance = "../x"
	if _, err := For(syncobject.FluxCD, dep); err == nil {
		t.Error("an instance with a slash was accepted")
	}
	dep = deployment()
	dep.Apps[0].Objects[0].Manifest = []byte("not json")
	if _, err := For(syncobject.FluxCD, dep); err == nil || !strings.Contains(err.Error(), "cfg") {
		t.Errorf("a bad manifest: %v", err)
	}
	if _, err := For("argo", deployment()); err == nil {
		t.Error("an unknown type was accepted")
	}
}
