package apitest

import (
	"bytes"
	"context"
	"encoding/json"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/temco/temco/contract"
	"github.com/temco/temco/contract/contracttest"
	"github.com/temco/temco/controllers"
	"github.com/temco/temco/controllers/apiharness"
	"github.com/temco/temco/controllers/gac"
)

// call sends a JSON request (or a multipart one with a "metadata" part when multipartMD)
// and returns the answer.
func call(s *apiharness.Server, method, path string, body any, multipartMD bool) *httptest.ResponseRecorder {
	var buf bytes.Buffer
	ctype := "application/json"
	b, _ := json.Marshal(body)
	if multipartMD {
		mw := multipart.NewWriter(&buf)
		_ = mw.WriteField("metadata", string(b))
		_ = mw.Close()
		ctype = mw.FormDataContentType()
	} else if body != nil {
		buf.Write(b)
	}
	req := httptest.NewRequest(method, "/v2"+path, &buf)
	req.Header.Set("Content-Type", ctype)
	rec := httptest.NewRecorder()
	s.Handler.ServeHTTP(rec, req)
	return rec
}

// A $(URL)$ naming the kv-pairs route becomes exactly the "value" that temco's GET of
// that URL answers, whatever the value's JSON type; the API takes such customizations
// and refuses a malformed one with 400 naming the field.
func TestKVPairValueIsWhatTheAPIAnswers(t *testing.T) {
	srv := newServer(t)
	st, keys := srv.Store, srv.Keys
	const kvPath = "/cluster-providers/p/clusters/c1/kv-pairs"
	kv := []map[string]any{{"text": "192.168.121.26"}, {"port": "32001"}, {"number": 32001}, {"fraction": 1.5},
		{"object": map[string]any{"a": []any{1, "b"}}}, {"flag": true}, {"text": "shadowed"}}
	if rec := call(srv, "POST", kvPath, body("kv", map[string]any{"kv": kv}), false); rec.Code != http.StatusCreated {
		t.Fatalf("POST kv-pairs: %d %s", rec.Code, rec.Body)
	}
	send(srv, "POST", intent+"/resources", body("w", map[string]any{"app": "web", "newObject": "true",
		"resourceGVK": map[string]any{"apiVersion": "example.com/v1", "kind": "Widget", "name": "w"}}),
		[]byte("apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w}\nspec: {}\n"))
	keysOf := []string{"text", "port", "number", "fraction", "object", "flag"}
	var ops []any
	for _, k := range keysOf {
		ops = append(ops, map[string]any{"op": "add", "path": "/spec/" + k,
			"value": "$(http://emco-clm:9061/v2/cluster-providers/{clusterProvider}/clusters/{cluster}/kv-pairs/kv?key=" + k + ")$"})
	}
	customization := func(ops []any) map[string]any {
		return body("c", map[string]any{"clusterSpecific": "true", "patchType": "json", "patchJson": ops,
			"clusterInfo": map[string]any{"scope": "name", "clusterProvider": "p", "cluster": "c1", "mode": "allow"}})
	}
	bad := customization([]any{map[string]any{"op": "add", "path": "/spec/x", "value": "$(http://emco-clm:9061/v2/cluster-providers/p/clusters/c1/kv-pairs/kv)$"}})
	if rec := call(srv, "POST", intent+"/resources/w/customizations", bad, true); rec.Code != http.StatusBadRequest ||
		!strings.Contains(rec.Body.String(), "spec.patchJson[0].value") || !strings.Contains(rec.Body.String(), "without ?key=") {
		t.Errorf("a kv-pairs URL without key: %d %s, want 400 naming spec.patchJson[0].value", rec.Code, rec.Body)
	}
	send(srv, "POST", intent+"/resources/w/customizations", customization(ops), nil)

	f := &contracttest.Fake{In: contract.Input{Project: "p", CompositeApp: "ca", CompositeAppVersion: "v1",
		DeploymentIntentGroup: "dig", Intent: "gi", Operation: contract.OpInstantiate},
		AppList: []contract.App{{Name: "web", Clusters: []string{"p+c1"}}}}
	if err := gac.Controller.New(controllers.Deps{Store: st, Keys: keys}).Run(context.Background(), f); err != nil {
		t.Fatal(err)
	}
	if len(f.Edits) != 1 {
		t.Fatalf("edits %+v, want the Widget", f.Edits)
	}
	var w struct{ Spec map[string]json.RawMessage }
	if err := json.Unmarshal(f.Edits[0].Data, &w); err != nil {
		t.Fatal(err)
	}
	for _, k := range keysOf {
		rec := call(srv, "GET", kvPath+"/kv?key="+k, nil, false)
		var answer struct{ Value json.RawMessage }
		if err := json.Unmarshal(rec.Body.Bytes(), &answer); rec.Code != http.StatusOK || err != nil {
			t.Fatalf("GET ?key=%s: %d %s", k, rec.Code, rec.Body)
		}
		if got, want := compact(t, w.Spec[k]), compact(t, answer.Value); got != want {
			t.Errorf("spec.%s = %s, want %s as GET answers", k, got, want)
		}
	}
}

func compact(t *testing.T, js json.RawMessage) string {
	var b bytes.Buffer
	if err := json.Compact(&b, js); err != nil {
		t.Fatalf("%s: %v", js, err)
	}
	return b.String()
}
