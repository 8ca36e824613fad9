package api

import (
	"net/http"
	"strings"
	"testing"
)

// Logical clouds as dcm takes them: no level means a standard cloud ("1"), which needs no
// user, labels and a cluster reference's loadbalancerIp (any case) are kept, and an admin
// cloud takes no cluster quotas.
func TestLogicalCloudsAsDcmTakesThem(t *testing.T) {
	c := newClient(t)
	c.do("POST", "/projects", res("p1", nil)).must(t, 201)
	lcs := "/projects/p1/logical-clouds"
	var got struct {
		Spec struct {
			Level  string            `json:"level"`
			Labels map[string]string `json:"labels"`
		} `json:"spec"`
	}
	c.do("POST", lcs, res("std", map[string]any{"namespace": "team", "labels": map[string]string{"tier": "gold"},
		"user": map[string]any{"userName": "alice", "type": "certificate"}})).must(t, 201).json(t, &got)
	if got.Spec.Level != "1" || got.Spec.Labels["tier"] != "gold" {
		t.Errorf("stored %+v, want level 1 and the labels", got.Spec)
	}
	c.do("POST", lcs+"/std/cluster-quotas", res("q", map[string]any{"count/deployments.apps": "5", "requests.ephemeral-storage": "1Gi"})).must(t, 201)
	c.do("POST", lcs+"/std/user-permissions", res("sys", map[string]any{"namespace": "kube-system", "apiGroups": []string{""},
		"resources": []string{"configmaps"}, "verbs": []string{"get"}})).must(t, 201)
	r := c.do("POST", lcs+"/std/cluster-references", `{"metadata":{"name":"r"},"spec":{"clusterProvider":"cp","cluster":"c","loadbalancerIp":"10.0.0.1"}}`).must(t, 201)
	if !strings.Contains(string(r.body), `"loadBalancerIP":"10.0.0.1"`) {
		t.Errorf("cluster reference %s", r.body)
	}
	// dcm requires no user: the credential then carries a name temco derives. A standard
	// cloud still needs a valid namespace, which it creates on its clusters.
	c.do("POST", lcs, res("nouser", map[string]any{"namespace": "team-b"})).must(t, 201)
	for spec, want := range map[string]string{
		`{"level":"1"}`:                    "spec.namespace is required",
		`{"level":"1","namespace":"Team"}`: `spec.namespace "Team" is not a valid namespace`,
	} {
		body := `{"metadata":{"name":"bad"},"spec":` + spec + `}`
		if m := c.do("POST", lcs, body).must(t, http.StatusBadRequest).message(t); !strings.Contains(m, want) {
			t.Errorf("%s: message %q, want it to say %q", spec, m, want)
		}
	}
	c.do("POST", lcs, res("admin", map[string]any{"level": "0"})).must(t, 201)
	m := c.do("POST", lcs+"/admin/cluster-quotas", res("q", map[string]any{"pods": "5"})).must(t, http.StatusBadRequest).message(t)
	if !strings.Contains(m, "level 0") {
		t.Errorf("message %q", m)
	}
}
