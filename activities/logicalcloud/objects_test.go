package logicalcloud

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/temco/temco/activities/cluster"
	"github.com/temco/temco/internal/adapters/syncobject"
	"github.com/temco/temco/internal/core/model"
)

func TestObjectsOfAStandardAndAPrivilegedCloud(t *testing.T) {
	c := cloud{name: "team", spec: model.LogicalCloudSpec{Namespace: "team-ns", Level: "1", User: model.LogicalCloudUser{UserName: "alice"},
		Labels: map[string]string{"tier": "gold"}},
		permissions: map[string]model.UserPermissionSpec{
			"rw":    {Namespace: "team-ns", APIGroups: []string{"apps"}, Resources: []string{"deployments"}, Verbs: []string{"get"}},
			"nodes": {Resources: []string{"nodes"}, Verbs: []string{"list"}},
			"sys":   {Namespace: "kube-system", Resources: []string{"configmaps"}, Verbs: []string{"get"}},
		},
		quotas: map[string]model.ClusterQuotaSpec{"q1": {"pods": "10"}, "q2": {"count/deployments.apps": "5"}}}
	objs, err := c.objects(map[string]string{"emco/deployment-id": "1-logical-cloud"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, o := range objs {
		got = append(got, o.Kind+"/"+o.Namespace+"/"+o.Name)
	}
	want := "Namespace//team-ns ResourceQuota/team-ns/q1 ResourceQuota/team-ns/q2 ClusterRole//team-nodes ClusterRoleBinding//team-nodes " +
		"Role/team-ns/team-rw RoleBinding/team-ns/team-rw Role/kube-system/team-sys RoleBinding/kube-system/team-sys"
	if strings.Join(got, " ") != want {
		t.Fatalf("objects %v, want %s", got, want)
	}
	var ns, quota, binding map[string]any
	_ = json.Unmarshal([]byte(objs[0].Manifest), &ns)
	_ = json.Unmarshal([]byte(objs[2].Manifest), &quota)
	_ = json.Unmarshal([]byte(objs[6].Manifest), &binding)
	if l := ns["metadata"].(map[string]any)["labels"].(map[string]any); l["tier"] != "gold" || l["emco/deployment-id"] != "1-logical-cloud" {
		t.Errorf("namespace labels %v", l)
	}
	if hard := quota["spec"].(map[string]any)["hard"].(map[string]any); hard["count/deployments.apps"] != "5" || len(hard) != 1 {
		t.Errorf("quota q2 %v", hard)
	}
	subj := binding["subjects"].([]any)[0].(map[string]any)
	if subj["kind"] != "User" || subj["name"] != "alice" || binding["roleRef"].(map[string]any)["name"] != "team-rw" {
		t.Errorf("binding %v", binding)
	}
	if objs[0].Hash == "" || objs[0].Hash == objs[1].Hash {
		t.Error("objects need content hashes")
	}
}

// A cloud without spec.user (dcm requires none) binds its permissions to a user named
// after its project and itself, the name its credential carries.
func TestACloudWithoutUserBindsTheDefaultUser(t *testing.T) {
	c := cloud{project: "p1", name: "team", spec: model.LogicalCloudSpec{Namespace: "team-ns", Level: "1"},
		permissions: map[string]model.UserPermissionSpec{"rw": {Namespace: "team-ns", Resources: []string{"pods"}, Verbs: []string{"get"}}}}
	if got, want := c.user(), "temco:logical-cloud:p1:team"; got != want {
		t.Errorf("user %q, want %q", got, want)
	}
	objs, err := c.objects(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	var binding map[string]any
	_ = json.Unmarshal([]byte(objs[2].Manifest), &binding)
	if subj := binding["subjects"].([]any)[0].(map[string]any); objs[2].Kind != "RoleBinding" || subj["name"] != c.user() {
		t.Errorf("%s %v, want a RoleBinding to %s", objs[2].Kind, binding["subjects"], c.user())
	}
}

func TestCSRNameCarriesProjectAndCloud(t *testing.T) {
	if got := csrName("/projects/p1/logical-clouds/team"); got != "temco-p1-team" {
		t.Errorf("csrName = %s", got)
	}
}

// On a GitOps cluster, as dcm does there, the cloud also gets its ServiceAccount
// <cloud>-sa in its namespace, right after the namespace, and every role is bound to it
// besides the user: Flux impersonates it to apply the cloud's deployments.
func TestObjectsOnAGitOpsCluster(t *testing.T) {
	c := cloud{project: "p1", name: "team", spec: model.LogicalCloudSpec{Namespace: "team-ns", Level: "1", Labels: map[string]string{"tier": "gold"}},
		permissions: map[string]model.UserPermissionSpec{
			"rw":    {Namespace: "team-ns", Resources: []string{"pods"}, Verbs: []string{"get"}},
			"nodes": {Resources: []string{"nodes"}, Verbs: []string{"list"}},
		}}
	flux := &cluster.GitOpsAccess{Key: "edge+c1", Type: syncobject.FluxCD, URL: "http://git/r.git", Branch: "main"}
	objs, err := c.objects(map[string]string{"emco/deployment-id": "1-logical-cloud"}, flux)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, o := range objs {
		got = append(got, o.Kind+"/"+o.Namespace+"/"+o.Name)
	}
	want := "Namespace//team-ns ServiceAccount/team-ns/team-sa ClusterRole//team-nodes ClusterRoleBinding//team-nodes Role/team-ns/team-rw RoleBinding/team-ns/team-rw"
	if strings.Join(got, " ") != want {
		t.Fatalf("objects %v, want %s", got, want)
	}
	var sa map[string]any
	_ = json.Unmarshal([]byte(objs[1].Manifest), &sa)
	if l := sa["metadata"].(map[string]any)["labels"].(map[string]any); l["tier"] != "gold" || l["emco/deployment-id"] != "1-logical-cloud" {
		t.Errorf("ServiceAccount labels %v", l)
	}
	for _, i := range []int{3, 5} {
		var binding map[string]any
		_ = json.Unmarshal([]byte(objs[i].Manifest), &binding)
		subjects := binding["subjects"].([]any)
		sub := subjects[len(subjects)-1].(map[string]any)
		if len(subjects) != 2 || subjects[0].(map[string]any)["name"] != c.user() ||
			sub["kind"] != "ServiceAccount" || sub["name"] != "team-sa" || sub["namespace"] != "team-ns" {
			t.Errorf("%s subjects %v", objs[i].Kind, subjects)
		}
	}
	plain, _ := c.objects(nil, nil)
	for _, o := range plain {
		if o.Kind == "ServiceAccount" {
			t.Error("a ServiceAccount for a cluster reached with a kubeconfig")
		}
	}
}

// On an anthos cluster, as dcm and rsync's anthos plugin do there: no ServiceAccount of
// the cloud's, but its RepoSync repo-sync-<cloud> in its namespace, reading the
// cluster's repository at namespaces/<ns>/<cluster>, where the cloud's deployments are
// committed; every role is bound to the RepoSync's reconciler besides the user. An
// azureArcV2 cluster is refused.
func TestObjectsOnAnAnthosCluster(t *testing.T) {
	c := cloud{project: "p1", name: "lc1", spec: model.LogicalCloudSpec{Namespace: "privileged-lc-ns", Level: "1"},
		permissions: map[string]model.UserPermissionSpec{
			"primary": {Namespace: "privileged-lc-ns", APIGroups: []string{"*"}, Resources: []string{"*"}, Verbs: []string{"*"}},
			"cluster": {APIGroups: []string{"*"}, Resources: []string{"*"}, Verbs: []string{"*"}},
		}}
	on := &cluster.GitOpsAccess{Key: "provider-anthos+acm-cluster", Type: syncobject.Anthos, URL: "http://git/r.git", Branch: "main"}
	objs, err := c.objects(nil, on)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, o := range objs {
		got = append(got, o.Group+"/"+o.Kind+"/"+o.Namespace+"/"+o.Name)
	}
	want := "/Namespace//privileged-lc-ns configsync.gke.io/RepoSync/privileged-lc-ns/repo-sync-lc1 " +
		"rbac.authorization.k8s.io/ClusterRole//lc1-cluster rbac.authorization.k8s.io/ClusterRoleBinding//lc1-cluster " +
		"rbac.authorization.k8s.io/Role/privileged-lc-ns/lc1-primary rbac.authorization.k8s.io/RoleBinding/privileged-lc-ns/lc1-primary"
	if strings.Join(got, " ") != want {
		t.Fatalf("objects %v, want %s", got, want)
	}
	var rs struct {
		APIVersion string
		Spec       struct{ Git map[string]any }
	}
	_ = json.Unmarshal([]byte(objs[1].Manifest), &rs)
	wantGit := map[string]any{"repo": "http://git/r.git", "branch": "main", "revision": "HEAD",
		"dir": "/namespaces/privileged-lc-ns/provider-anthos+acm-cluster", "auth": "none", "noSSLVerify": false}
	if rs.APIVersion != "configsync.gke.io/v1beta1" || fmt.Sprint(rs.Spec.Git) != fmt.Sprint(wantGit) {
		t.Errorf("RepoSync %+v", rs)
	}
	for _, i := range []int{3, 5} {
		var binding map[string]any
		_ = json.Unmarshal([]byte(objs[i].Manifest), &binding)
		subjects := binding["subjects"].([]any)
		sub := subjects[len(subjects)-1].(map[string]any)
		if len(subjects) != 2 || sub["kind"] != "ServiceAccount" || sub["namespace"] != "config-management-system" ||
			sub["name"] != "ns-reconciler-privileged-lc-ns-repo-sync-lc1-13" {
			t.Errorf("%s subjects %v", objs[i].Kind, subjects)
		}
	}
	if _, err := c.objects(nil, &cluster.GitOpsAccess{Key: "p+arc", Type: syncobject.AzureArcV2}); err == nil {
		t.Error("a level 1 cloud's objects for an azureArcV2 cluster")
	}
}
