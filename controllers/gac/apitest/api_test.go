// Package apitest drives gac's REST resources through temco's API against a real
// FerretDB, then runs the controller on what was stored.
package apitest

import (
	"bytes"
	"context"
	"encoding/json"
	"mime/multipart"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/temco/temco/contract"
	"github.com/temco/temco/contract/contracttest"
	"github.com/temco/temco/controllers"
	"github.com/temco/temco/controllers/apiharness"
	"github.com/temco/temco/controllers/gac"
	"github.com/temco/temco/internal/core/model"
	"github.com/temco/temco/internal/core/store"
)

func TestMain(m *testing.M) { apiharness.Main(m) }

var body = apiharness.Body

const (
	dig    = apiharness.DIG
	intent = dig + "/generic-k8s-intents/gi"
)

// send sends a multipart request: "metadata" and one "files" part per file (name, content
// pairs), or a "file" part when file is not nil.
func send(s *apiharness.Server, method, path string, md any, file []byte, files ...string) {
	s.T.Helper()
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	b, _ := json.Marshal(md)
	_ = mw.WriteField("metadata", string(b))
	if file != nil {
		fw, _ := mw.CreateFormFile("file", "template.yaml")
		_, _ = fw.Write(file)
	}
	for i := 0; i+1 < len(files); i += 2 {
		fw, _ := mw.CreateFormFile("files", files[i])
		_, _ = fw.Write([]byte(files[i+1]))
	}
	_ = mw.Close()
	req := httptest.NewRequest(method, "/v2"+path, &buf)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	rec := httptest.NewRecorder()
	s.Handler.ServeHTTP(rec, req)
	if rec.Code >= 300 {
		s.T.Fatalf("%s %s: %d %s", method, path, rec.Code, rec.Body)
	}
}

// newServer is temco's API with gac, on a store holding project p's DIG "dig" of app web,
// its intent "gi", and cluster p+c1.
func newServer(t *testing.T) *apiharness.Server {
	t.Helper()
	s := apiharness.Serve(t, gac.Controller)
	for _, d := range []*store.Doc{
		{ID: "/projects/p", Kind: "project", Name: "p", Body: `{"metadata":{"name":"p"}}`},
		{ID: "/projects/p/composite-apps/ca/v1", Parent: "/projects/p", Kind: "composite-app", Name: "ca", Body: `{"metadata":{"name":"ca"}}`},
		{ID: "/projects/p/composite-apps/ca/v1/apps/web", Parent: "/projects/p/composite-apps/ca/v1", Kind: "app", Name: "web", Body: `{"metadata":{"name":"web"}}`},
		{ID: dig, Parent: "/projects/p/composite-apps/ca/v1", Kind: "deployment-intent-group", Name: "dig", Body: `{"metadata":{"name":"dig"}}`},
		{ID: intent, Parent: dig, Kind: gac.KindIntent, Name: "gi", Body: `{"metadata":{"name":"gi"}}`},
		{ID: "/cluster-providers/p", Kind: model.KindClusterProvider, Name: "p", Body: `{"metadata":{"name":"p"}}`},
		{ID: "/cluster-providers/p/clusters/c1", Parent: "/cluster-providers/p", Kind: model.KindCluster, Name: "c1", Body: `{"metadata":{"name":"c1"}}`},
	} {
		if err := s.Store.Create(context.Background(), d); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

// A Secret's template and files are stored sealed (never in clear in MongoDB, nor in any
// answer), and the controller, given the keys, builds the Secret from them.
func TestSecretDataIsStoredSealed(t *testing.T) {
	ctx := context.Background()
	s := newServer(t)
	st, keys := s.Store, s.Keys
	template := []byte("apiVersion: v1\nkind: Secret\nmetadata: {name: creds}\ndata: {user: dG9wLXNlY3JldC11c2Vy}\n")
	send(s, "POST", intent+"/resources", body("creds", map[string]any{"app": "web", "newObject": "true",
		"resourceGVK": map[string]any{"apiVersion": "v1", "kind": "Secret", "name": "creds"}}), template)
	send(s, "POST", intent+"/resources/creds/customizations", body("pw", map[string]any{"clusterSpecific": "false",
		"clusterInfo": map[string]any{"scope": "label", "clusterProvider": "p", "mode": "allow"}}), nil, "password", "hunter2-in-clear")
	// A replace without files keeps the stored (sealed) ones.
	send(s, "PUT", intent+"/resources/creds/customizations/pw", body("pw", map[string]any{"clusterSpecific": "false",
		"clusterInfo": map[string]any{"scope": "label", "clusterProvider": "p", "mode": "allow"}}), nil)

	var docs []*store.Doc
	for _, kind := range []string{gac.KindResource, gac.KindCustomization} {
		ds, err := st.List(ctx, store.Query{Scope: "/projects/p", Kind: kind, Full: true})
		if err != nil || len(ds) != 1 {
			t.Fatalf("stored %s: %d, %v", kind, len(ds), err)
		}
		docs = append(docs, ds...)
	}
	for _, d := range docs {
		raw, _ := json.Marshal(d)
		if bytes.Contains(raw, []byte("hunter2")) || bytes.Contains(raw, []byte("dG9wLXNlY3JldC11c2Vy")) || len(d.Blob) > 0 {
			t.Errorf("%s is stored with its data in clear: %s", d.ID, raw)
		}
	}

	f := &contracttest.Fake{In: contract.Input{Project: "p", CompositeApp: "ca", CompositeAppVersion: "v1",
		DeploymentIntentGroup: "dig", Intent: "gi", Operation: contract.OpInstantiate},
		AppList: []contract.App{{Name: "web", Clusters: []string{"p+c1"}}}}
	if err := gac.Controller.New(controllers.Deps{Store: st, Keys: keys}).Run(ctx, f); err != nil {
		t.Fatal(err)
	}
	if len(f.Edits) != 1 || !strings.Contains(string(f.Edits[0].Data), `"password":"aHVudGVyMi1pbi1jbGVhcg=="`) ||
		!strings.Contains(string(f.Edits[0].Data), `"user":"dG9wLXNlY3JldC11c2Vy"`) {
		t.Errorf("edits %+v: want the Secret with the template's and the file's data", f.Edits)
	}
}
