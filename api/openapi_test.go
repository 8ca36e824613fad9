package api

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/labstack/echo/v4"
)

// The document served at /v2/openapi.yaml is valid OpenAPI 3, and it and the router agree:
// no undocumented route, no documented route missing.
func TestOpenAPIDocumentMatchesTheRouter(t *testing.T) {
	c := newClient(t)
	r := c.do("GET", "/openapi.yaml", nil).must(t, http.StatusOK)
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromData(r.body)
	if err != nil {
		t.Fatalf("the document does not parse as OpenAPI 3: %v", err)
	}
	if err := doc.Validate(context.Background()); err != nil {
		t.Fatalf("the document is not valid OpenAPI 3: %v", err)
	}
	documented := map[string]bool{}
	for path, item := range doc.Paths.Map() {
		for method := range item.Operations() {
			documented[method+" "+path] = true
		}
	}
	routed := map[string]bool{}
	for _, rt := range c.h.(*echo.Echo).Routes() {
		if !strings.HasPrefix(rt.Path, "/v2/") {
			continue
		}
		routed[rt.Method+" "+paramRE.ReplaceAllString(rt.Path, "{$1}")] = true
	}
	for k := range routed {
		if !documented[k] {
			t.Errorf("route %s is not documented", k)
		}
	}
	for k := range documented {
		if !routed[k] {
			t.Errorf("documented %s has no route", k)
		}
	}
	if len(routed) < 100 {
		t.Errorf("only %d routes: the comparison looked at the wrong router", len(routed))
	}
	t.Logf("%d routes, all documented", len(routed))
	// A route that may read clusters live says it may be refused for the caller's rate.
	status := doc.Paths.Find("/v2/projects/{project}/composite-apps/{compositeApp}/{version}/deployment-intent-groups/{deploymentIntentGroup}/status")
	if status == nil || status.Get == nil || status.Get.Responses.Status(429) == nil ||
		status.Get.Responses.Status(429).Value.Headers["Retry-After"] == nil {
		t.Error("a DIG's status does not document 429 with Retry-After")
	}
	if get := doc.Paths.Find("/v2/projects/{project}"); get == nil || get.Get.Responses.Status(429) != nil {
		t.Error("a project's read documents 429: it never reads a cluster")
	}
	// An app is EMCO's upload, or JSON naming its chart by reference (temco's spec.chart).
	apps := doc.Paths.Find("/v2/projects/{project}/composite-apps/{compositeApp}/{version}/apps")
	if apps == nil || apps.Post == nil || apps.Post.RequestBody.Value.Content.Get("multipart/form-data") == nil {
		t.Fatal("an app's POST does not document its upload")
	}
	js := apps.Post.RequestBody.Value.Content.Get("application/json")
	if js == nil || js.Schema.Value.Properties["spec"] == nil || js.Schema.Value.Properties["spec"].Value.Properties["chart"] == nil ||
		js.Schema.Value.Properties["spec"].Value.Properties["chart"].Value.Properties["oci"] == nil {
		t.Error("an app's POST does not document spec.chart")
	}
}
