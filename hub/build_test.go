package hub

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	v1 "github.com/temco/temco/hubapi/v1alpha1"
)

// newKube is a fake Kubernetes client knowing core kinds and temco's, with their status
// subresources as the CRDs declare them.
func newKube(t *testing.T, objs ...client.Object) client.WithWatch {
	t.Helper()
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	if err := v1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	return fake.NewClientBuilder().WithScheme(s).WithObjects(objs...).
		WithStatusSubresource(&v1.ClusterProvider{}, &v1.Cluster{}, &v1.Project{}, &v1.LogicalCloud{}, &v1.CompositeApp{}, &v1.DeploymentIntentGroup{}).
		Build()
}

func js(t *testing.T, v any) *apiextensionsv1.JSON {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return &apiextensionsv1.JSON{Raw: b}
}

// asJSON is v in the generic form bodies take after a round trip.
func asJSON(t *testing.T, v any) any {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

func sameJSON(t *testing.T, what string, got, want any) {
	t.Helper()
	if g, w := asJSON(t, got), asJSON(t, want); !reflect.DeepEqual(g, w) {
		gb, _ := json.Marshal(g)
		wb, _ := json.Marshal(w)
		t.Errorf("%s:\n got  %s\n want %s", what, gb, wb)
	}
}

func TestFilesRead(t *testing.T) {
	big := bytes.Repeat([]byte("x"), maxFile+1)
	kube := newKube(t,
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "p1", Name: "charts"},
			BinaryData: map[string][]byte{"app.tgz": {0x1f, 0x8b, 0}, "both": []byte("binary")},
			Data:       map[string]string{"values.yaml": "a: 1\n", "both": "text"}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "p1", Name: "kc"}, Data: map[string][]byte{"config": []byte("kubeconfig")}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "p1", Name: "big"}, BinaryData: map[string][]byte{"big": big}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "elsewhere", Name: "other"}, Data: map[string]string{"k": "v"}},
	)
	f := files{kube: kube, namespace: "p1"}
	ctx := context.Background()
	for _, c := range []struct {
		name string
		ref  v1.KeyRef
		want string
	}{
		{"ConfigMap binaryData", v1.KeyRef{Kind: "ConfigMap", Name: "charts", Key: "app.tgz"}, "\x1f\x8b\x00"},
		{"ConfigMap data", v1.KeyRef{Kind: "ConfigMap", Name: "charts", Key: "values.yaml"}, "a: 1\n"},
		{"ConfigMap by default", v1.KeyRef{Name: "charts", Key: "values.yaml"}, "a: 1\n"},
		{"binaryData first", v1.KeyRef{Name: "charts", Key: "both"}, "binary"},
		{"Secret data", v1.KeyRef{Kind: "Secret", Name: "kc", Key: "config"}, "kubeconfig"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := f.read(ctx, c.ref)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != c.want {
				t.Errorf("read %q, want %q", got, c.want)
			}
		})
	}
	t.Run("missing key", func(t *testing.T) {
		for _, ref := range []v1.KeyRef{{Kind: "ConfigMap", Name: "charts", Key: "nope.tgz"}, {Kind: "Secret", Name: "kc", Key: "nope.tgz"}} {
			_, err := f.read(ctx, ref)
			r := mustRefuse(t, err, http.StatusBadRequest)
			if !strings.Contains(r.Message, `"nope.tgz"`) || !strings.Contains(r.Message, "p1/"+ref.Name) {
				t.Errorf("message %q names neither the key nor the object", r.Message)
			}
		}
	})
	t.Run("over maxFile", func(t *testing.T) {
		_, err := f.read(ctx, v1.KeyRef{Name: "big", Key: "big"})
		r := mustRefuse(t, err, http.StatusBadRequest)
		if !strings.Contains(r.Message, "over") {
			t.Errorf("message %q", r.Message)
		}
	})
	t.Run("another namespace is not read", func(t *testing.T) {
		_, err := f.read(ctx, v1.KeyRef{Name: "other", Key: "k"})
		if !apierrors.IsNotFound(err) {
			t.Errorf("err = %v, want NotFound", err)
		}
	})
}

// dig is a DIG of project p1 named by spec.name, with placement, a gac intent with a
// resource and its customization, and a rollout strategy.
func dig() *v1.DeploymentIntentGroup {
	return &v1.DeploymentIntentGroup{
		ObjectMeta: metav1.ObjectMeta{Namespace: "p1", Name: "shop-prod-k8s", Generation: 1},
		Spec: v1.DeploymentIntentGroupSpec{Named: v1.Named{Name: "prod", Description: "production"},
			CompositeApp: "shop", CompositeAppVersion: "v1", CompositeProfile: "default", Version: "r1", LogicalCloud: "lc",
			Placement: []v1.AppPlacement{{App: "web", AllOf: []v1.AllOf{{ClusterMatch: v1.ClusterMatch{ClusterProvider: "prov", ClusterLabel: "edge"}}}}},
		},
	}
}

func TestDigNode(t *testing.T) {
	o := dig()
	o.Spec.OverrideValues = []v1.OverrideValues{{App: "web", Values: map[string]string{"replicas": "2"}}}
	o.Spec.ActionIntents = []v1.ActionIntent{{Controller: "genericK8sIntent", Resource: "generic-k8s-intents", Name: "gac",
		Spec: js(t, map[string]any{"k": "v"}),
		Resources: []v1.IntentResource{{Resource: "resources", Name: "cm", Spec: js(t, map[string]any{"app": "web"}),
			File:      &v1.KeyRef{Name: "files", Key: "cm.yaml"},
			Resources: []v1.IntentLeaf{{Resource: "customizations", Name: "cust", Spec: js(t, map[string]any{"clusterSpecific": "false"})}}}}}}
	o.Spec.RolloutStrategy = js(t, map[string]any{"stages": []any{map[string]any{"clusters": 1}}})
	kube := newKube(t, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "p1", Name: "files"}, Data: map[string]string{"cm.yaml": "kind: ConfigMap"}})
	n, err := digNode(context.Background(), files{kube: kube, namespace: "p1"}, o.Namespace, o)
	if err != nil {
		t.Fatal(err)
	}
	p := "/projects/p1/composite-apps/shop/v1/deployment-intent-groups/prod"
	if n.path() != p || n.coll != "/projects/p1/composite-apps/shop/v1/deployment-intent-groups" {
		t.Fatalf("path %s coll %s, want %s", n.path(), n.coll, p)
	}
	if digPath(o.Namespace, o) != p {
		t.Errorf("digPath = %s", digPath(o.Namespace, o))
	}
	sameJSON(t, "DIG body", n.body, map[string]any{"metadata": map[string]any{"name": "prod", "description": "production"},
		"spec": map[string]any{"compositeProfile": "default", "version": "r1", "logicalCloud": "lc",
			"overrideValues": []any{map[string]any{"app": "web", "values": map[string]any{"replicas": "2"}}},
			"driftDetection": nil, "imagePinning": nil}})
	var paths []string
	for _, c := range n.children {
		paths = append(paths, c.path())
	}
	want := []string{p + "/generic-placement-intents/placement", p + "/generic-k8s-intents/gac", p + "/intents/intents", p + "/rollout-strategies/rollout"}
	if !reflect.DeepEqual(paths, want) {
		t.Fatalf("children %q, want %q (intents after what they name)", paths, want)
	}
	gpi, gac, intents, rollout := n.children[0], n.children[1], n.children[2], n.children[3]
	if len(gpi.children) != 1 || gpi.children[0].path() != p+"/generic-placement-intents/placement/app-intents/web" {
		t.Fatalf("placement children %v", gpi.children)
	}
	sameJSON(t, "app intent", gpi.children[0].body["spec"], map[string]any{"app": "web",
		"intent": map[string]any{"allOf": []any{map[string]any{"clusterProvider": "prov", "clusterLabel": "edge"}}, "anyOf": nil}})
	sameJSON(t, "intents", intents.body["spec"], map[string]any{"intent": map[string]any{"genericPlacementIntent": "placement", "genericK8sIntent": "gac"}})
	sameJSON(t, "gac spec", gac.body["spec"], map[string]any{"k": "v"})
	if len(gac.children) != 1 || gac.children[0].path() != p+"/generic-k8s-intents/gac/resources/cm" {
		t.Fatalf("gac children %v", gac.children)
	}
	res := gac.children[0]
	if !res.multipart || string(res.file) != "kind: ConfigMap" {
		t.Errorf("resource multipart=%v file=%q", res.multipart, res.file)
	}
	if len(res.children) != 1 || res.children[0].path() != p+"/generic-k8s-intents/gac/resources/cm/customizations/cust" || res.children[0].multipart {
		t.Errorf("customization %v", res.children)
	}
	sameJSON(t, "rollout", rollout.body["spec"], map[string]any{"stages": []any{map[string]any{"clusters": 1}}})
	if !reflect.DeepEqual(n.manages, []string{"rollout-strategies", "generic-k8s-intents"}) || !reflect.DeepEqual(gpi.manages, []string{"app-intents"}) {
		t.Errorf("manages %v / %v", n.manages, gpi.manages)
	}
}

// An action intent that left the spec is pruned: its collection stays managed while the
// status says the last apply wrote to it.
func TestDigNodeManagesTheCollectionsOfIntentsThatLeft(t *testing.T) {
	o := dig()
	o.Spec.ActionIntents = nil
	o.Status.IntentCollections = []string{"generic-k8s-intents", "../x"}
	n, err := digNode(context.Background(), files{}, o.Namespace, o)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(n.manages, []string{"rollout-strategies", "generic-k8s-intents"}) {
		t.Errorf("manages %v: want the left intent's collection, and no bad name", n.manages)
	}
	api := newFakeAPI(t)
	owner := ownerOf("DeploymentIntentGroup", o)
	api.seed(n.path(), owner, n.body)
	api.seed(n.path()+"/generic-k8s-intents/gac", owner, map[string]any{"metadata": map[string]any{"name": "gac"}, "spec": map[string]any{}})
	tr := api.tree(owner)
	if err := tr.apply(context.Background(), n); err != nil {
		t.Fatal(err)
	}
	if _, ok := api.item(n.path() + "/generic-k8s-intents/gac"); ok {
		t.Error("the intent that left the spec is still in temco")
	}
}

func TestDigNodeRefusesAMissingFile(t *testing.T) {
	o := dig()
	o.Spec.ActionIntents = []v1.ActionIntent{{Controller: "genericK8sIntent", Resource: "generic-k8s-intents", Name: "gac",
		Resources: []v1.IntentResource{{Resource: "resources", Name: "cm", File: &v1.KeyRef{Name: "files", Key: "absent.yaml"}}}}}
	kube := newKube(t, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "p1", Name: "files"}})
	_, err := digNode(context.Background(), files{kube: kube, namespace: "p1"}, o.Namespace, o)
	if r := mustRefuse(t, err, http.StatusBadRequest); !strings.Contains(r.Message, "absent.yaml") {
		t.Errorf("message %q", r.Message)
	}
}

func TestCompositeAppNode(t *testing.T) {
	o := &v1.CompositeApp{ObjectMeta: metav1.ObjectMeta{Namespace: "p1", Name: "shop-k8s"},
		Spec: v1.CompositeAppSpec{Named: v1.Named{Name: "shop", Description: "the shop"}, Version: "v1",
			Apps: []v1.App{
				{Name: "web", Chart: &v1.ChartSource{OCI: "oci://r/web", Version: "1.0.0"}},
				{Name: "db", Description: "the db", ChartFrom: &v1.KeyRef{Name: "charts", Key: "db.tgz"}},
			},
			Profiles: []v1.CompositeProfile{{Name: "default", Profiles: []v1.AppProfile{
				{Name: "web-p", App: "web", Archive: &v1.ChartSource{URL: "https://x/p.tgz"}},
				{Name: "db-p", App: "db", ArchiveFrom: &v1.KeyRef{Kind: "Secret", Name: "profiles", Key: "db.tgz"}},
			}}}}}
	kube := newKube(t,
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "p1", Name: "charts"}, BinaryData: map[string][]byte{"db.tgz": []byte("db chart")}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "p1", Name: "profiles"}, Data: map[string][]byte{"db.tgz": []byte("db profile")}})
	n, err := compositeAppNode(context.Background(), files{kube: kube, namespace: "p1"}, o.Namespace, o)
	if err != nil {
		t.Fatal(err)
	}
	ca := "/projects/p1/composite-apps/shop/v1"
	if n.path() != ca || n.coll != "/projects/p1/composite-apps" || n.name != "shop" {
		t.Fatalf("path %s coll %s name %s", n.path(), n.coll, n.name)
	}
	sameJSON(t, "composite app", n.body, map[string]any{"metadata": map[string]any{"name": "shop", "description": "the shop"},
		"spec": map[string]any{"compositeAppVersion": "v1"}})
	if !reflect.DeepEqual(n.manages, []string{"apps", "composite-profiles"}) {
		t.Errorf("manages %v", n.manages)
	}
	if len(n.children) != 3 {
		t.Fatalf("%d children, want 2 apps and 1 composite profile", len(n.children))
	}
	web, db, prof := n.children[0], n.children[1], n.children[2]
	if web.path() != ca+"/apps/web" || web.multipart {
		t.Errorf("web %s multipart=%v", web.path(), web.multipart)
	}
	sameJSON(t, "web", web.body, map[string]any{"metadata": map[string]any{"name": "web", "description": ""},
		"spec": map[string]any{"chart": map[string]any{"oci": "oci://r/web", "version": "1.0.0"}}})
	if db.path() != ca+"/apps/db" || !db.multipart || string(db.file) != "db chart" {
		t.Errorf("db %s multipart=%v file=%q", db.path(), db.multipart, db.file)
	}
	sameJSON(t, "db metadata", db.body["metadata"], map[string]any{"name": "db", "description": "the db"})
	if prof.path() != ca+"/composite-profiles/default" || len(prof.children) != 2 || !reflect.DeepEqual(prof.manages, []string{"profiles"}) {
		t.Fatalf("composite profile %s children %d manages %v", prof.path(), len(prof.children), prof.manages)
	}
	wp, dp := prof.children[0], prof.children[1]
	if wp.path() != ca+"/composite-profiles/default/profiles/web-p" || wp.multipart {
		t.Errorf("web profile %s", wp.path())
	}
	sameJSON(t, "web profile", wp.body["spec"], map[string]any{"app": "web", "archive": map[string]any{"url": "https://x/p.tgz"}})
	if dp.path() != ca+"/composite-profiles/default/profiles/db-p" || !dp.multipart || string(dp.file) != "db profile" {
		t.Errorf("db profile %s multipart=%v file=%q", dp.path(), dp.multipart, dp.file)
	}
	sameJSON(t, "db profile", dp.body["spec"], map[string]any{"app": "db"})
}

func TestCompositeAppNameDefaultsToMetadataName(t *testing.T) {
	o := &v1.CompositeApp{ObjectMeta: metav1.ObjectMeta{Namespace: "p1", Name: "shop"}, Spec: v1.CompositeAppSpec{Version: "v2"}}
	n, err := compositeAppNode(context.Background(), files{}, o.Namespace, o)
	if err != nil {
		t.Fatal(err)
	}
	if n.path() != "/projects/p1/composite-apps/shop/v2" {
		t.Errorf("path %s", n.path())
	}
}

func TestClusterNode(t *testing.T) {
	o := &v1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "edge-1-k8s"},
		Spec: v1.ClusterSpec{Named: v1.Named{Name: "edge1"}, Provider: "prov", Labels: []string{"edge", "eu"},
			Kubeconfig: v1.KeyRef{Kind: "Secret", Name: "edge1", Key: "kubeconfig"}}}
	kube := newKube(t,
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "temco-system", Name: "edge1"}, Data: map[string][]byte{"kubeconfig": []byte("kc")}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "edge1"}, Data: map[string][]byte{"kubeconfig": []byte("wrong")}})
	r := &Reconciler{Kube: kube, Namespace: "temco-system"}
	n, err := clusterNode(context.Background(), r.filesFor(o), o)
	if err != nil {
		t.Fatal(err)
	}
	if n.path() != "/cluster-providers/prov/clusters/edge1" || !n.multipart || string(n.file) != "kc" {
		t.Fatalf("path %s multipart=%v file=%q", n.path(), n.multipart, n.file)
	}
	if !reflect.DeepEqual(n.manages, []string{"labels"}) || len(n.children) != 2 {
		t.Fatalf("manages %v, %d children", n.manages, len(n.children))
	}
	for i, l := range []string{"edge", "eu"} {
		c := n.children[i]
		if c.path() != "/cluster-providers/prov/clusters/edge1/labels/"+l {
			t.Errorf("label %d at %s", i, c.path())
		}
		sameJSON(t, "label", c.body, map[string]any{"clusterLabel": l})
	}
}

func TestLogicalCloudNode(t *testing.T) {
	o := &v1.LogicalCloud{ObjectMeta: metav1.ObjectMeta{Name: "p1-lc"},
		Spec: v1.LogicalCloudSpec{Named: v1.Named{Name: "lc"}, Project: "p1", Level: "1", Namespace: "shop",
			Labels: map[string]string{"team": "a"}, Clusters: []v1.ClusterReference{{Provider: "prov", Cluster: "edge1"}}}}
	n := logicalCloudNode(o)
	if n.path() != "/projects/p1/logical-clouds/lc" {
		t.Fatalf("path %s", n.path())
	}
	sameJSON(t, "cloud", n.body, map[string]any{"metadata": map[string]any{"name": "lc", "description": ""},
		"spec": map[string]any{"level": "1", "namespace": "shop", "labels": map[string]any{"team": "a"}}})
	if len(n.children) != 1 || n.children[0].path() != "/projects/p1/logical-clouds/lc/cluster-references/prov-edge1" {
		t.Fatalf("children %v", n.children)
	}
	sameJSON(t, "reference", n.children[0].body, map[string]any{"metadata": map[string]any{"name": "prov-edge1", "description": ""},
		"spec": map[string]any{"clusterProvider": "prov", "cluster": "edge1"}})
}

func TestProjectAndProviderNodes(t *testing.T) {
	p := projectNode(&v1.Project{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Spec: v1.ProjectSpec{Named: v1.Named{Name: "shop"}}})
	if p.path() != "/projects/shop" {
		t.Errorf("project path %s", p.path())
	}
	if q := projectNode(&v1.Project{ObjectMeta: metav1.ObjectMeta{Name: "web"}}); q.path() != "/projects/web" {
		t.Errorf("project path %s", q.path())
	}
	if c := providerNode(&v1.ClusterProvider{ObjectMeta: metav1.ObjectMeta{Name: "prov"}}); c.path() != "/cluster-providers/prov" {
		t.Errorf("provider path %s", c.path())
	}
}

func TestHashNode(t *testing.T) {
	build := func(file string, replicas string) *node {
		o := dig()
		o.Spec.OverrideValues = []v1.OverrideValues{{App: "web", Values: map[string]string{"replicas": replicas}}}
		o.Spec.ActionIntents = []v1.ActionIntent{{Controller: "genericK8sIntent", Resource: "generic-k8s-intents", Name: "gac",
			Resources: []v1.IntentResource{{Resource: "resources", Name: "cm", File: &v1.KeyRef{Name: "files", Key: "cm.yaml"}}}}}
		kube := newKube(t, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "p1", Name: "files"}, Data: map[string]string{"cm.yaml": file}})
		n, err := digNode(context.Background(), files{kube: kube, namespace: "p1"}, o.Namespace, o)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	base := hashNode(build("a", "2"))
	if base == "" || hashNode(build("a", "2")) != base {
		t.Fatalf("equal trees hash %q and %q", base, hashNode(build("a", "2")))
	}
	if hashNode(build("b", "2")) == base {
		t.Error("a file's bytes changed, the hash did not")
	}
	if hashNode(build("a", "3")) == base {
		t.Error("a body field changed, the hash did not")
	}
	deep := build("a", "2")
	deep.children[0].children[0].body["spec"].(map[string]any)["app"] = "other"
	if hashNode(deep) == base {
		t.Error("a grandchild's body changed, the hash did not")
	}
}
