package api

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// Clusters, kv pairs and cluster sync objects answer in EMCO's shapes: every cluster
// carries spec.gitOps, a GitOps cluster's file is a placeholder nobody reads, and
// ?key=K looks one value up.
func TestClusterShapesAsEMCO(t *testing.T) {
	c := newClient(t)
	c.do("POST", "/cluster-providers", res("cp1", nil)).must(t, 201)
	coll := "/cluster-providers/cp1/clusters"
	c.multipart("POST", coll, res("plain", nil), []byte(testKubeconfig)).must(t, 201)
	gitops := res("g1", map[string]any{"gitOps": map[string]string{"gitOpsType": "fluxcd", "gitOpsReferenceObject": "repo", "gitOpsResourceObject": "sync"}})
	c.multipart("POST", coll, gitops, []byte("ProjectName: p1\nnot: a kubeconfig\n")).must(t, 201)
	var got struct {
		Spec struct {
			GitOps map[string]string `json:"gitOps"`
		} `json:"spec"`
	}
	c.do("GET", coll+"/plain", nil).must(t, 200).json(t, &got)
	if g := got.Spec.GitOps; g == nil || g["gitOpsType"] != "" {
		t.Errorf("a plain cluster's spec.gitOps = %v, want present and empty", g)
	}
	c.do("GET", coll+"/g1", nil).must(t, 200).json(t, &got)
	if got.Spec.GitOps["gitOpsReferenceObject"] != "repo" {
		t.Errorf("gitOps = %v", got.Spec.GitOps)
	}
	// Nothing of the placeholder is kept as a kubeconfig.
	if d, err := c.store.Get(context.Background(), coll+"/g1"); err != nil || len(d.Secret) != 0 {
		t.Errorf("the GitOps cluster stores a secret (%v)", err)
	}
	if _, ok := got.Spec.GitOps["gitOpsSecrets"]; ok {
		t.Errorf("gitOpsSecrets answered though unset: %v", got.Spec.GitOps)
	}
	// temco's one addition: whether Secrets go to git.
	omit := res("g2", map[string]any{"gitOps": map[string]string{"gitOpsType": "fluxcd", "gitOpsReferenceObject": "repo", "gitOpsSecrets": "omit"}})
	c.multipart("POST", coll, omit, nil).must(t, 201)
	c.do("GET", coll+"/g2", nil).must(t, 200).json(t, &got)
	if got.Spec.GitOps["gitOpsSecrets"] != "omit" {
		t.Errorf("gitOps = %v", got.Spec.GitOps)
	}
	sops := res("g3", map[string]any{"gitOps": map[string]string{"gitOpsType": "fluxcd", "gitOpsReferenceObject": "repo", "gitOpsSecrets": "sops"}})
	if m := c.multipart("POST", coll, sops, nil).must(t, 400).message(t); !strings.Contains(m, `spec.gitOps.gitOpsSecrets "sops" is not supported`) {
		t.Errorf("message %q", m)
	}

	kv := coll + "/plain/kv-pairs"
	c.do("POST", kv, res("kv1", map[string]any{"kv": []any{map[string]any{"owner": "bob"}, map[string]any{"hw": "gpu"}}})).must(t, 201)
	var value map[string]any
	c.do("GET", kv+"/kv1?key=hw", nil).must(t, 200).json(t, &value)
	if value["value"] != "gpu" || len(value) != 1 {
		t.Errorf("?key=hw = %v", value)
	}
	c.do("GET", kv+"/kv1?key=nope", nil).must(t, http.StatusNotFound)
}

// A cluster sync object's secret values (the git token) are sealed at rest and masked in
// every answer; a PUT sending the mask back keeps the token.
func TestClusterSyncObjectsMaskTheirSecrets(t *testing.T) {
	c := newClient(t)
	c.do("POST", "/cluster-providers", res("cp1", nil)).must(t, 201)
	coll := "/cluster-providers/cp1/cluster-sync-objects"
	spec := map[string]any{"kv": []any{map[string]any{"gitType": "github"}, map[string]any{"userName": "u"},
		map[string]any{"gitToken": "ghp_SECRET"}, map[string]any{"repoName": "r"}, map[string]any{"branch": "main"}}}
	r := c.do("POST", coll, res("repo", spec)).must(t, 201)
	if strings.Contains(string(r.body), "ghp_SECRET") {
		t.Fatalf("the create answer shows the token: %s", r.body)
	}
	for _, path := range []string{coll, coll + "/repo", coll + "/repo?key=gitToken"} {
		if b := c.do("GET", path, nil).must(t, 200).body; strings.Contains(string(b), "ghp_SECRET") || !strings.Contains(string(b), secretMask) {
			t.Errorf("GET %s: %s", path, b)
		}
	}
	token := func() string {
		d, err := c.store.Get(context.Background(), coll+"/repo")
		if err != nil {
			t.Fatal(err)
		}
		plain, err := c.keys.Open(d.Secret, []byte(d.ID))
		if err != nil {
			t.Fatal(err)
		}
		var s map[string]string
		_ = json.Unmarshal(plain, &s)
		return s["gitToken"]
	}
	if got := token(); got != "ghp_SECRET" {
		t.Fatalf("sealed token %q", got)
	}
	// Round-tripping a GET keeps the token; a new token replaces it.
	spec["kv"].([]any)[2] = map[string]any{"gitToken": secretMask}
	c.do("PUT", coll+"/repo", res("repo", spec)).must(t, 200)
	if got := token(); got != "ghp_SECRET" {
		t.Fatalf("after a PUT of the mask the token is %q", got)
	}
	spec["kv"].([]any)[2] = map[string]any{"gitToken": "ghp_NEW"}
	c.do("PUT", coll+"/repo", res("repo", spec)).must(t, 200)
	if got := token(); got != "ghp_NEW" {
		t.Fatalf("after a PUT of a new token it is %q", got)
	}
	// Values are strings, as EMCO requires.
	c.do("POST", coll, res("bad", map[string]any{"kv": []any{map[string]any{"timeOut": 60}}})).must(t, http.StatusBadRequest)
}
