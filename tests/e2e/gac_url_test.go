package e2e

import (
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/temco/temco/internal/core/lifecycle"
)

// gac's $(URL)$ values as EMCO's test-gac example writes them, naming clm's kv-pairs
// route: temco reads each cluster's kv-pair from its store and the live ConfigMap on
// that cluster carries the value. A URL of another host, not on the worker's allow-list
// (the stack's worker has none), fails the instantiate before anything is applied,
// saying which customization and host; a malformed one is refused at create.
func TestGenericActionControllerURLValues(t *testing.T) {
	d := newDeployment(t, app{name: "gacurl", chart: webChart("gacurl"), placement: clusterLabel("edge")})
	d.create()
	c, gi := d.c, d.dig()+"/generic-k8s-intents/gi"
	kv := "gacurl-" + d.project
	clusters := []string{"cluster1", "cluster2"}
	for i, cl := range clusters {
		c.do("POST", "/cluster-providers/"+provider+"/clusters/"+cl+"/kv-pairs", res(kv, map[string]any{"kv": []any{
			map[string]any{"gateway": fmt.Sprintf("10.0.0.%d", i+1)}}})).must(t, 201)
	}
	t.Cleanup(func() {
		d.terminateIfRunning()
		for _, cl := range clusters {
			c.do("DELETE", "/cluster-providers/"+provider+"/clusters/"+cl+"/kv-pairs/"+kv, nil)
		}
	})

	c.do("POST", d.dig()+"/generic-k8s-intents", res("gi", nil)).must(t, 201)
	c.multipart("POST", gi+"/resources", res("gateway", map[string]any{"app": "gacurl", "newObject": "true",
		"resourceGVK": map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "name": "gacurl-gateway"}}),
		[]byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: gacurl-gateway\ndata:\n  from: template\n")).must(t, 201)
	customization := func(name, cluster, value string) map[string]any {
		return res(name, map[string]any{"clusterSpecific": "true",
			"clusterInfo": map[string]any{"scope": "name", "clusterProvider": provider, "cluster": cluster, "mode": "allow"},
			"patchType":   "json", "patchJson": []any{map[string]any{"op": "add", "path": "/data/gateway", "value": value}}})
	}
	for _, cl := range clusters {
		c.multipart("POST", gi+"/resources/gateway/customizations", customization("kv-"+cl, cl,
			"$(http://emco-clm:9061/v2/cluster-providers/local/clusters/{cluster}/kv-pairs/"+kv+"?key=gateway)$"), nil).must(t, 201)
	}
	bad := c.multipart("POST", gi+"/resources/gateway/customizations", customization("bad", "cluster1", "$(http://emco-clm:9061/v2/cluster-providers/local/clusters/{cluster}/kv-pairs/"+kv+")$"), nil)
	if bad.code != 400 || !strings.Contains(string(bad.body), "spec.patchJson[0].value") {
		t.Errorf("a kv-pairs URL without ?key=: %d %s, want 400 naming spec.patchJson[0].value", bad.code, bad.body)
	}
	// The api's own address: an internal host no project may reach through gac.
	api, _ := url.Parse(apiURL)
	c.multipart("POST", gi+"/resources", res("probe", map[string]any{"app": "gacurl", "newObject": "true",
		"resourceGVK": map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "name": "gacurl-probe"}}),
		[]byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: gacurl-probe\ndata:\n  from: template\n")).must(t, 201)
	c.multipart("POST", gi+"/resources/probe/customizations", customization("probe", "cluster1", "$(http://"+api.Host+"/v2/projects)$"), nil).must(t, 201)
	d.useController("gac", "action", "gi")

	refused := d.operate(lifecycle.OpInstantiate)
	s := d.await("InstantiateFailed", 2*time.Minute, "", func(s status) bool { return s.Status == lifecycle.StatusInstantiateFailed })
	for _, part := range []string{"gac resource probe, customization probe", "host " + api.Host, "not on the worker's --gac-url-allow list"} {
		if !strings.Contains(s.Error, part) {
			t.Errorf("status error %q does not say %q", s.Error, part)
		}
	}
	for i := range clusters {
		if objs := objectsOf(t, stack.Clusters[i], refused.ContextID, "gacurl"); len(objs) > 0 || liveObject(t, i, configMaps, "gacurl-gateway") != nil {
			t.Errorf("the refused instantiate applied %v to cluster%d", objs, i+1)
		}
	}

	c.do("DELETE", gi+"/resources/probe/customizations/probe", nil).must(t, 204)
	c.do("DELETE", gi+"/resources/probe", nil).must(t, 204)
	// Refused before anything was applied, the DIG is still Approved (as EMCO leaves it).
	d.operate(lifecycle.OpInstantiate)
	d.await("Instantiated", 2*time.Minute, "", func(s status) bool { return s.Status == lifecycle.StatusInstantiated })
	for i := range clusters {
		cm := liveObject(t, i, configMaps, "gacurl-gateway")
		if want := fmt.Sprintf("map[from:template gateway:10.0.0.%d]", i+1); cm == nil || fmt.Sprint(cm["data"]) != want {
			t.Errorf("cluster%d ConfigMap gacurl-gateway %v, want data %s (its kv-pair)", i+1, cm, want)
		}
	}
	if liveObject(t, 2, configMaps, "gacurl-gateway") != nil {
		t.Error("cluster3, where the app is not placed, got gac's ConfigMap")
	}
}
