package logicalcloud

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/temco/temco/internal/model"
)

func TestObjectsOfAStandardAndAPrivilegedCloud(t *testing.T) {
	c := cloud{name: "team", spec: model.LogicalCloudSpec{Namespace: "team-ns", Level: "1", User: model.LogicalCloudUser{UserName: "alice"}},
		permissions: map[string]model.UserPermissionSpec{
			"rw":    {Namespace: "team-ns", APIGroups: []string{"apps"}, Resources: []string{"deployments"}, Verbs: []string{"get"}},
			"nodes": {Resources: []string{"nodes"}, Verbs: []string{"list"}},
		},
		quotas: []model.ClusterQuotaSpec{{"pods": "10"}, {"services": "5"}}}
	objs, err := c.objects(map[string]string{"emco/deployment-id": "1-logical-cloud"})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, o := range objs {
		got = append(got, o.Kind+"/"+o.Namespace+"/"+o.Name)
	}
	want := "Namespace//team-ns ResourceQuota/team-ns/team-quota ClusterRole//team-nodes ClusterRoleBinding//team-nodes Role/team-ns/team-rw RoleBinding/team-ns/team-rw"
	if strings.Join(got, " ") != want {
		t.Fatalf("objects %v, want %s", got, want)
	}
	var quota, binding map[string]any
	_ = json.Unmarshal([]byte(objs[1].Manifest), &quota)
	_ = json.Unmarshal([]byte(objs[5].Manifest), &binding)
	if hard := quota["spec"].(map[string]any)["hard"].(map[string]any); hard["pods"] != "10" || hard["services"] != "5" {
		t.Errorf("quota %v: the cluster quotas merge", hard)
	}
	subj := binding["subjects"].([]any)[0].(map[string]any)
	if subj["kind"] != "User" || subj["name"] != "alice" || binding["roleRef"].(map[string]any)["name"] != "team-rw" {
		t.Errorf("binding %v", binding)
	}
	if objs[0].Hash == "" || objs[0].Hash == objs[1].Hash {
		t.Error("objects need content hashes")
	}
	c.permissions["other"] = model.UserPermissionSpec{Namespace: "elsewhere", Resources: []string{"pods"}, Verbs: []string{"get"}}
	if _, err := c.objects(nil); err == nil || !strings.Contains(err.Error(), "its own namespace") {
		t.Errorf("a permission in another namespace: %v", err)
	}
}

func TestCSRNameCarriesProjectAndCloud(t *testing.T) {
	if got := csrName("/projects/p1/logical-clouds/team"); got != "temco-p1-team" {
		t.Errorf("csrName = %s", got)
	}
}
