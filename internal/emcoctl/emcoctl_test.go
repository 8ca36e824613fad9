package emcoctl

import (
	"bytes"
	"encoding/json"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

const resources = `---
version: emco/v2
resourceContext:
  anchor: projects
metadata:
  name: {{ .Project }}
---
version: emco/v2
resourceContext:
  anchor: cluster-providers/{{ .Provider }}/clusters
metadata:
  name: c1
file: kubeconfig
---
version: emco/v2
resourceContext:
  anchor: cluster-providers/{{ .Provider }}/clusters/c1/labels
clusterLabel: edge
---
version: emco/v2
resourceContext:
  anchor: projects/{{ .Project }}/composite-apps/ca/v1/deployment-intent-groups
metadata:
  name: dig
spec:
  version: r1
---
version: emco/v2
resourceContext:
  anchor: projects/{{ .Project }}/composite-apps/ca/v1/deployment-intent-groups/dig/approve
---
version: emco/v2
resourceContext:
  anchor: projects/{{ .Project }}/composite-apps/ca/v1/deployment-intent-groups/dig/instantiate
`

// recorded is a request the fake API saw.
type recorded struct {
	auth                            string
	method, path, contentType, body string
	fileName, fileData              string
}

func fakeAPI(t *testing.T) (*httptest.Server, *[]recorded) {
	t.Helper()
	var mu sync.Mutex
	var seen []recorded
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := recorded{method: r.Method, path: r.URL.Path, contentType: r.Header.Get("Content-Type"), auth: r.Header.Get("Authorization")}
		if mt, params, _ := mime.ParseMediaType(rec.contentType); mt == "multipart/form-data" {
			mr := multipart.NewReader(r.Body, params["boundary"])
			for {
				p, err := mr.NextPart()
				if err != nil {
					break
				}
				data, _ := io.ReadAll(p)
				if p.FormName() == "metadata" {
					rec.body = string(data)
				} else {
					rec.fileName, rec.fileData = p.FileName(), string(data)
				}
			}
		} else {
			data, _ := io.ReadAll(r.Body)
			rec.body = string(data)
		}
		if r.Method != http.MethodGet || !strings.HasSuffix(r.URL.Path, "/status") {
			mu.Lock()
			seen = append(seen, rec)
			mu.Unlock()
		}
		switch {
		case strings.HasSuffix(r.URL.Path, "/status"):
			_, _ = w.Write([]byte(`{"status":"Terminated"}`))
		case r.URL.Path == "/v2/projects" && r.Method == http.MethodPost && strings.Contains(rec.body, "taken"):
			w.WriteHeader(http.StatusConflict)
			_, _ = w.Write([]byte(`{"message":"project \"taken\" already exists"}`))
		case r.Method == http.MethodPost:
			w.WriteHeader(http.StatusCreated)
		default:
			w.WriteHeader(http.StatusOK)
		}
	}))
	t.Cleanup(srv.Close)
	return srv, &seen
}

func files(t *testing.T, project string) (string, string) {
	t.Helper()
	dir := t.TempDir()
	f := filepath.Join(dir, "resources.yaml")
	v := filepath.Join(dir, "values.yaml")
	_ = os.WriteFile(f, []byte(resources), 0o644)
	_ = os.WriteFile(v, []byte("Project: "+project+"\nProvider: cp\n"), 0o644)
	_ = os.WriteFile(filepath.Join(dir, "kubeconfig"), []byte("apiVersion: v1\nkind: Config\n"), 0o644)
	return f, v
}

func runner(url string, out *bytes.Buffer) *Runner {
	return &Runner{API: url, Out: out, HTTP: http.DefaultClient, Timeout: 5 * time.Second}
}

func TestApplySendsEveryDocumentInOrder(t *testing.T) {
	srv, seen := fakeAPI(t)
	f, v := files(t, "p1")
	docs, err := Load([]string{f}, []string{v})
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	r := runner(srv.URL, &out)
	r.Token = "t0ken"
	if err := r.Apply(docs); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	for _, rec := range *seen {
		if rec.auth != "Bearer t0ken" {
			t.Errorf("%s %s sent Authorization %q", rec.method, rec.path, rec.auth)
		}
	}
	want := []string{
		"POST /v2/projects", "POST /v2/cluster-providers/cp/clusters", "POST /v2/cluster-providers/cp/clusters/c1/labels",
		"POST /v2/projects/p1/composite-apps/ca/v1/deployment-intent-groups",
		"POST /v2/projects/p1/composite-apps/ca/v1/deployment-intent-groups/dig/approve",
		"POST /v2/projects/p1/composite-apps/ca/v1/deployment-intent-groups/dig/instantiate",
	}
	if len(*seen) != len(want) {
		t.Fatalf("requests %v", *seen)
	}
	for i, w := range want {
		if got := (*seen)[i].method + " " + (*seen)[i].path; got != w {
			t.Errorf("request %d: %s, want %s", i, got, w)
		}
	}
	var project map[string]any
	_ = json.Unmarshal([]byte((*seen)[0].body), &project)
	if project["metadata"].(map[string]any)["name"] != "p1" {
		t.Errorf("templated project body %s", (*seen)[0].body)
	}
	if c := (*seen)[1]; !strings.HasPrefix(c.contentType, "multipart/form-data") || c.fileName != "kubeconfig" ||
		!strings.Contains(c.fileData, "kind: Config") || !strings.Contains(c.body, `"name":"c1"`) {
		t.Errorf("cluster request %+v: want multipart metadata + the file found beside the resource file", c)
	}
	if (*seen)[2].body != `{"clusterLabel":"edge"}` || (*seen)[4].body != "" {
		t.Errorf("label body %q, approve body %q", (*seen)[2].body, (*seen)[4].body)
	}
	if lines := strings.Count(out.String(), "\n"); lines != len(want) {
		t.Errorf("%d output lines, want one per document:\n%s", lines, out.String())
	}
}

func TestDeleteWalksBackwardsAndTerminates(t *testing.T) {
	srv, seen := fakeAPI(t)
	f, v := files(t, "p1")
	docs, _ := Load([]string{f}, []string{v})
	var out bytes.Buffer
	if err := runner(srv.URL, &out).Delete(docs); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	want := []string{
		"POST /v2/projects/p1/composite-apps/ca/v1/deployment-intent-groups/dig/terminate",
		"DELETE /v2/projects/p1/composite-apps/ca/v1/deployment-intent-groups/dig",
		"DELETE /v2/cluster-providers/cp/clusters/c1/labels/edge",
		"DELETE /v2/cluster-providers/cp/clusters/c1",
		"DELETE /v2/projects/p1",
	}
	var got []string
	for _, r := range *seen {
		got = append(got, r.method+" "+r.path)
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("requests:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestFailuresAreReportedAndCanStopTheRun(t *testing.T) {
	srv, seen := fakeAPI(t)
	f, v := files(t, "taken")
	docs, _ := Load([]string{f}, []string{v})
	var out bytes.Buffer
	r := runner(srv.URL, &out)
	if err := r.Apply(docs); err == nil || !strings.Contains(err.Error(), "1 of 6 documents failed") {
		t.Errorf("error %v", err)
	}
	if !strings.Contains(out.String(), `409 project "taken" already exists`) {
		t.Errorf("output lacks the failure line:\n%s", out.String())
	}
	*seen = nil
	r.StopOnError = true
	if err := r.Apply(docs); err == nil || len(*seen) != 1 {
		t.Errorf("--stop-on-error went on: %v, %d requests", err, len(*seen))
	}
}

func TestUpdatePutsByName(t *testing.T) {
	srv, seen := fakeAPI(t)
	f, v := files(t, "p1")
	docs, _ := Load([]string{f}, []string{v})
	var out bytes.Buffer
	_ = runner(srv.URL, &out).Update(docs[:2])
	if (*seen)[0].method+" "+(*seen)[0].path != "PUT /v2/projects/p1" || (*seen)[1].path != "/v2/cluster-providers/cp/clusters/c1" {
		t.Errorf("requests %v", *seen)
	}
}

func TestBadFilesAreRefused(t *testing.T) {
	dir := t.TempDir()
	for name, content := range map[string]string{
		"missing value": "---\nversion: emco/v2\nresourceContext:\n  anchor: projects\nmetadata:\n  name: {{ .Nope }}\n",
		"no anchor":     "---\nversion: emco/v2\nmetadata:\n  name: x\n",
		"unknown field": "---\nversion: emco/v2\nresourceContext:\n  anchor: projects\nbogus: 1\n",
		"bad template":  "{{ .Oops",
	} {
		f := filepath.Join(dir, "f.yaml")
		_ = os.WriteFile(f, []byte(content), 0o644)
		if _, err := Load([]string{f}, nil); err == nil {
			t.Errorf("%s: loaded", name)
		}
	}
}

func TestCompositeAppsAndLabelsAreAddressedAsEMCODoes(t *testing.T) {
	f := filepath.Join(t.TempDir(), "f.yaml")
	_ = os.WriteFile(f, []byte(`version: emco/v2
resourceContext:
  anchor: projects/p/composite-apps
metadata:
  name: ca
spec:
  compositeAppVersion: v2
---
version: emco/v2
resourceContext:
  anchor: projects/p/composite-apps
metadata:
  name: old
spec:
  version: v1
---
version: emco/v2
resourceContext:
  anchor: cluster-providers/cp/clusters/c1/labels
label-name: edge
`), 0o644)
	docs, err := Load([]string{f}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []string{"projects/p/composite-apps/ca/v2", "projects/p/composite-apps/old/v1", "cluster-providers/cp/clusters/c1/labels/edge"} {
		if got := docs[i].Path(); got != want {
			t.Errorf("document %d: path %s, want %s", i+1, got, want)
		}
	}
}
