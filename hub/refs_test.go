package hub

import (
	"context"
	"fmt"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/temco/temco/hubapi/v1alpha1"
)

func TestKeyRefsFindsEveryFileAnObjectReads(t *testing.T) {
	o := dig()
	o.Spec.ActionIntents = []v1.ActionIntent{{Controller: "genericK8sIntent", Resource: "generic-k8s-intents", Name: "g", Spec: &apiextensionsv1.JSON{Raw: []byte(`{"a":1}`)}, Resources: []v1.IntentResource{
		{Resource: "resources", Name: "r", File: &v1.KeyRef{Name: "gac-files", Key: "r.yaml"},
			Resources: []v1.IntentLeaf{{Resource: "customizations", Name: "c", File: &v1.KeyRef{Kind: "Secret", Name: "secret-files", Key: "c.yaml"}}}}}}}
	if got := fmt.Sprint(keyRefs(o)); got != "[{ gac-files r.yaml} {Secret secret-files c.yaml}]" {
		t.Errorf("a DIG's files %s", got)
	}
	a := &v1.CompositeApp{Spec: v1.CompositeAppSpec{Apps: []v1.App{{Name: "web", ChartFrom: &v1.KeyRef{Name: "charts", Key: "web.tgz"}},
		{Name: "db", Chart: &v1.ChartSource{OCI: "oci://r/db"}}},
		Profiles: []v1.CompositeProfile{{Name: "p", Profiles: []v1.AppProfile{{Name: "w", App: "web", ArchiveFrom: &v1.KeyRef{Name: "profiles", Key: "w.tgz"}}}}}}}
	if got := fmt.Sprint(keyRefs(a)); got != "[{ charts web.tgz} { profiles w.tgz}]" {
		t.Errorf("a composite app's files %s", got)
	}
	c := &v1.Cluster{Spec: v1.ClusterSpec{Kubeconfig: v1.KeyRef{Kind: "Secret", Name: "kc", Key: "config"}}}
	if got := fmt.Sprint(keyRefs(c)); got != "[{Secret kc config}]" {
		t.Errorf("a cluster's kubeconfig %s", got)
	}
}

// A changed ConfigMap or Secret wakes the objects that read it, in its namespace (the
// hub's, for a cluster-scoped kind), and no others.
func TestReadersOfAChangedConfigMap(t *testing.T) {
	app := func(ns, name, cm string) *v1.CompositeApp {
		return &v1.CompositeApp{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: v1.CompositeAppSpec{Version: "v1", Apps: []v1.App{{Name: "web", ChartFrom: &v1.KeyRef{Name: cm, Key: "web.tgz"}}}}}
	}
	cluster := &v1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "c1"}, Spec: v1.ClusterSpec{Kubeconfig: v1.KeyRef{Kind: "Secret", Name: "kc", Key: "config"}}}
	r := &Reconciler{Kube: newKube(t, app("p1", "reads", "charts"), app("p1", "other", "more-charts"), app("p2", "elsewhere", "charts"), cluster),
		Namespace: "temco-system"}
	apps := func() client.ObjectList { return &v1.CompositeAppList{} }
	clusters := func() client.ObjectList { return &v1.ClusterList{} }
	for _, c := range []struct {
		name    string
		kind    string
		changed client.Object
		list    func() client.ObjectList
		scoped  bool
		want    []string
	}{
		{"its ConfigMap", "ConfigMap", &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "p1", Name: "charts"}}, apps, false, []string{"p1/reads"}},
		{"a Secret of that name", "Secret", &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "p1", Name: "charts"}}, apps, false, nil},
		{"a ConfigMap nobody reads", "ConfigMap", &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "p1", Name: "unread"}}, apps, false, nil},
		{"a cluster's kubeconfig", "Secret", &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "temco-system", Name: "kc"}}, clusters, true, []string{"/c1"}},
		{"a Secret of that name elsewhere", "Secret", &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "p1", Name: "kc"}}, clusters, true, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			var got []string
			for _, req := range r.readers(c.kind, c.list, c.scoped)(context.Background(), c.changed) {
				got = append(got, req.String())
			}
			if !slices.Equal(got, c.want) {
				t.Errorf("woken %q, want %q", got, c.want)
			}
		})
	}
}
