package emcoctl

import (
	"bytes"
	"context"
	"encoding/json"
	"mime"
	"reflect"
	"testing"
)

// byReference is an emcoctl file with temco's charts by reference: a project's registry
// login (its password from a values file) and apps whose spec.chart names their chart (no
// file:), beside one uploaded as EMCO does.
const byReference = `resourceContext: {anchor: projects}
metadata: {name: p}
---
resourceContext: {anchor: projects/p/artifact-credentials}
metadata: {name: registry}
spec:
  host: {{.Registry}}
  username: {{.RegistryUser}}
  password: {{.RegistryPassword}}
---
resourceContext: {anchor: projects/p/artifact-credentials}
metadata: {name: charts}
spec: {host: charts.example.com, username: reader, password: literal-token}
---
resourceContext: {anchor: projects/p/composite-apps/ca/v1/apps}
metadata: {name: web}
spec:
  chart:
    oci: oci://{{.Registry}}/charts/web
    version: {{.WebVersion}}
    plainHTTP: true
---
resourceContext: {anchor: projects/p/composite-apps/ca/v1/apps}
metadata: {name: api}
spec:
  chart: {helmRepo: "https://charts.example.com/stable", chart: api, version: ^1}
---
resourceContext: {anchor: projects/p/composite-apps/ca/v1/apps}
metadata: {name: tgz}
spec:
  chart: {url: "https://charts.example.com/tgz-0.1.0.tgz", digest: "sha256:abab"}
---
resourceContext: {anchor: projects/p/composite-apps/ca/v1/apps}
metadata: {name: uploaded}
file: uploaded.tgz
`

// An app by reference and an artifact credential go as JSON, as every document without a
// file does; values a YAML reader would take for numbers (a version 1.10, a password
// 0123, a username 1234) are sent as written. update PUTs the same bodies.
func TestChartsByReferenceAndArtifactCredentialsAreSentAsJSON(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "uploaded.tgz", "chart bytes")
	file := write(t, dir, "apps.yaml", byReference)
	values := write(t, dir, "values.yaml", "Registry: reg.example.com:5000\nWebVersion: \"1.10\"\nRegistryUser: ci\nRegistryPassword: placeholder\n")
	login := write(t, dir, "registry-login.yaml", "RegistryUser: \"1234\"\nRegistryPassword: \"0123\"\n")
	docs, err := Load([]string{file}, []string{values, login})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		`{"metadata":{"name":"p"}}`,
		`{"metadata":{"name":"registry"},"spec":{"host":"reg.example.com:5000","password":"0123","username":"1234"}}`,
		`{"metadata":{"name":"charts"},"spec":{"host":"charts.example.com","password":"literal-token","username":"reader"}}`,
		`{"metadata":{"name":"web"},"spec":{"chart":{"oci":"oci://reg.example.com:5000/charts/web","plainHTTP":true,"version":"1.10"}}}`,
		`{"metadata":{"name":"api"},"spec":{"chart":{"chart":"api","helmRepo":"https://charts.example.com/stable","version":"^1"}}}`,
		`{"metadata":{"name":"tgz"},"spec":{"chart":{"digest":"sha256:abab","url":"https://charts.example.com/tgz-0.1.0.tgz"}}}`,
	}
	api := newFakeAPI(t)
	var out bytes.Buffer
	if err := api.runner(&out).Apply(context.Background(), docs); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	if err := api.runner(&out).Update(context.Background(), docs); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	equal(t, "requests", api.requests(), []string{
		"POST /v2/projects", "POST /v2/projects/p/artifact-credentials", "POST /v2/projects/p/artifact-credentials",
		"POST /v2/projects/p/composite-apps/ca/v1/apps", "POST /v2/projects/p/composite-apps/ca/v1/apps",
		"POST /v2/projects/p/composite-apps/ca/v1/apps", "POST /v2/projects/p/composite-apps/ca/v1/apps",
		"PUT /v2/projects/p", "PUT /v2/projects/p/artifact-credentials/registry", "PUT /v2/projects/p/artifact-credentials/charts",
		"PUT /v2/projects/p/composite-apps/ca/v1/apps/web", "PUT /v2/projects/p/composite-apps/ca/v1/apps/api",
		"PUT /v2/projects/p/composite-apps/ca/v1/apps/tgz", "PUT /v2/projects/p/composite-apps/ca/v1/apps/uploaded",
	})
	for i, s := range api.received() {
		n := i % len(docs)
		if n == len(docs)-1 { // the upload: multipart, as before
			if mt, _, _ := mime.ParseMediaType(s.contentType); mt != "multipart/form-data" || len(s.parts) != 2 ||
				s.parts[1] != (part{"file", "uploaded.tgz", "chart bytes"}) {
				t.Errorf("%s %s: %s %+v, want multipart with the file", s.method, s.path, s.contentType, s.parts)
			}
			continue
		}
		if s.contentType != "application/json" {
			t.Errorf("%s %s: content type %q, want application/json", s.method, s.path, s.contentType)
		}
		var got, exp any
		if err := json.Unmarshal([]byte(s.body), &got); err != nil {
			t.Fatalf("%s %s: %q: %v", s.method, s.path, s.body, err)
		}
		_ = json.Unmarshal([]byte(want[n]), &exp)
		if !reflect.DeepEqual(got, exp) {
			t.Errorf("%s %s sent %s\nwant %s", s.method, s.path, s.body, want[n])
		}
	}
}

// Only the fields known to be text are kept as written: a spec elsewhere keeps YAML's
// numbers and booleans, and a null field stays unset.
func TestOnlyKnownTextFieldsKeepTheirText(t *testing.T) {
	docs := load(t, `resourceContext: {anchor: projects/p/artifact-credentials}
metadata: {name: reg}
spec: {host: reg.example.com, username: ~, password: 0x1F, port: 5000}
---
resourceContext: {anchor: projects/p/composite-apps/ca/v1/deployment-intent-groups}
metadata: {name: d}
spec: {version: 1.10, imagePinning: {enabled: true}}
---
resourceContext: {anchor: projects/p/composite-apps/ca/v1/apps}
metadata: {name: web}
spec:
  base: &base {version: 2.0, plainHTTP: true}
  chart: *base
`, nil)
	equal(t, "bodies", sent(docs), []string{
		`projects/p/artifact-credentials {"metadata":{"name":"reg"},"spec":{"host":"reg.example.com","password":"0x1F","port":5000,"username":null}}`,
		`projects/p/composite-apps/ca/v1/deployment-intent-groups {"metadata":{"name":"d"},"spec":{"imagePinning":{"enabled":true},"version":1.1}}`,
		`projects/p/composite-apps/ca/v1/apps {"metadata":{"name":"web"},"spec":{"base":{"plainHTTP":true,"version":2},"chart":{"plainHTTP":true,"version":"2.0"}}}`,
	})
}
