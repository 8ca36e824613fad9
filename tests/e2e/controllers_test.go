package e2e

import (
	"context"
	"encoding/base64"
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	apiclient "github.com/temco/temco/client"
	"github.com/temco/temco/internal/core/lifecycle"
)

// multipartFiles sends a "metadata" part and one "files" part per file (gac customizations).
func (c *client) multipartFiles(method, path string, metadata any, files map[string]string) response {
	req := apiclient.Request{Method: method, Path: path, Body: metadata, Multipart: true}
	for name, content := range files {
		req.Files = append(req.Files, apiclient.File{Part: "files", Name: name, Data: []byte(content)})
	}
	return c.request(req)
}

// useController registers a controller under a name of the test's own, names it in the
// DIG's intents with intent, and approves the DIG again.
func (d *deployment) useController(host, typ, intent string) string {
	d.t.Helper()
	name := host + "-" + d.project
	d.c.do("POST", "/controllers", res(name, map[string]any{"host": host, "port": 9033, "type": typ, "priority": 1})).must(d.t, 201)
	d.c.do("POST", d.dig()+"/intents", res(name+"-intents", map[string]any{"intent": map[string]string{name: intent}})).must(d.t, 201)
	d.c.do("POST", d.dig()+"/approve", nil).must(d.t, 202)
	return name
}

// liveObject reads one object from a cluster of the shared stack (nil when absent).
func liveObject(t *testing.T, cluster int, gvr schema.GroupVersionResource, name string) map[string]any {
	t.Helper()
	o, err := dynClient(t, stack.Clusters[cluster]).Resource(gvr).Namespace("default").Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		return nil
	}
	return o.Object
}

var (
	configMaps  = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	deployments = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
)

func replicas(o map[string]any) string {
	if o == nil {
		return "absent"
	}
	return fmt.Sprint(o["spec"].(map[string]any)["replicas"])
}

// gac as EMCO applies it: a new ConfigMap from files on every cluster of the app, and a
// JSON patch of the app's Deployment on one cluster by name; an update of the patch
// changes it there; terminate removes what gac added.
func TestGenericActionController(t *testing.T) {
	d := newDeployment(t, app{name: "web", chart: webChart("web"), placement: clusterLabel("edge")})
	d.create()
	c, gi := d.c, d.dig()+"/generic-k8s-intents/gi"
	c.do("POST", d.dig()+"/generic-k8s-intents", res("gi", nil)).must(t, 201)
	c.multipart("POST", gi+"/resources", res("extra", map[string]any{"app": "web", "newObject": "true",
		"resourceGVK": map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "name": "extra"}}), nil).must(t, 201)
	c.multipartFiles("POST", gi+"/resources/extra/customizations", res("data", map[string]any{"clusterSpecific": "false",
		"clusterInfo":      map[string]any{"scope": "label", "clusterProvider": provider, "mode": "allow"},
		"configMapOptions": map[string]any{"dataKeyOptions": []any{map[string]any{"fileName": "a.txt", "keyName": "alpha"}}}}),
		map[string]string{"a.txt": "one", "b.txt": "two"}).must(t, 201)
	c.multipart("POST", gi+"/resources", res("web-deployment", map[string]any{"app": "web", "newObject": "false",
		"resourceGVK": map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}}), nil).must(t, 201)
	patch := func(method, path string, n int) response {
		return c.multipart(method, path, res("scale", map[string]any{"clusterSpecific": "true",
			"clusterInfo": map[string]any{"scope": "name", "clusterProvider": provider, "cluster": "cluster2", "mode": "allow"},
			"patchType":   "json", "patchJson": []any{map[string]any{"op": "replace", "path": "/spec/replicas", "value": n}}}), nil)
	}
	patch("POST", gi+"/resources/web-deployment/customizations", 3).must(t, 201)
	// A bad body is refused with its reason and stores nothing.
	c.multipart("POST", gi+"/resources", res("bad", map[string]any{"app": "web", "newObject": "maybe",
		"resourceGVK": map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "name": "x"}}), nil).must(t, 400)
	c.do("GET", gi+"/resources/bad", nil).must(t, 404)
	d.useController("gac", "action", "gi")

	inst := d.operate(lifecycle.OpInstantiate)
	d.await("Instantiated", 2*time.Minute, "", func(s status) bool { return s.Status == lifecycle.StatusInstantiated })
	recordHistory(t, inst.WorkflowID, "Instantiate-with-gac")
	for i := range 2 {
		cm := liveObject(t, i, configMaps, "extra")
		if cm == nil {
			t.Fatalf("cluster%d has no ConfigMap extra", i+1)
		}
		if data := fmt.Sprint(cm["data"]); data != "map[alpha:one b.txt:two]" {
			t.Errorf("cluster%d ConfigMap extra data %s", i+1, data)
		}
	}
	if liveObject(t, 2, configMaps, "extra") != nil {
		t.Error("cluster3, where the app is not placed, got gac's ConfigMap")
	}
	if r1, r2 := replicas(liveObject(t, 0, deployments, "web")), replicas(liveObject(t, 1, deployments, "web")); r1 != "1" || r2 != "3" {
		t.Errorf("replicas cluster1 %s, cluster2 %s; want 1 and 3 (the patch names cluster2)", r1, r2)
	}

	patch("PUT", gi+"/resources/web-deployment/customizations/scale", 5).must(t, 200)
	upd := d.update("update", nil)
	recordHistory(t, upd.WorkflowID, "Update-with-gac")
	if r1, r2 := replicas(liveObject(t, 0, deployments, "web")), replicas(liveObject(t, 1, deployments, "web")); r1 != "1" || r2 != "5" {
		t.Errorf("after the update: replicas cluster1 %s, cluster2 %s; want 1 and 5", r1, r2)
	}

	d.operate(lifecycle.OpTerminate)
	d.await("Terminated", 2*time.Minute, "", func(s status) bool { return s.Status == lifecycle.StatusTerminated })
	for i := range 2 {
		if liveObject(t, i, configMaps, "extra") != nil || liveObject(t, i, deployments, "web") != nil {
			t.Errorf("cluster%d keeps objects after terminate", i+1)
		}
	}
}

var (
	services = schema.GroupVersionResource{Version: "v1", Resource: "services"}
	secrets  = schema.GroupVersionResource{Version: "v1", Resource: "secrets"}
)

// servicePorts lists a live Service's ports as "name:port", sorted.
func servicePorts(o map[string]any) []string {
	ports, _, _ := unstructured.NestedSlice(o, "spec", "ports")
	var out []string
	for _, p := range ports {
		m, _ := p.(map[string]any)
		out = append(out, fmt.Sprintf("%v:%v", m["name"], m["port"]))
	}
	slices.Sort(out)
	return out
}

// mainContainer is container "main" of a live Deployment: its image and env as NAME=value.
func mainContainer(o map[string]any) (string, []string) {
	containers, _, _ := unstructured.NestedSlice(o, "spec", "template", "spec", "containers")
	for _, c := range containers {
		m, _ := c.(map[string]any)
		if m["name"] != "main" {
			continue
		}
		env, _, _ := unstructured.NestedSlice(m, "env")
		var vars []string
		for _, e := range env {
			v, _ := e.(map[string]any)
			vars = append(vars, fmt.Sprintf("%v=%v", v["name"], v["value"]))
		}
		return fmt.Sprint(m["image"]), vars
	}
	return "<no container main>", nil
}

// secretData is a live Secret's data, decoded.
func secretData(t *testing.T, o map[string]any) map[string]string {
	t.Helper()
	data, _, _ := unstructured.NestedStringMap(o, "data")
	for k, v := range data {
		b, err := base64.StdEncoding.DecodeString(v)
		if err != nil {
			t.Errorf("Secret data %s is not base64: %v", k, err)
		}
		data[k] = string(b)
	}
	return data
}

// gac's other customizations, on the live clusters of app gacm (cluster1 and cluster2,
// each given a label of its own here): a Service from a template file on both, merge
// patched by a customization specific to cluster1's label; a strategic merge patch of the
// app's Deployment; a Secret and a ConfigMap from files. The update changes the
// ConfigMap's files and the Deployment's patch, and points the label-specific patch at
// cluster2's label; terminate removes every object gac made.
func TestGenericActionControllerMergeSecretLabel(t *testing.T) {
	const name = "gacm"
	d := newDeployment(t, app{name: name, chart: webChart(name), placement: clusterLabel("edge")})
	d.create()
	c, gi := d.c, d.dig()+"/generic-k8s-intents/gi"
	clusterLabels := []string{"gacm-only-cluster1", "gacm-only-cluster2"}
	for i, l := range clusterLabels {
		c.do("POST", fmt.Sprintf("/cluster-providers/%s/clusters/cluster%d/labels", provider, i+1), map[string]string{"clusterLabel": l}).must(t, 201)
	}
	t.Cleanup(func() {
		if s := d.status(""); s.Instance != "" && s.Status != lifecycle.StatusTerminated && s.state() != lifecycle.StateApproved {
			d.operate(lifecycle.OpTerminate)
			d.await("Terminated", 2*time.Minute, "", func(s status) bool { return s.Status == lifecycle.StatusTerminated })
		}
		for i, l := range clusterLabels {
			p := fmt.Sprintf("/cluster-providers/%s/clusters/cluster%d/labels/%s", provider, i+1, l)
			if r := c.do("DELETE", p, nil); r.code != 204 && r.code != 404 {
				t.Errorf("clean-up: DELETE %s: %d %s", p, r.code, r.body)
			}
		}
	})
	every := func(more map[string]any) map[string]any {
		sp := map[string]any{"clusterSpecific": "false", "clusterInfo": map[string]any{"scope": "label", "clusterProvider": provider, "mode": "allow"}}
		maps.Copy(sp, more)
		return sp
	}
	newObject := func(resource, apiVersion, kind, objName string, template []byte) {
		c.multipart("POST", gi+"/resources", res(resource, map[string]any{"app": name, "newObject": "true",
			"resourceGVK": map[string]any{"apiVersion": apiVersion, "kind": kind, "name": objName}}), template).must(t, 201)
	}
	c.do("POST", d.dig()+"/generic-k8s-intents", res("gi", nil)).must(t, 201)

	// A Service from its template on both clusters, and a merge patch on the labelled one.
	newObject("svc", "v1", "Service", name+"-extra", []byte(`apiVersion: v1
kind: Service
metadata:
  name: gacm-extra
  labels: {from: template}
spec:
  selector: {app: gacm}
  ports: [{name: http, port: 80, targetPort: 8080}]
`))
	c.multipartFiles("POST", gi+"/resources/svc/customizations", res("everywhere", every(nil)), nil).must(t, 201)
	byLabel := func(method, path, label string, files map[string]string) response {
		return c.multipartFiles(method, path, res("by-label", map[string]any{"clusterSpecific": "true",
			"clusterInfo": map[string]any{"scope": "label", "clusterProvider": provider, "clusterLabel": label, "mode": "allow"},
			"patchType":   "merge"}), files)
	}
	byLabel("POST", gi+"/resources/svc/customizations", clusterLabels[0],
		map[string]string{"metrics.yaml": "metadata:\n  labels: {gac-label: matched}\nspec:\n  ports:\n  - {name: metrics, port: 9090}\n"}).must(t, 201)

	// A strategic merge patch of the app's Deployment: env for container main, a label.
	c.multipart("POST", gi+"/resources", res("deploy", map[string]any{"app": name, "newObject": "false",
		"resourceGVK": map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "name": name}}), nil).must(t, 201)
	envPatch := func(method, path, mode string) response {
		return c.multipartFiles(method, path, res("env", every(map[string]any{"patchType": "merge"})), map[string]string{"env.yaml": `metadata:
  labels: {tier: front}
spec:
  template:
    spec:
      containers:
      - name: main
        env: [{name: MODE, value: ` + mode + `}]
`})
	}
	envPatch("POST", gi+"/resources/deploy/customizations", "merged").must(t, 201)

	// A Secret from two files, one renamed by secretOptions.
	newObject("creds", "v1", "Secret", name+"-creds", nil)
	c.multipartFiles("POST", gi+"/resources/creds/customizations", res("files", every(map[string]any{
		"secretOptions": map[string]any{"dataKeyOptions": []any{map[string]any{"fileName": "user.txt", "keyName": "username"}}}})),
		map[string]string{"user.txt": "admin", "password": "s3cr3t"}).must(t, 201)

	// A ConfigMap from files; the update changes one and replaces the other.
	newObject("settings", "v1", "ConfigMap", name+"-settings", nil)
	settings := func(method, path string, files map[string]string) response {
		return c.multipartFiles(method, path, res("files", every(map[string]any{
			"configMapOptions": map[string]any{"dataKeyOptions": []any{map[string]any{"fileName": "settings.ini", "keyName": "settings"}}}})), files)
	}
	settings("POST", gi+"/resources/settings/customizations", map[string]string{"settings.ini": "level=1\n", "old.txt": "dropped by the update"}).must(t, 201)
	d.useController("gac", "action", "gi")

	// The objects as they should be live: Service ports and label gac-label, the Deployment's
	// main container, the ConfigMap's data.
	type want struct {
		ports    [2][]string
		gacLabel [2]string
		env      []string
		data     map[string]string
	}
	check := func(when string, w want) {
		t.Helper()
		for i := range 2 {
			svc := liveObject(t, i, services, name+"-extra")
			if svc == nil {
				t.Errorf("%s: cluster%d has no Service %s-extra", when, i+1, name)
			} else if ports, l := servicePorts(svc), label(svc, "gac-label"); !slices.Equal(ports, w.ports[i]) || l != w.gacLabel[i] || label(svc, "from") != "template" {
				t.Errorf("%s: cluster%d Service ports %v, label gac-label %s, label from %s; want ports %v, gac-label %s, from template",
					when, i+1, ports, l, label(svc, "from"), w.ports[i], w.gacLabel[i])
			}
			dep := liveObject(t, i, deployments, name)
			if image, env := mainContainer(dep); image != "registry.local/gacm:1" || !slices.Equal(env, w.env) || label(dep, "tier") != "front" || replicas(dep) != "1" {
				t.Errorf("%s: cluster%d Deployment main image %s env %v, label tier %s, replicas %s; want the image kept, env %v, tier front, replicas 1",
					when, i+1, image, env, label(dep, "tier"), replicas(dep), w.env)
			}
			sec := liveObject(t, i, secrets, name+"-creds")
			if sec == nil {
				t.Errorf("%s: cluster%d has no Secret %s-creds", when, i+1, name)
			} else if data := secretData(t, sec); sec["type"] != "Opaque" || !maps.Equal(data, map[string]string{"username": "admin", "password": "s3cr3t"}) {
				t.Errorf("%s: cluster%d Secret type %v, data %v; want Opaque, username admin and password s3cr3t", when, i+1, sec["type"], data)
			}
			cm := liveObject(t, i, configMaps, name+"-settings")
			if data, _, _ := unstructured.NestedStringMap(cm, "data"); !maps.Equal(data, w.data) {
				t.Errorf("%s: cluster%d ConfigMap %s-settings data %v, want %v", when, i+1, name, data, w.data)
			}
		}
	}
	absent := func(when string, clusters ...int) {
		t.Helper()
		for _, i := range clusters {
			for _, o := range []struct {
				gvr  schema.GroupVersionResource
				name string
			}{{services, name + "-extra"}, {secrets, name + "-creds"}, {configMaps, name + "-settings"}, {deployments, name}} {
				if liveObject(t, i, o.gvr, o.name) != nil {
					t.Errorf("%s: cluster%d has %s %s", when, i+1, o.gvr.Resource, o.name)
				}
			}
		}
	}

	d.operate(lifecycle.OpInstantiate)
	d.await("Instantiated", 2*time.Minute, "", func(s status) bool { return s.Status == lifecycle.StatusInstantiated })
	check("instantiated", want{ports: [2][]string{{"http:80", "metrics:9090"}, {"http:80"}}, gacLabel: [2]string{"matched", "<nil>"},
		env: []string{"MODE=merged"}, data: map[string]string{"settings": "level=1\n", "old.txt": "dropped by the update"}})
	absent("instantiated", 2) // cluster3, where the app is not placed

	// The update: new ConfigMap files, a new Deployment patch, and the label-specific patch
	// (its file kept, as none is sent) now for cluster2's label.
	settings("PUT", gi+"/resources/settings/customizations/files", map[string]string{"settings.ini": "level=2\n", "new.txt": "added by the update"}).must(t, 200)
	envPatch("PUT", gi+"/resources/deploy/customizations/env", "updated").must(t, 200)
	byLabel("PUT", gi+"/resources/svc/customizations/by-label", clusterLabels[1], nil).must(t, 200)
	d.update("update", nil)
	check("updated", want{ports: [2][]string{{"http:80"}, {"http:80", "metrics:9090"}}, gacLabel: [2]string{"<nil>", "matched"},
		env: []string{"MODE=updated"}, data: map[string]string{"settings": "level=2\n", "new.txt": "added by the update"}})
	absent("updated", 2)

	d.operate(lifecycle.OpTerminate)
	d.await("Terminated", 2*time.Minute, "", func(s status) bool { return s.Status == lifecycle.StatusTerminated })
	absent("terminated", 0, 1, 2)
}
