package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"mime/multipart"
	"net/http"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/temco/temco/internal/lifecycle"
)

// multipartFiles sends a "metadata" part and one "files" part per file (gac customizations).
func (c *client) multipartFiles(method, path string, metadata any, files map[string]string) response {
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	md, _ := json.Marshal(metadata)
	_ = mw.WriteField("metadata", string(md))
	for name, content := range files {
		fw, _ := mw.CreateFormFile("files", name)
		_, _ = fw.Write([]byte(content))
	}
	_ = mw.Close()
	req, _ := http.NewRequest(method, c.url(path), &buf)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	return c.send(req)
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
