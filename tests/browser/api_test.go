package browser

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/temco/temco/internal/dev/devstack"
	"github.com/temco/temco/internal/dev/testenv"
	"github.com/temco/temco/internal/dev/testenv/poll"
)

// The REST side of the tests: what an operator sets up with curl before opening the
// page, and the API's answers the tests hold the page's against.

// call sends one request to the API as temco's clients do (X-Temco-Client); a nil body
// sends none.
func call(method, path string, body any) (int, []byte, error) {
	var rd io.Reader
	if body != nil {
		data, err := json.Marshal(body)
		if err != nil {
			return 0, nil, err
		}
		rd = bytes.NewReader(data)
	}
	req, err := http.NewRequest(method, apiURL+path, rd)
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("X-Temco-Client", "browser-test")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	return send(req)
}

// callMultipart sends a resource's metadata and a file, as the API wants for apps,
// profiles and clusters (their kubeconfig).
func callMultipart(method, path string, metadata any, file []byte) (int, []byte, error) {
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	md, err := json.Marshal(metadata)
	if err != nil {
		return 0, nil, err
	}
	_ = mw.WriteField("metadata", string(md))
	fw, err := mw.CreateFormFile("file", "file")
	if err != nil {
		return 0, nil, err
	}
	_, _ = fw.Write(file)
	_ = mw.Close()
	req, err := http.NewRequest(method, apiURL+path, &buf)
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Content-Type", mw.FormDataContentType())
	return send(req)
}

func send(req *http.Request) (int, []byte, error) {
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, b, err
}

// must sends a request and fails the test unless the answer has the code.
func must(t *testing.T, code int, method, path string, body any) []byte {
	t.Helper()
	got, b, err := call(method, path, body)
	if err != nil || got != code {
		t.Fatalf("%s %s: %d %v, want %d: %s", method, path, got, err, code, b)
	}
	return b
}

func mustMultipart(t *testing.T, path string, metadata any, file []byte) {
	t.Helper()
	if code, b, err := callMultipart("POST", path, metadata, file); err != nil || code != http.StatusCreated {
		t.Fatalf("POST %s: %d %v: %s", path, code, err, b)
	}
}

func res(name string, spec any) map[string]any {
	if spec == nil {
		spec = map[string]any{}
	}
	return map[string]any{"metadata": map[string]any{"name": name}, "spec": spec}
}

// registerDevCluster onboards the provider and the dev stack's cluster, once for all tests.
func registerDevCluster() error {
	if code, b, err := call("POST", "/cluster-providers", res(provider, nil)); err != nil || code != http.StatusCreated {
		return fmt.Errorf("create cluster provider %s: %d %v: %s", provider, code, err, b)
	}
	kc, err := os.ReadFile(devCluster.kubeconfig)
	if err != nil {
		return err
	}
	path := "/cluster-providers/" + provider + "/clusters"
	if code, b, err := callMultipart("POST", path, res(devCluster.name, nil), kc); err != nil || code != http.StatusCreated {
		return fmt.Errorf("register cluster %s: %d %v: %s", devCluster.name, code, err, b)
	}
	return nil
}

var serverLine = regexp.MustCompile(`(?m)^(\s*server:\s*)https://\S+$`)

// registerUnreachableCluster registers a cluster whose kubeconfig is the dev cluster's
// with its server moved to a closed port of 127.0.0.1: every connection is refused.
func registerUnreachableCluster(t *testing.T, name string) string {
	t.Helper()
	kc, err := os.ReadFile(devCluster.kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	port, err := devstack.FreePort() // free now, so nothing listens there
	if err != nil {
		t.Fatal(err)
	}
	server := fmt.Sprintf("https://127.0.0.1:%d", port)
	moved := serverLine.ReplaceAll(kc, []byte("${1}"+server))
	if bytes.Equal(moved, kc) {
		t.Fatalf("no server line in %s:\n%s", devCluster.kubeconfig, kc)
	}
	mustMultipart(t, "/cluster-providers/"+provider+"/clusters", res(name, nil), moved)
	return server
}

// packDir packs testdata/<dir> as a .tar.gz; with root its files sit under root/ (a
// chart), without at the archive's top (a profile).
func packDir(t *testing.T, dir, root string) []byte {
	t.Helper()
	files := map[string]string{}
	base := filepath.Join("testdata", dir)
	err := filepath.WalkDir(base, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(base, path)
		files[filepath.ToSlash(filepath.Join(root, rel))] = string(b)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return testenv.TarGz(files)
}

// fixture is one test's project: an admin logical cloud "default" over its clusters and,
// once deployed, composite app "ca" v1 with app "web" and DIG "dig".
type fixture struct {
	t       *testing.T
	project string
}

const app = "web" // the app of every fixture (testdata/charts/web)

// newProject creates the project and its logical cloud over the clusters, instantiated.
func newProject(t *testing.T, project string, clusters ...string) *fixture {
	t.Helper()
	f := &fixture{t: t, project: project}
	must(t, 201, "POST", "/projects", res(project, nil))
	lc := f.lc()
	must(t, 201, "POST", "/projects/"+project+"/logical-clouds", res("default", map[string]any{"level": "0"}))
	for _, c := range clusters {
		must(t, 201, "POST", lc+"/cluster-references", res(c, map[string]any{"clusterProvider": provider, "cluster": c}))
	}
	must(t, 202, "POST", lc+"/instantiate", nil)
	f.eventually("logical cloud instantiated", 2*time.Minute, func() error {
		var s struct {
			DeployedStatus string `json:"deployedStatus"`
		}
		if err := json.Unmarshal(must(t, 200, "GET", lc+"/status?status=deployed&output=summary", nil), &s); err != nil {
			return err
		}
		if s.DeployedStatus != "Instantiated" {
			return fmt.Errorf("logical cloud %s", s.DeployedStatus)
		}
		return nil
	})
	return f
}

func (f *fixture) lc() string  { return "/projects/" + f.project + "/logical-clouds/default" }
func (f *fixture) ca() string  { return "/projects/" + f.project + "/composite-apps/ca/v1" }
func (f *fixture) dig() string { return f.ca() + "/deployment-intent-groups/dig" }

// The page's routes (dashboard/README.md).
func (f *fixture) projectRoute() string { return "#/p/" + f.project }
func (f *fixture) caRoute() string      { return f.projectRoute() + "/ca/ca/v1" }
func (f *fixture) digRoute() string     { return f.caRoute() + "/dig/dig" }
func (f *fixture) lcRoute() string      { return f.projectRoute() + "/lc/default" }
func (f *fixture) objectsRoute(cluster string) string {
	return f.digRoute() + "/c/" + provider + "/" + cluster + "/app/" + app
}

// gated gives a fixture a rollout whose one stage waits for an approval, and instantiates
// it over the dev stack's api (no authentication).
func gated(t *testing.T, project string) *fixture {
	t.Helper()
	cluster := devCluster.name
	f := newProject(t, project, cluster)
	f.deploy(cluster)
	must(t, 201, "POST", f.dig()+"/rollout-strategies", res("gate", map[string]any{"stages": []any{
		map[string]any{"name": "gate", "clusters": []string{cluster}, "before": []any{map[string]any{"type": "approval"}}}}}))
	must(t, 202, "POST", f.dig()+"/approve", nil)
	must(t, 202, "POST", f.dig()+"/instantiate", nil)
	return f
}

// deploy creates the composite app, its profile and the DIG placing app "web" on the
// cluster, left Created (not approved).
func (f *fixture) deploy(cluster string) {
	t := f.t
	t.Helper()
	must(t, 201, "POST", "/projects/"+f.project+"/composite-apps", res("ca", map[string]any{"compositeAppVersion": "v1"}))
	mustMultipart(t, f.ca()+"/apps", res(app, nil), packDir(t, "charts/web", "web"))
	must(t, 201, "POST", f.ca()+"/composite-profiles", res("prof", nil))
	mustMultipart(t, f.ca()+"/composite-profiles/prof/profiles", res(app+"-profile", map[string]any{"app": app}), packDir(t, "profiles/web", ""))
	must(t, 201, "POST", f.ca()+"/deployment-intent-groups", res("dig", map[string]any{
		"compositeProfile": "prof", "version": "r1", "logicalCloud": "default"}))
	must(t, 201, "POST", f.dig()+"/generic-placement-intents", res("gpi", nil))
	must(t, 201, "POST", f.dig()+"/generic-placement-intents/gpi/app-intents", res(app+"-placement", map[string]any{
		"app": app, "intent": map[string]any{"allOf": []any{map[string]any{"clusterProvider": provider, "cluster": cluster}}}}))
	must(t, 201, "POST", f.dig()+"/intents", res("intents", map[string]any{"intent": map[string]string{"genericPlacementIntent": "gpi"}}))
}

// digStatus is the part of GET DIG/status the tests read.
type digStatus struct {
	Status      string         `json:"status"`
	RsyncStatus map[string]int `json:"rsyncStatus"`
	States      struct {
		Actions []struct {
			State string `json:"state"`
		} `json:"actions"`
	} `json:"states"`
}

func (s digStatus) state() string {
	if len(s.States.Actions) == 0 {
		return ""
	}
	return s.States.Actions[len(s.States.Actions)-1].State
}

func (f *fixture) status() digStatus {
	f.t.Helper()
	var s digStatus
	if err := json.Unmarshal(must(f.t, 200, "GET", f.dig()+"/status", nil), &s); err != nil {
		f.t.Fatal(err)
	}
	return s
}

// dashboardView is the part of GET DIG/dashboard the tests read.
type dashboardView struct {
	State     string `json:"state"`
	Operation *struct {
		WorkflowID string `json:"workflowId"`
	} `json:"operation"`
	Clusters []struct {
		ClusterProvider string `json:"clusterProvider"`
		Cluster         string `json:"cluster"`
		State           string `json:"state"`
		Apps            map[string]struct {
			State    string `json:"state"`
			Deployed string `json:"deployed"`
			Ready    string `json:"ready"`
		} `json:"apps"`
		Retry *struct {
			Attempts int    `json:"attempts"`
			Error    string `json:"error"`
		} `json:"retry"`
	} `json:"clusters"`
}

func (f *fixture) dashboard() (dashboardView, string) {
	f.t.Helper()
	b := must(f.t, 200, "GET", f.dig()+"/dashboard", nil)
	var v dashboardView
	if err := json.Unmarshal(b, &v); err != nil {
		f.t.Fatalf("dashboard answer %s: %v", b, err)
	}
	return v, string(b)
}

// restView is what the REST API says of the DIG, for the diagnostics of a failure.
func (f *fixture) restView() string {
	var b strings.Builder
	for _, p := range []string{"/status", "/dashboard"} {
		code, body, err := call("GET", f.dig()+p, nil)
		if len(body) > 6000 {
			body = append(body[:6000], "…"...)
		}
		fmt.Fprintf(&b, "GET %s%s: %d %v\n%s\n", f.dig(), p, code, err, body)
	}
	return b.String()
}

// eventually polls check until it passes or the deadline passes.
func (f *fixture) eventually(what string, timeout time.Duration, check func() error) {
	f.t.Helper()
	poll.Until(f.t, what, timeout, func(context.Context) error { return check() })
}
