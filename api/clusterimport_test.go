package api

import (
	"context"
	"fmt"
	"strings"
	"testing"
)

// An import registers clusters with their labels and logical clouds' references as one:
// the same checks as a request each, and nothing stored when any part is refused.
func TestClusterImportIsAllOrNothing(t *testing.T) {
	c := newClient(t)
	c.do("POST", "/cluster-providers", res("cp1", nil)).must(t, 201)
	c.do("POST", "/projects", res("p1", nil)).must(t, 201)
	c.do("POST", "/projects/p1/logical-clouds", res("lc", map[string]any{"level": "0"})).must(t, 201)
	c.multipart("POST", "/cluster-providers/cp1/clusters", res("taken", nil), []byte(testKubeconfig)).must(t, 201)
	imp := "/cluster-providers/cp1/cluster-imports"
	cluster := func(name string) map[string]any {
		return map[string]any{"metadata": map[string]any{"name": name}, "kubeconfig": testKubeconfig,
			"labels": []string{"edge", "scale"}, "logicalClouds": []map[string]string{{"project": "p1", "logicalCloud": "lc"}}}
	}
	var many []map[string]any
	for i := range 50 {
		many = append(many, cluster(fmt.Sprintf("c%d", i)))
	}
	with := func(extra map[string]any) map[string]any {
		return map[string]any{"clusters": append(many[:len(many):len(many)], extra)}
	}
	noKubeconfig := cluster("x")
	delete(noKubeconfig, "kubeconfig")
	badLabel, otherCloud, badKubeconfig := cluster("x"), cluster("x"), cluster("x")
	badLabel["labels"] = []string{"ok", "Not A Name"}
	otherCloud["logicalClouds"] = []map[string]string{{"project": "p1", "logicalCloud": "nope"}}
	badKubeconfig["kubeconfig"] = "not: a kubeconfig"
	for _, r := range []struct {
		name string
		body any
		code int
		want string
	}{
		{"empty", map[string]any{"clusters": []any{}}, 400, "at least one cluster"},
		{"too many", map[string]any{"clusters": make([]map[string]any, maxClusterImport+1)}, 400, "takes 1000 at most"},
		{"exists", with(cluster("taken")), 409, "taken"},
		{"named twice", with(cluster("c3")), 409, "c3"},
		{"no kubeconfig", with(noKubeconfig), 400, `clusters[50] ("x"): kubeconfig is missing`},
		{"bad kubeconfig", with(badKubeconfig), 400, "invalid kubeconfig"},
		{"bad label", with(badLabel), 400, "labels[1]"},
		{"missing logical cloud", with(otherCloud), 404, "nope"},
	} {
		if m := c.do("POST", imp, r.body).must(t, r.code).message(t); !strings.Contains(m, r.want) {
			t.Errorf("%s: %q, want it to name %q", r.name, m, r.want)
		}
		if got := c.do("GET", "/cluster-providers/cp1/clusters/c0", nil); got.code != 404 {
			t.Fatalf("%s: a refused import left cluster c0 behind (%d)", r.name, got.code)
		}
	}
	var out clusterImported
	c.do("POST", imp, map[string]any{"clusters": many}).must(t, 201).json(t, &out)
	if out != (clusterImported{Clusters: 50, Labels: 100, ClusterReferences: 50}) {
		t.Errorf("answered %+v", out)
	}
	// As registered one request each: the label query, the reference, the sealed kubeconfig.
	var names []string
	c.do("GET", "/cluster-providers/cp1/clusters?label=scale", nil).must(t, 200).json(t, &names)
	if len(names) != 50 {
		t.Errorf("?label=scale: %d clusters", len(names))
	}
	var ref struct {
		Spec struct{ ClusterProvider, Cluster string } `json:"spec"`
	}
	c.do("GET", "/projects/p1/logical-clouds/lc/cluster-references/c7", nil).must(t, 200).json(t, &ref)
	if ref.Spec.ClusterProvider != "cp1" || ref.Spec.Cluster != "c7" {
		t.Errorf("reference %+v", ref.Spec)
	}
	d, err := c.store.Get(context.Background(), "/cluster-providers/cp1/clusters/c7")
	if err != nil || len(d.Secret) == 0 || strings.Contains(string(d.Secret), "apiVersion") {
		t.Errorf("the kubeconfig is not stored sealed (%v)", err)
	}
	c.do("DELETE", "/cluster-providers/cp1/clusters/c7", nil).must(t, 409) // labelled and referenced
}
