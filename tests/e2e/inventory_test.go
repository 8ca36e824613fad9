package e2e

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdv1 "k8s.io/client-go/tools/clientcmd/api/v1"
	"sigs.k8s.io/cluster-inventory-api/apis/v1alpha1"

	"github.com/temco/temco/features/inventory/flow"
	"github.com/temco/temco/internal/core/inventory"
	"github.com/temco/temco/internal/core/lifecycle"
	"github.com/temco/temco/internal/dev/testenv/poll"
)

// inventoryStatus is the part of an inventory's status the test reads.
type inventoryStatus struct {
	Error    string `json:"error"`
	Profiles []struct {
		Profile string   `json:"profile"`
		State   string   `json:"state"`
		Reason  string   `json:"reason"`
		Labels  []string `json:"labels"`
	} `json:"profiles"`
	Decisions []struct {
		DIG      string `json:"dig"`
		Clusters int    `json:"clusters"`
	} `json:"decisions"`
	Evictions []flow.EvictionStatus `json:"evictions"`
}

func (s inventoryStatus) profile(name string) string {
	for _, p := range s.Profiles {
		if p.Profile == name {
			return p.State
		}
	}
	return ""
}

// A cluster inventory on a hub (cluster1, which has the cluster inventory API's CRDs as
// every local cluster): a ClusterProfile whose access provider names a Secret holding a
// ServiceAccount token of cluster3 registers cluster3 under provider "inv", with labels
// from the profile; a DIG deploys there (and on cluster2, named) with those credentials, and
// its clusters appear as a PlacementDecision on the hub; an unhealthy, then deleted, profile
// takes the cluster out of placements by label: once deleted, the DIG is updated through
// its ordinary update and leaves it; a terminated DIG's decision goes; deleting the
// inventory ends its workflow.
func TestClusterInventoryFromAHub(t *testing.T) {
	ctx := context.Background()
	hub, member := stack.Clusters[0], stack.Clusters[2]
	hubCS, err := hub.Clientset()
	if err != nil {
		t.Fatal(err)
	}
	hubDyn, err := hub.Dynamic()
	if err != nil {
		t.Fatal(err)
	}
	memberCS, err := member.Clientset()
	if err != nil {
		t.Fatal(err)
	}
	const ns = "fleet"
	if _, err := hubCS.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = hubCS.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{}) })

	// temco's identity on the member: a ServiceAccount with cluster-admin, and its token.
	if _, err := memberCS.CoreV1().ServiceAccounts("default").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "temco-inventory"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "temco-inventory"},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "cluster-admin"},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: "temco-inventory", Namespace: "default"}}}
	if _, err := memberCS.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = memberCS.RbacV1().ClusterRoleBindings().Delete(context.Background(), "temco-inventory", metav1.DeleteOptions{})
		_ = memberCS.CoreV1().ServiceAccounts("default").Delete(context.Background(), "temco-inventory", metav1.DeleteOptions{})
	})
	hour := int64(3600)
	tr, err := memberCS.CoreV1().ServiceAccounts("default").CreateToken(ctx, "temco-inventory",
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &hour}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	kc, err := clientcmd.LoadFromFile(member.Kubeconfig())
	if err != nil {
		t.Fatal(err)
	}
	memberAPI := kc.Clusters[kc.Contexts[kc.CurrentContext].Cluster]

	// On the hub: the token's Secret, labelled with the profile it is for, and the profile
	// naming it (secretreader), with a second profile temco cannot use and a third naming
	// the member's Secret, which is not its own.
	if _, err := hubCS.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "member",
		Labels: map[string]string{inventory.LabelClusterProfile: "member"}},
		Data: map[string][]byte{"token": []byte(tr.Status.Token)}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	profiles := hubDyn.Resource(v1alpha1.GroupVersion.WithResource("clusterprofiles")).Namespace(ns)
	putProfile := func(name, provider string, healthy metav1.ConditionStatus) {
		t.Helper()
		p := &v1alpha1.ClusterProfile{
			TypeMeta:   metav1.TypeMeta{APIVersion: v1alpha1.GroupVersion.String(), Kind: "ClusterProfile"},
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{"region": "west"}},
			Spec:       v1alpha1.ClusterProfileSpec{DisplayName: name, ClusterManager: v1alpha1.ClusterManager{Name: "e2e"}},
		}
		u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(p)
		if err != nil {
			t.Fatal(err)
		}
		cur, err := profiles.Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			cur, err = profiles.Create(ctx, &unstructured.Unstructured{Object: u}, metav1.CreateOptions{})
		}
		if err != nil {
			t.Fatal(err)
		}
		p.Status = v1alpha1.ClusterProfileStatus{
			Conditions: []metav1.Condition{{Type: v1alpha1.ClusterConditionControlPlaneHealthy, Status: healthy, Reason: "Probed",
				Message: "probed by the test", LastTransitionTime: metav1.Now()}},
			Properties: []v1alpha1.Property{{Name: "location", Value: "lab"}},
			AccessProviders: []v1alpha1.AccessProvider{{Name: provider, Cluster: clientcmdv1.Cluster{Server: memberAPI.Server,
				CertificateAuthorityData: memberAPI.CertificateAuthorityData,
				Extensions: []clientcmdv1.NamedExtension{{Name: "client.authentication.k8s.io/exec",
					Extension: runtime.RawExtension{Raw: []byte(`{"clusterName":"member"}`)}}}}}},
		}
		st, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&p.Status)
		if err != nil {
			t.Fatal(err)
		}
		cur.Object["status"] = st
		if _, err := profiles.UpdateStatus(ctx, cur, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	putProfile("member", inventory.ProviderSecretReader, metav1.ConditionTrue)
	putProfile("nocreds", "some-exec-plugin", metav1.ConditionTrue)
	putProfile("impostor", inventory.ProviderSecretReader, metav1.ConditionTrue)

	// The inventory, under a provider of its own.
	c := &client{t: t}
	c.do("POST", "/cluster-providers", res("inv", nil)).must(t, 201)
	hubKubeconfig, err := os.ReadFile(hub.Kubeconfig())
	if err != nil {
		t.Fatal(err)
	}
	inv := "/cluster-providers/inv/cluster-inventories"
	c.multipart("POST", inv, res("hub", map[string]any{"namespace": ns, "syncInterval": "5s"}), hubKubeconfig).must(t, 201)
	c.multipart("POST", inv, res("second", map[string]any{"namespace": ns}), hubKubeconfig).must(t, 409)
	read := func() inventoryStatus { return getAs[inventoryStatus](t, c, inv+"/hub/status") }
	s := awaitValue(t, "member registered", 2*time.Minute, read, func(s inventoryStatus) bool {
		return s.profile("member") == flow.ProfileRegistered && s.profile("nocreds") == flow.ProfileSkipped &&
			s.profile("impostor") == flow.ProfileSkipped
	})
	for _, p := range s.Profiles {
		if p.Profile == "nocreds" && !strings.Contains(p.Reason, "no access provider temco can use") {
			t.Errorf("nocreds skipped for %q", p.Reason)
		}
		if p.Profile == "impostor" && !strings.Contains(p.Reason, `Secret "member" is labelled x-k8s.io/cluster-profile=member`) {
			t.Errorf("impostor skipped for %q", p.Reason)
		}
	}
	c.do("GET", "/cluster-providers/inv/clusters/nocreds", nil).must(t, 404)
	c.do("GET", "/cluster-providers/inv/clusters/impostor", nil).must(t, 404)
	labels := func() []string {
		var out []string
		for _, l := range getAs[[]map[string]string](t, c, "/cluster-providers/inv/clusters/member/labels") {
			out = append(out, l["clusterLabel"])
		}
		slices.Sort(out)
		return out
	}
	if got := labels(); !slices.Equal(got, []string{"location_lab", "region_west"}) {
		t.Errorf("member's labels %v", got)
	}

	// A DIG on it, in a logical cloud over it: deployed with the profile's credentials, and
	// published as a PlacementDecision.
	d := newDeployment(t, app{name: "inventoried", chart: webChart("inventoried"),
		placement: map[string]any{"allOf": []any{map[string]any{"clusterProvider": "inv", "clusterLabel": "region_west"},
			map[string]any{"clusterProvider": provider, "cluster": "cluster2"}}}})
	d.logicalCloud = "inv"
	d.setUpCloud = func(d *deployment) {
		lc := "/projects/" + d.project + "/logical-clouds/inv"
		d.c.do("POST", "/projects/"+d.project+"/logical-clouds", res("inv", map[string]any{"level": "0"})).must(t, 201)
		d.c.do("POST", lc+"/cluster-references", res("member", map[string]any{"clusterProvider": "inv", "cluster": "member"})).must(t, 201)
		d.c.do("POST", lc+"/cluster-references", res("cluster2", map[string]any{"clusterProvider": provider, "cluster": "cluster2"})).must(t, 201)
		d.c.do("POST", lc+"/instantiate", nil).must(t, 202)
		d.awaitCloud("inv", lifecycle.StatusInstantiated)
	}
	d.create()
	inst := d.operate(lifecycle.OpInstantiate).ContextID
	d.await("Instantiated", 2*time.Minute, "", func(s status) bool { return s.Status == lifecycle.StatusInstantiated })
	awaitDeployment(t, memberCS, "inventoried", true)
	decisions := hubDyn.Resource(v1alpha1.GroupVersion.WithResource("placementdecisions")).Namespace(ns)
	key := inventory.DecisionKey(d.ref().ID())
	poll.Until(t, "the DIG's PlacementDecision on the hub", time.Minute, func(ctx context.Context) error {
		l, err := decisions.List(ctx, metav1.ListOptions{LabelSelector: v1alpha1.DecisionKeyLabel + "=" + key})
		if err != nil {
			return err
		}
		if len(l.Items) != 1 {
			return fmt.Errorf("%d slices; the inventory: %s", len(l.Items), pretty(read()))
		}
		var pd v1alpha1.PlacementDecision
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(l.Items[0].Object, &pd); err != nil {
			return err
		}
		if len(pd.Decisions) != 1 || pd.Decisions[0].ClusterProfileRef != (v1alpha1.ClusterProfileReference{Name: "member", Namespace: ns}) ||
			pd.SchedulerName != "temco" || pd.Labels[v1alpha1.DecisionIndexLabel] != "0" {
			return fmt.Errorf("decision %+v", pd)
		}
		return nil
	})

	// Unhealthy, then gone: out of placements by label.
	putProfile("member", inventory.ProviderSecretReader, metav1.ConditionFalse)
	awaitValue(t, "member unhealthy", time.Minute, read, func(s inventoryStatus) bool { return s.profile("member") == flow.ProfileUnhealthy })
	if got := labels(); !slices.Equal(got, []string{inventory.LabelUnhealthy}) {
		t.Errorf("an unhealthy profile's cluster has labels %v", got)
	}
	if err := profiles.Delete(ctx, "member", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	awaitValue(t, "member removed", time.Minute, read, func(s inventoryStatus) bool { return s.profile("member") == flow.ProfileRemoved })
	if got := labels(); !slices.Equal(got, []string{inventory.LabelRemoved}) {
		t.Errorf("a removed profile's cluster has labels %v", got)
	}
	// Removed: the DIG is updated and leaves the member; cluster2, named, keeps its app.
	s = awaitValue(t, "the DIG's eviction", time.Minute, read, func(s inventoryStatus) bool { return len(s.Evictions) > 0 })
	if e := s.Evictions[0]; len(s.Evictions) != 1 || e.DIG != d.ref().ID() || e.Cluster != "inv+member" || e.Action != flow.EvictionUpdate {
		t.Errorf("evictions %+v", s.Evictions)
	}
	awaitDeployment(t, memberCS, "inventoried", false)
	d.await("updated off the member", 2*time.Minute, "", func(s status) bool {
		last := s.States.Actions[len(s.States.Actions)-1]
		return s.Status == lifecycle.StatusInstantiated && last.State == lifecycle.StateInstantiated && last.Revision == 2
	})
	if got := keys(snapshot(t, inst, "inventoried")); len(got) == 0 || !strings.HasPrefix(got[0], "cluster2/") || strings.Contains(strings.Join(got, " "), "cluster3/") {
		t.Errorf("the app's objects after the eviction: %v", got)
	}

	// A terminated DIG has no decision; a deleted inventory ends its workflow.
	d.operate(lifecycle.OpTerminate)
	d.await("Terminated", 2*time.Minute, "", func(s status) bool { return s.Status == lifecycle.StatusTerminated })
	poll.Until(t, "the terminated DIG's decision gone", time.Minute, func(ctx context.Context) error {
		l, err := decisions.List(ctx, metav1.ListOptions{LabelSelector: v1alpha1.DecisionKeyLabel + "=" + key})
		if err != nil {
			return err
		}
		if len(l.Items) != 0 {
			return fmt.Errorf("%d slices", len(l.Items))
		}
		return nil
	})
	c.do("DELETE", inv+"/hub", nil).must(t, 204)
	tc := dialTemporal(t)
	defer tc.Close()
	id := flow.InventoryInput{Provider: "inv", Name: "hub"}.WorkflowID()
	wctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := tc.GetWorkflow(wctx, id, "").Get(wctx, nil); err != nil {
		t.Errorf("the inventory's workflow did not end with it: %v", err)
	}
	recordHistory(t, id, "ClusterInventory-register-unhealthy-removed-evicted")
}
