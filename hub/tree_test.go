package hub

import (
	"bytes"
	"context"
	"net/http"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/temco/temco/hubapi/v1alpha1"
)

const cloudOwner = "hub:LogicalCloud/lc"

// cloud is a logical cloud of project p with two cluster references: a node with
// children and a managed collection.
func cloud() *node {
	return logicalCloudNode(&v1.LogicalCloud{Spec: v1.LogicalCloudSpec{Named: v1.Named{Name: "lc"}, Project: "p", Level: "1",
		Namespace: "ns", Clusters: []v1.ClusterReference{{Provider: "prov", Cluster: "c1"}, {Provider: "prov", Cluster: "c2"}}}})
}

// mustRefuse asserts err is a *Refusal with code.
func mustRefuse(t *testing.T, err error, code int) *Refusal {
	t.Helper()
	r, ok := IsRefusal(err)
	if !ok {
		t.Fatalf("err = %v, want a *Refusal %d", err, code)
	}
	if r.Code != code {
		t.Fatalf("refusal code = %d (%s), want %d", r.Code, r.Message, code)
	}
	return r
}

func TestApplyCreatesMissingResourcesParentsFirstWithOwner(t *testing.T) {
	api := newFakeAPI(t)
	tr := api.tree(cloudOwner)
	if err := tr.apply(context.Background(), cloud()); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"POST /projects/p/logical-clouds",
		"POST /projects/p/logical-clouds/lc/cluster-references",
		"POST /projects/p/logical-clouds/lc/cluster-references",
	}
	got := api.writes()
	wantCalls(t, got, want...)
	for _, c := range got {
		if c.Owner != cloudOwner {
			t.Errorf("%s sent owner %q, want %q", c, c.Owner, cloudOwner)
		}
	}
	if md := got[1].Body["metadata"].(map[string]any); md["name"] != "prov-c1" {
		t.Errorf("first reference named %v, want prov-c1", md["name"])
	}
	if _, ok := api.item("/projects/p/logical-clouds/lc/cluster-references/prov-c2"); !ok {
		t.Error("second reference not stored")
	}
	if tr.wrote != 3 {
		t.Errorf("wrote = %d, want 3", tr.wrote)
	}
}

func TestApplyDoesNotRewriteUnchangedResources(t *testing.T) {
	api := newFakeAPI(t)
	ctx := context.Background()
	if err := api.tree(cloudOwner).apply(ctx, cloud()); err != nil {
		t.Fatal(err)
	}
	api.reset()
	again := api.tree(cloudOwner)
	if err := again.apply(ctx, cloud()); err != nil {
		t.Fatal(err)
	}
	if w := api.writes(); len(w) != 0 {
		t.Errorf("second apply wrote %v, want nothing", names(w))
	}
	if len(api.all()) == 0 {
		t.Error("second apply sent no GET at all: it did not look")
	}
	if again.wrote != 0 {
		t.Errorf("wrote = %d, want 0", again.wrote)
	}
}

func TestApplyPutsAChangedField(t *testing.T) {
	api := newFakeAPI(t)
	ctx := context.Background()
	if err := api.tree(cloudOwner).apply(ctx, cloud()); err != nil {
		t.Fatal(err)
	}
	api.reset()
	n := cloud()
	n.body["spec"].(map[string]any)["namespace"] = "other"
	if err := api.tree(cloudOwner).apply(ctx, n); err != nil {
		t.Fatal(err)
	}
	w := api.writes()
	wantCalls(t, w, "PUT /projects/p/logical-clouds/lc")
	if w[0].Owner != cloudOwner || w[0].Body["spec"].(map[string]any)["namespace"] != "other" {
		t.Errorf("PUT sent owner %q body %v", w[0].Owner, w[0].Body)
	}
}

func TestApplyPutsWhenTheDesiredBodyDropsAField(t *testing.T) {
	api := newFakeAPI(t)
	n := cloud()
	n.children = nil
	stored := map[string]any{"metadata": map[string]any{"name": "lc", "description": ""},
		"spec": map[string]any{"level": "1", "namespace": "ns", "extra": "left over"}}
	api.seed(n.path(), cloudOwner, stored)
	if err := api.tree(cloudOwner).apply(context.Background(), n); err != nil {
		t.Fatal(err)
	}
	wantCalls(t, api.writes(), "PUT /projects/p/logical-clouds/lc")
}

func TestSameComparesBothWaysWithZeroValuesAsAbsent(t *testing.T) {
	body := func(spec map[string]any) map[string]any {
		return map[string]any{"metadata": map[string]any{"name": "x", "description": ""}, "spec": spec}
	}
	cur := func(spec any) stored { return stored{Metadata: map[string]any{"name": "x"}, Spec: spec} }
	cases := []struct {
		name string
		body map[string]any
		cur  stored
		want bool
	}{
		{"equal", body(map[string]any{"a": "1"}), cur(map[string]any{"a": "1"}), true},
		{"changed value", body(map[string]any{"a": "1"}), cur(map[string]any{"a": "2"}), false},
		{"field added", body(map[string]any{"a": "1", "b": "2"}), cur(map[string]any{"a": "1"}), false},
		{"field removed", body(map[string]any{"a": "1"}), cur(map[string]any{"a": "1", "b": "2"}), false},
		{"zero string absent from stored", body(map[string]any{"a": "1", "b": ""}), cur(map[string]any{"a": "1"}), true},
		{"zero string absent from body", body(map[string]any{"a": "1"}), cur(map[string]any{"a": "1", "b": "", "n": 0, "f": false}), true},
		{"nil map vs absent", body(map[string]any{"labels": nil}), cur(map[string]any{}), true},
		{"empty list vs absent", body(map[string]any{"l": []any{}}), cur(map[string]any{}), true},
		{"list element changed", body(map[string]any{"l": []any{"a", "b"}}), cur(map[string]any{"l": []any{"a", "c"}}), false},
		{"list shorter", body(map[string]any{"l": []any{"a"}}), cur(map[string]any{"l": []any{"a", "b"}}), false},
		{"nested removed", body(map[string]any{"m": map[string]any{"k": "v"}}), cur(map[string]any{"m": map[string]any{"k": "v", "j": "w"}}), false},
		{"number", body(map[string]any{"n": 1}), cur(map[string]any{"n": 1.0}), true},
		{"description changed", map[string]any{"metadata": map[string]any{"name": "x", "description": "new"}, "spec": map[string]any{}}, cur(map[string]any{}), false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := same(c.body, c.cur); got != c.want {
				t.Errorf("same = %v, want %v", got, c.want)
			}
		})
	}
}

func TestApplyAlwaysPutsAMultipartResourceWithItsFile(t *testing.T) {
	api := newFakeAPI(t)
	const owner = "hub:Cluster/c1"
	kubeconfig := []byte("apiVersion: v1\nkind: Config\n")
	n := &node{coll: "/cluster-providers/prov/clusters", name: "c1", multipart: true, file: kubeconfig,
		body: map[string]any{"metadata": metadata("c1", ""), "spec": map[string]any{}}}
	api.seed(n.path(), owner, n.body) // stored exactly as declared
	if err := api.tree(owner).apply(context.Background(), n); err != nil {
		t.Fatal(err)
	}
	w := api.writes()
	wantCalls(t, w, "PUT /cluster-providers/prov/clusters/c1")
	if !w[0].Multipart || !bytes.Equal(w[0].File, kubeconfig) || w[0].Owner != owner {
		t.Errorf("PUT multipart=%v file=%q owner=%q", w[0].Multipart, w[0].File, w[0].Owner)
	}
	if md, _ := w[0].Body["metadata"].(map[string]any); md["name"] != "c1" {
		t.Errorf("metadata part = %v", w[0].Body)
	}
}

func TestApplyRefusesAResourceOwnedBySomeoneElse(t *testing.T) {
	for _, other := range []string{"", "hub:LogicalCloud/another"} {
		t.Run("owner "+other, func(t *testing.T) {
			api := newFakeAPI(t)
			n := cloud()
			api.seed(n.path(), other, n.body)
			err := api.tree(cloudOwner).apply(context.Background(), n)
			r := mustRefuse(t, err, http.StatusConflict)
			if !strings.Contains(r.Message, n.path()) {
				t.Errorf("message %q does not name %s", r.Message, n.path())
			}
			if w := api.writes(); len(w) != 0 {
				t.Errorf("wrote %v despite the refusal", names(w))
			}
		})
	}
}

func TestPruneDeletesOnlyOwnItemsNoLongerDeclared(t *testing.T) {
	api := newFakeAPI(t)
	n := cloud()
	refs := n.path() + "/cluster-references"
	ref := func(name string) map[string]any {
		return map[string]any{"metadata": metadata(name, ""), "spec": map[string]any{"clusterProvider": "prov", "cluster": strings.TrimPrefix(name, "prov-")}}
	}
	api.seed(n.path(), cloudOwner, n.body)
	api.seed(refs+"/prov-c1", cloudOwner, ref("prov-c1"))      // declared
	api.seed(refs+"/prov-old", cloudOwner, ref("prov-old"))    // ours, no longer declared
	api.seed(refs+"/prov-rest", "", ref("prov-rest"))          // REST's
	api.seed(refs+"/prov-other", "hub:X/y", ref("prov-other")) // another object's
	tr := api.tree(cloudOwner)
	if err := tr.apply(context.Background(), n); err != nil {
		t.Fatal(err)
	}
	want := []string{"POST " + refs, "DELETE " + refs + "/prov-old"} // prov-c2 created, prov-old pruned
	wantCalls(t, api.writes(), want...)
	for _, kept := range []string{"prov-c1", "prov-rest", "prov-other", "prov-c2"} {
		if _, ok := api.item(refs + "/" + kept); !ok {
			t.Errorf("%s is gone", kept)
		}
	}
}

// A cluster label is {"clusterLabel": ...} with no metadata (api/clm.go): prune must find
// its name there, and apply must not PUT it (the API has no PUT for labels).
func TestApplyKeepsDeclaredClusterLabelsAndPrunesOthers(t *testing.T) {
	api := newFakeAPI(t)
	const owner = "hub:Cluster/c1"
	n := &node{coll: "/cluster-providers/prov/clusters", name: "c1", multipart: true, file: []byte("kc"),
		body: map[string]any{"metadata": metadata("c1", ""), "spec": map[string]any{}}, manages: []string{"labels"},
		children: []*node{{coll: "/cluster-providers/prov/clusters/c1/labels", name: "edge", body: map[string]any{"clusterLabel": "edge"}}}}
	labels := n.path() + "/labels"
	api.seed(n.path(), owner, n.body)
	api.seed(labels+"/edge", owner, map[string]any{"clusterLabel": "edge"})
	api.seed(labels+"/gone", owner, map[string]any{"clusterLabel": "gone"})
	api.seed(labels+"/rest", "", map[string]any{"clusterLabel": "rest"})
	if err := api.tree(owner).apply(context.Background(), n); err != nil {
		t.Fatal(err)
	}
	want := []string{"PUT " + n.path(), "DELETE " + labels + "/gone"}
	wantCalls(t, api.writes(), want...)
}

func TestCheckPathRefusesWhatIsNotAName(t *testing.T) {
	for _, p := range []string{
		"/projects/..", "/projects/p/../x", "/projects/.hidden", "/projects/a%2Fb", "/projects//x",
		"/projects/", "/projects/p q", "/projects/-x", "/projects/" + strings.Repeat("a", 129),
	} {
		if err := checkPath(p); err == nil {
			t.Errorf("checkPath(%q) passed", p)
		} else {
			mustRefuse(t, err, http.StatusBadRequest)
		}
	}
	for _, p := range []string{"/projects/p1", "/projects/a-b_c.d/composite-apps/ca/v1.2.3", "/projects/0x"} {
		if err := checkPath(p); err != nil {
			t.Errorf("checkPath(%q) = %v", p, err)
		}
	}
}

func TestApplyRefusesABadNameBeforeAnyRequest(t *testing.T) {
	for _, name := range []string{"a/b", "a%2Fb", "..", "", ".x", "../../x", "x/../../y"} {
		t.Run(name, func(t *testing.T) {
			api := newFakeAPI(t)
			err := api.tree("hub:Project/p").apply(context.Background(),
				&node{coll: "/projects/p/logical-clouds", name: name, body: map[string]any{"metadata": metadata(name, "")}})
			mustRefuse(t, err, http.StatusBadRequest)
			if c := api.all(); len(c) != 0 {
				t.Errorf("sent %v", names(c))
			}
		})
	}
	for _, name := range []string{"lc", "lc-1", "lc_1", "lc.1", "0lc"} {
		t.Run(name, func(t *testing.T) {
			api := newFakeAPI(t)
			err := api.tree("hub:Project/p").apply(context.Background(),
				&node{coll: "/projects/p/logical-clouds", name: name, body: map[string]any{"metadata": metadata(name, "")}})
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Contains(names(api.writes()), "POST /projects/p/logical-clouds") {
				t.Errorf("sent %v", names(api.all()))
			}
		})
	}
}

func TestDIGWithATraversingIntentNameSendsNothing(t *testing.T) {
	o := dig()
	o.Spec.ActionIntents = []v1.ActionIntent{{Controller: "genericK8sIntent", Resource: "generic-k8s-intents", Name: "../../../logical-clouds/x"}}
	n, err := digNode(context.Background(), files{}, o.Namespace, o)
	if err != nil {
		t.Fatal(err)
	}
	api := newFakeAPI(t)
	err = api.tree(ownerOf("DeploymentIntentGroup", o)).apply(context.Background(), n)
	mustRefuse(t, err, http.StatusBadRequest)
	if c := api.all(); len(c) != 0 {
		t.Errorf("sent %v", names(c))
	}
}

func TestRemoveTreatsAGoneResourceAsRemoved(t *testing.T) {
	api := newFakeAPI(t)
	n := cloud()
	api.seed(n.path(), cloudOwner, n.body)
	tr := api.tree(cloudOwner)
	if err := tr.remove(context.Background(), n.path(), n.children); err != nil {
		t.Fatal(err)
	}
	refs := n.path() + "/cluster-references/"
	want := []string{"DELETE " + refs + "prov-c2", "DELETE " + refs + "prov-c1", "DELETE " + n.path()} // children first
	wantCalls(t, api.writes(), want...)
	if _, ok := api.item(n.path()); ok {
		t.Error("the cloud is still there")
	}
	api.answer(http.MethodDelete, n.path(), http.StatusInternalServerError, `{"message":"down"}`)
	if err := tr.remove(context.Background(), n.path(), nil); err == nil {
		t.Error("a 500 gave no error")
	} else if _, ok := IsRefusal(err); ok {
		t.Errorf("a 500 gave %v, a refusal: want a failure", err)
	}
}

// The first apply of a labelled cluster lists the labels it just created: they are its
// own and declared, so nothing is pruned (a label's name is its clusterLabel).
func TestApplyCreatesALabelledCluster(t *testing.T) {
	api := newFakeAPI(t)
	const owner = "hub:Cluster/c1"
	kube := newKube(t, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "temco-system", Name: "c1"}, Data: map[string][]byte{"kc": []byte("kc")}})
	o := &v1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "c1"},
		Spec: v1.ClusterSpec{Provider: "prov", Labels: []string{"edge", "eu"}, Kubeconfig: v1.KeyRef{Kind: "Secret", Name: "c1", Key: "kc"}}}
	n, err := clusterNode(context.Background(), files{kube: kube, namespace: "temco-system"}, o)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := api.tree(owner).apply(ctx, n); err != nil {
		t.Fatal(err)
	}
	labels := "/cluster-providers/prov/clusters/c1/labels"
	wantCalls(t, api.writes(), "POST /cluster-providers/prov/clusters", "POST "+labels, "POST "+labels)
	api.reset()
	if err := api.tree(owner).apply(ctx, n); err != nil {
		t.Fatal(err)
	}
	wantCalls(t, api.writes(), "PUT /cluster-providers/prov/clusters/c1") // the kubeconfig only
}
