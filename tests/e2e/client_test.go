package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"strings"
	"testing"
	"time"

	apiclient "github.com/temco/temco/client"
	"github.com/temco/temco/internal/core/lifecycle"
	"github.com/temco/temco/internal/dev/testenv"
	"github.com/temco/temco/internal/dev/testenv/poll"
)

// client talks to the running temco api through the client module, answering whatever
// the api answered; with t set it fails the test on a 5xx or no answer.
type client struct {
	t     *testing.T
	base  string       // another api's /v2 URL; "" for the stack's
	token string       // bearer token, when set
	http  *http.Client // nil: http.DefaultClient
}

func (c *client) url(path string) string {
	if c.base != "" {
		return c.base + path
	}
	return apiURL + path
}

// api is the client module's client for c's api, named e2e (X-Temco-Client).
func (c *client) api() *apiclient.Client {
	return &apiclient.Client{Base: strings.TrimSuffix(c.url(""), "/v2"), Token: c.token, Name: "e2e", HTTP: c.http}
}

type response struct {
	code int
	body []byte
}

func (r response) json(t *testing.T, v any) {
	t.Helper()
	if err := json.Unmarshal(r.body, v); err != nil {
		t.Fatalf("response %q is not JSON: %v", r.body, err)
	}
}

func (r response) must(t *testing.T, code int) response {
	t.Helper()
	if r.code != code {
		t.Fatalf("status %d, want %d: %s", r.code, code, r.body)
	}
	return r
}

// request sends req through the client module.
func (c *client) request(req apiclient.Request) response {
	resp, err := c.api().Send(context.Background(), req)
	if err != nil {
		if c.t != nil {
			c.t.Fatalf("%s %s: %v", req.Method, c.url(req.Path), err)
		}
		return response{code: -1, body: []byte(err.Error())}
	}
	if resp.Code >= 500 && c.t != nil {
		c.t.Fatalf("%s %s answered %d: %s", req.Method, c.url(req.Path), resp.Code, resp.Body)
	}
	return response{code: resp.Code, body: resp.Body}
}

// send sends a request built by hand, for what the client module does not send (a
// header of the test's own); with c's token.
func (c *client) send(req *http.Request) response {
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		if c.t != nil {
			c.t.Fatalf("%s %s: %v", req.Method, req.URL, err)
		}
		return response{code: -1, body: []byte(err.Error())}
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode >= 500 && c.t != nil {
		c.t.Fatalf("%s %s answered %d: %s", req.Method, req.URL, resp.StatusCode, body)
	}
	return response{code: resp.StatusCode, body: body}
}

func (c *client) do(method, path string, body any) response {
	for tries := 1; ; tries++ {
		r := c.request(apiclient.Request{Method: method, Path: path, Body: body})
		// Live reads are rate-limited per caller, and the tests' polls share one caller:
		// a GET refused for its rate is asked again when the api says, as a client should.
		if r.code != http.StatusTooManyRequests || method != http.MethodGet || tries == 30 {
			return r
		}
		time.Sleep(time.Second)
	}
}

// multipart sends metadata as the part "metadata" and file, unless nil, as the part
// "file".
func (c *client) multipart(method, path string, metadata any, file []byte) response {
	req := apiclient.Request{Method: method, Path: path, Body: metadata, Multipart: true}
	if file != nil {
		req.Files = []apiclient.File{{Data: file}}
	}
	return c.request(req)
}

func res(name string, spec any) map[string]any {
	if spec == nil {
		spec = map[string]any{}
	}
	return map[string]any{"metadata": map[string]any{"name": name}, "spec": spec}
}

// webChart is a chart with a Deployment, a Service and a ConfigMap named after the chart.
func webChart(name string) []byte {
	return testenv.Chart(name, "replicas: 1\nmessage: default\n", map[string]string{"all.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Chart.Name }}-config
data:
  message: {{ .Values.message | quote }}
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Chart.Name }}
spec:
  replicas: {{ .Values.replicas }}
  selector: {matchLabels: {app: {{ .Chart.Name }}}}
  template:
    metadata: {labels: {app: {{ .Chart.Name }}}}
    spec:
      containers: [{name: main, image: registry.local/{{ .Chart.Name }}:1}]
---
apiVersion: v1
kind: Service
metadata:
  name: {{ .Chart.Name }}
spec:
  selector: {app: {{ .Chart.Name }}}
  ports: [{port: 80}]
`})
}

// app is one app of a test deployment: its chart and where it goes.
type app struct {
	name      string
	chart     []byte
	source    map[string]any // instead of chart: the app's spec.chart (a reference)
	profile   map[string]any // instead of the uploaded profile: its spec.archive (a reference)
	placement map[string]any // the app intent's "intent"
	dependsOn string         // optional dependency (opStatus Ready)
	wait      int
}

// deployment is a project with one composite app, profile, DIG and placement.
type deployment struct {
	t            *testing.T
	c            *client
	project      string
	apps         []app
	logicalCloud string            // "" for an admin cloud "default" over every cluster
	setUpCloud   func(*deployment) // creates logicalCloud, when named
	beforeApps   func(*deployment) // runs once the project exists (artifact credentials)
	digSpec      map[string]any    // more fields of the DIG's spec (temco's own)
}

func (d *deployment) ca() string  { return "/projects/" + d.project + "/composite-apps/ca/v1" }
func (d *deployment) dig() string { return d.ca() + "/deployment-intent-groups/dig" }

func (d *deployment) ref() lifecycle.Target {
	return lifecycle.Target{Project: d.project, CompositeApp: "ca", Version: "v1", DIG: "dig"}
}

// cloud creates a logical cloud over the given clusters and instantiates it.
func (d *deployment) cloud(name string, spec map[string]any, clusters ...string) {
	t, c := d.t, d.c
	t.Helper()
	lc := "/projects/" + d.project + "/logical-clouds/" + name
	c.do("POST", "/projects/"+d.project+"/logical-clouds", res(name, spec)).must(t, 201)
	for _, cl := range clusters {
		c.do("POST", lc+"/cluster-references", res(cl, map[string]any{"clusterProvider": provider, "cluster": cl})).must(t, 201)
	}
	c.do("POST", lc+"/instantiate", nil).must(t, 202)
	d.awaitCloud(name, lifecycle.StatusInstantiated)
}

func (d *deployment) awaitCloud(name, want string) {
	d.t.Helper()
	path := "/projects/" + d.project + "/logical-clouds/" + name + "/status?status=deployed&output=summary"
	awaitValue(d.t, "logical cloud "+name+" "+want, 2*time.Minute, func() status { return getAs[status](d.t, d.c, path) },
		func(s status) bool { return s.Status == want })
}

// create onboards everything, with an admin logical cloud "default" over all clusters
// unless the deployment names another cloud, and approves the DIG.
func (d *deployment) create() {
	t, c := d.t, d.c
	t.Helper()
	c.do("POST", "/projects", res(d.project, nil)).must(t, 201)
	if d.logicalCloud == "" {
		d.logicalCloud = "default"
		d.cloud("default", map[string]any{"level": "0"}, "cluster1", "cluster2", "cluster3")
	} else if d.setUpCloud != nil {
		d.setUpCloud(d)
	}
	c.do("POST", "/projects/"+d.project+"/composite-apps", res("ca", map[string]any{"compositeAppVersion": "v1"})).must(t, 201)
	c.do("POST", d.ca()+"/composite-profiles", res("prof", nil)).must(t, 201)
	if d.beforeApps != nil {
		d.beforeApps(d)
	}
	for _, a := range d.apps {
		if a.source != nil {
			c.do("POST", d.ca()+"/apps", res(a.name, map[string]any{"chart": a.source})).must(t, 201)
		} else {
			c.multipart("POST", d.ca()+"/apps", res(a.name, nil), a.chart).must(t, 201)
		}
		if a.profile != nil {
			c.do("POST", d.ca()+"/composite-profiles/prof/profiles", res(a.name+"-profile", map[string]any{"app": a.name, "archive": a.profile})).must(t, 201)
			continue
		}
		c.multipart("POST", d.ca()+"/composite-profiles/prof/profiles", res(a.name+"-profile", map[string]any{"app": a.name}),
			testenv.Profile("message: from-"+a.name+"-profile\n")).must(t, 201)
	}
	for _, a := range d.apps {
		if a.dependsOn != "" {
			c.do("POST", d.ca()+"/apps/"+a.name+"/dependency", res("after-"+a.dependsOn,
				map[string]any{"app": a.dependsOn, "opStatus": "Ready", "wait": a.wait})).must(t, 201)
		}
	}
	spec := map[string]any{"compositeProfile": "prof", "version": "r1", "logicalCloud": d.logicalCloud}
	maps.Copy(spec, d.digSpec)
	c.do("POST", d.ca()+"/deployment-intent-groups", res("dig", spec)).must(t, 201)
	c.do("POST", d.dig()+"/generic-placement-intents", res("gpi", nil)).must(t, 201)
	for _, a := range d.apps {
		c.do("POST", d.dig()+"/generic-placement-intents/gpi/app-intents", res(a.name+"-placement",
			map[string]any{"app": a.name, "intent": a.placement})).must(t, 201)
	}
	c.do("POST", d.dig()+"/intents", res("intents", map[string]any{"intent": map[string]string{"genericPlacementIntent": "gpi"}})).must(t, 201)
	c.do("POST", d.dig()+"/approve", nil).must(t, 202)
}

// operate runs a lifecycle operation and returns what the API accepted.
func (d *deployment) operate(op string) lifecycle.OpAccepted {
	d.t.Helper()
	var acc lifecycle.OpAccepted
	d.post(op, nil).must(d.t, 202).json(d.t, &acc)
	return acc
}

// post asks for operation op. The status says Instantiated or Terminated a moment before
// the DIG's workflow has closed the operation that made it: a 409 saying that one still
// runs is asked again, as a client would (a loaded run's next operation came within that
// moment).
func (d *deployment) post(op string, body any) response {
	d.t.Helper()
	r := d.c.do("POST", d.dig()+"/"+op, body)
	for deadline := time.Now().Add(30 * time.Second); r.code == http.StatusConflict && bytes.Contains(r.body, []byte(" is running")) && time.Now().Before(deadline); {
		time.Sleep(200 * time.Millisecond) // the other operation's end is not observable here
		r = d.c.do("POST", d.dig()+"/"+op, body)
	}
	return r
}

// status is the subset of the status answer the tests look at.
type status struct {
	States struct {
		Actions []struct {
			State     string `json:"state"`
			ContextID string `json:"instance"`
			Revision  int64  `json:"revision"`
		} `json:"actions"`
	} `json:"states"`
	Instance       string         `json:"instance"`
	Status         string         `json:"status"`         // DIGs' default (legacy) modes
	DeployedStatus string         `json:"deployedStatus"` // status=deployed|ready, logical clouds
	ReadyStatus    string         `json:"readyStatus"`
	Error          string         `json:"error"`
	RsyncStatus    map[string]int `json:"rsyncStatus"`
	ClusterStatus  map[string]int `json:"clusterStatus"`
	Apps           []struct {
		Name     string `json:"name"`
		Clusters []struct {
			Cluster     string `json:"cluster"`
			ReadyStatus string `json:"readyStatus"` // connectivity, in the legacy modes
			Resources   []struct {
				GVK            struct{ Kind string } `json:"GVK"`
				Name           string                `json:"name"`
				RsyncStatus    string                `json:"rsyncStatus"`
				ClusterStatus  string                `json:"clusterStatus"`
				DeployedStatus string                `json:"deployedStatus"` // status=deployed
				Attempts       int                   `json:"attempts"`
				Error          string                `json:"error"`
				Warning        string                `json:"warning"`
			} `json:"resources"`
		} `json:"clusters"`
	} `json:"apps"`
}

// UnmarshalJSON reads the status of either mode into Status.
func (s *status) UnmarshalJSON(b []byte) error {
	type plain status
	if err := json.Unmarshal(b, (*plain)(s)); err != nil {
		return err
	}
	if s.Status == "" {
		s.Status = s.DeployedStatus
	}
	return nil
}

func (s status) state() string {
	if len(s.States.Actions) == 0 {
		return ""
	}
	return s.States.Actions[len(s.States.Actions)-1].State
}

func (d *deployment) status(query string) status {
	d.t.Helper()
	var s status
	d.c.do("GET", d.dig()+"/status"+query, nil).must(d.t, 200).json(d.t, &s)
	return s
}

// await polls the DIG status until cond holds or the deadline passes.
func (d *deployment) await(what string, timeout time.Duration, query string, cond func(status) bool) status {
	d.t.Helper()
	return awaitValue(d.t, what, timeout, func() status { return d.status(query) }, cond)
}

// awaitValue reads until cond holds for what read returns, and returns that; at the
// deadline it fails the test with what and the last value read.
func awaitValue[V any](t *testing.T, what string, timeout time.Duration, read func() V, cond func(V) bool) V {
	t.Helper()
	var v V
	poll.Until(t, what, timeout, func(context.Context) error {
		if v = read(); cond(v) {
			return nil
		}
		return fmt.Errorf("last seen: %s", pretty(v))
	})
	return v
}

// getAs reads path, which must answer 200, as a V.
func getAs[V any](t *testing.T, c *client, path string) V {
	t.Helper()
	var v V
	c.do("GET", path, nil).must(t, 200).json(t, &v)
	return v
}

func pretty(v any) string {
	b, _ := json.MarshalIndent(v, "", " ")
	s := string(b)
	if len(s) > 4000 {
		s = s[:4000] + "..."
	}
	return s
}

func clusterNamed(name string) map[string]any {
	return map[string]any{"allOf": []any{map[string]any{"clusterProvider": provider, "cluster": name}}}
}

func clusterLabel(label string) map[string]any {
	return map[string]any{"allOf": []any{map[string]any{"clusterProvider": provider, "clusterLabel": label}}}
}

func projectName(t *testing.T) string {
	return strings.ToLower(strings.NewReplacer("/", "-", "_", "-").Replace(t.Name()))
}

func newDeployment(t *testing.T, apps ...app) *deployment {
	return &deployment{t: t, c: &client{t: t}, project: projectName(t), apps: apps}
}

func (d *deployment) String() string { return fmt.Sprintf("deployment %s", d.project) }
