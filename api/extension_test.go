package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"mime/multipart"
	"net/http/httptest"
	"testing"

	"github.com/temco/temco/api"
	"github.com/temco/temco/controllers"
	"github.com/temco/temco/controllers/apiharness"
	"github.com/temco/temco/controllers/gac"
	"github.com/temco/temco/controllers/hpa"
	"github.com/temco/temco/internal/core/digstate"
	"github.com/temco/temco/internal/core/lifecycle"
)

// multipartWant sends a multipart request as emcoctl does for gac's kinds ("metadata",
// and a "file" part when file is set) and checks its status.
func multipartWant(t *testing.T, s *apiharness.Server, method, path string, md any, file string, code int) {
	t.Helper()
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	b, _ := json.Marshal(md)
	_ = mw.WriteField("metadata", string(b))
	if file != "" {
		fw, _ := mw.CreateFormFile("file", "template.yaml")
		_, _ = fw.Write([]byte(file))
	}
	_ = mw.Close()
	req := httptest.NewRequest(method, "/v2"+path, &buf)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	rec := httptest.NewRecorder()
	s.Handler.ServeHTTP(rec, req)
	if rec.Code != code {
		t.Fatalf("%s %s: status %d, want %d: %s", method, path, rec.Code, code, rec.Body)
	}
}

// Controllers' intents may be added, replaced and deleted after approve without
// withdrawing it, as in EMCO, whose controllers never touch the DIG's state: EMCO's own
// order is approve (intents file), then gac's resources, then instantiate. A change of
// the DIG's generic placement intent or of an app intent still withdraws it.
func TestControllersIntentsKeepTheApproval(t *testing.T) {
	s := apiharness.New(t, api.SharedFerret(), []controllers.Builtin{gac.Controller, hpa.Placement})
	s.TreeWithDIG()
	dig := apiharness.DIG
	state := func() string {
		t.Helper()
		_, info, err := digstate.Load(context.Background(), s.Store, dig)
		if err != nil {
			t.Fatal(err)
		}
		return info.Current()
	}
	s.Want("POST", dig+"/approve", nil, 202)

	gi := dig + "/generic-k8s-intents/gi"
	resource := apiharness.Body("extra", map[string]any{"app": "web", "newObject": "true",
		"resourceGVK": map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "name": "extra"}})
	customization := apiharness.Body("all", map[string]any{"clusterSpecific": "false",
		"clusterInfo": map[string]any{"scope": "label", "clusterProvider": "p", "clusterLabel": "edge", "mode": "allow"}})
	template := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: extra\ndata:\n  a: b\n"
	for _, step := range []struct {
		what string
		do   func()
	}{
		{"gac intent created", func() { s.Want("POST", dig+"/generic-k8s-intents", apiharness.Body("gi", nil), 201) }},
		{"gac resource created", func() { multipartWant(t, s, "POST", gi+"/resources", resource, template, 201) }},
		{"gac customization created", func() { multipartWant(t, s, "POST", gi+"/resources/extra/customizations", customization, "", 201) }},
		{"gac customization replaced", func() { multipartWant(t, s, "PUT", gi+"/resources/extra/customizations/all", customization, "", 200) }},
		{"hpa intent created", func() { s.Want("POST", dig+"/hpa-intents", apiharness.Body("h", map[string]any{"app": "web"}), 201) }},
		{"hpa intent deleted", func() { s.Want("DELETE", dig+"/hpa-intents/h", nil, 204) }},
		{"gac customization deleted", func() { s.Want("DELETE", gi+"/resources/extra/customizations/all", nil, 204) }},
	} {
		step.do()
		if got := state(); got != lifecycle.StateApproved {
			t.Fatalf("%s: the DIG is %s, want it still Approved", step.what, got)
		}
	}

	gpi := dig + "/generic-placement-intents/gpi"
	s.Want("POST", dig+"/generic-placement-intents", apiharness.Body("gpi", nil), 201)
	if got := state(); got != lifecycle.StateCreated {
		t.Fatalf("generic placement intent created: the DIG is %s, want Created", got)
	}
	s.Want("POST", dig+"/approve", nil, 202)
	s.Want("POST", gpi+"/app-intents", apiharness.Body("web", map[string]any{"app": "web",
		"intent": map[string]any{"allOf": []any{map[string]any{"clusterProvider": "p", "cluster": "c"}}}}), 201)
	if got := state(); got != lifecycle.StateCreated {
		t.Fatalf("app intent created: the DIG is %s, want Created", got)
	}
}
