package e2e

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/temco/temco/activities/cluster"
	"github.com/temco/temco/edgeagent"
	"github.com/temco/temco/internal/core/lifecycle"
	"github.com/temco/temco/internal/dev/testenv"
)

// agentDriftView is the drift section of a DIG's status, as an agent cluster shows it.
type agentDriftView struct {
	Drift *struct {
		Check           string `json:"check"`
		ClustersChecked int    `json:"clustersChecked"`
		InSync          int    `json:"inSync"`
		Drifted         int    `json:"drifted"`
		Corrected       int    `json:"corrected"`
		APIRequests     int    `json:"apiRequests"`
		Objects         []struct {
			Cluster string                `json:"cluster"`
			GVK     struct{ Kind string } `json:"GVK"`
			Name    string                `json:"name"`
			Missing bool                  `json:"missing"`
			Fields  []struct {
				Path     string `json:"path"`
				Live     string `json:"live"`
				Desired  string `json:"desired"`
				Redacted bool   `json:"redacted"`
			} `json:"fields"`
			Corrected bool       `json:"corrected"`
			Error     string     `json:"error"`
			Reported  *time.Time `json:"reported"`
		} `json:"objects"`
		Unchecked []struct {
			Cluster string `json:"cluster"`
			Reason  string `json:"reason"`
		} `json:"unchecked"`
	} `json:"drift"`
}

// driftChart is a Deployment, a ConfigMap and a Secret whose value is secret.
func driftChart(name, secret string) []byte {
	return testenv.Chart(name, "replicas: 1\n", map[string]string{"all.yaml": `apiVersion: apps/v1
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
kind: ConfigMap
metadata:
  name: {{ .Chart.Name }}-config
data:
  message: hello
---
apiVersion: v1
kind: Secret
metadata:
  name: {{ .Chart.Name }}-secret
stringData:
  token: ` + secret + "\n"})
}

// counter stands between an agent and the api and counts the agent's POSTs by the last
// element of their path (live, drift...).
type counter struct {
	mu    sync.Mutex
	posts map[string]int
	proxy *httputil.ReverseProxy
}

func (c *counter) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodPost {
		c.mu.Lock()
		c.posts[r.URL.Path[strings.LastIndex(r.URL.Path, "/")+1:]]++
		c.mu.Unlock()
	}
	c.proxy.ServeHTTP(w, r)
}

func (c *counter) count(what string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.posts[what]
}

// Drift on an agent cluster (docs/agent.md, "Drift"): temco reads nothing there. Its
// agent compares what it applied with its cluster each time it reads it, and sends what
// it found when that changed; a drift check records the agent's last report. A Deployment
// scaled and a Secret changed on the agent's own API server behind temco's back show in
// the DIG's drift status and the fleet, naming the fields (the Secret's values never),
// with the report's time; correctDrift leaves them, saying why; set back by hand, the next
// check finds the cluster in sync. Between changes the agent sends nothing, however often
// it reads its cluster.
func TestAgentClusterReportsDriftOnItsTimer(t *testing.T) {
	kube := stack.Clusters[2]
	c := &client{t: t}
	c.multipart("POST", "/cluster-providers/"+provider+"/clusters", res("drift-agent", map[string]any{"access": "agent"}), nil).must(t, 201)
	var tok struct{ Token string }
	c.do("POST", "/cluster-providers/"+provider+"/clusters/drift-agent/agent-token", nil).must(t, 201).json(t, &tok)
	base := strings.TrimSuffix(apiURL, "/v2")
	joined, err := edgeagent.Join(context.Background(), base, tok.Token, http.DefaultClient)
	if err != nil {
		t.Fatal(err)
	}

	// The agent runs in this process (temco agent's own code, as cmd/temco builds it)
	// so that it reads its cluster every second rather than every ReportEvery.
	target, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	posts := &counter{posts: map[string]int{}, proxy: httputil.NewSingleHostReverseProxy(target)}
	srv := httptest.NewServer(posts)
	defer srv.Close()
	kc, err := os.ReadFile(kube.Kubeconfig())
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := clientcmd.RESTConfigFromKubeConfig(kc)
	if err != nil {
		t.Fatal(err)
	}
	// Each comparison lists the objects by their deployment's label: counted here, as the
	// agent sends what its cluster shows only when that changed.
	var compared atomic.Int64
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return listCounter{rt: rt, n: &compared}
	})
	logFile, err := os.Create(filepath.Join(tmpRoot, "agent-drift-agent.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer logFile.Close()
	ag := &edgeagent.Agent{API: &edgeagent.API{Base: srv.URL, Credential: joined.Credential, HTTP: &http.Client{Timeout: time.Minute}},
		Local: cluster.NewLocal("agent", cfg, ""), Log: slog.New(slog.NewJSONHandler(logFile, nil)), Poll: time.Second, Report: time.Second}
	ctx, stop := context.WithCancel(context.Background())
	ran := make(chan struct{})
	go func() { defer close(ran); _ = ag.Run(ctx) }()
	defer func() { stop(); <-ran }()

	const secret = "s3cret-agent-drift-e2e"
	d := newDeployment(t, app{name: "dweb", chart: driftChart("dweb", secret), placement: clusterNamed("drift-agent")})
	d.logicalCloud, d.setUpCloud = "agents", onClusters("drift-agent")
	d.create()
	d.operate(lifecycle.OpInstantiate)
	d.await("Instantiated", 3*time.Minute, "", func(s status) bool { return s.Status == lifecycle.StatusInstantiated })

	// check asks for a drift check (correcting when correct) until one that ended shows
	// what cond wants; it returns that check's view and the status's body.
	check := func(what string, correct bool, cond func(agentDriftView) bool) (agentDriftView, string) {
		t.Helper()
		var (
			v    agentDriftView
			body string
		)
		eventually(t, what, 3*time.Minute, func() error {
			var acc struct{ WorkflowID string }
			c.do("POST", d.dig()+"/drift-check", map[string]any{"correct": correct}).must(t, 202).json(t, &acc)
			eventually(t, "drift check "+acc.WorkflowID+" ended", time.Minute, func() error {
				v, body = agentDriftView{}, string(c.do("GET", d.dig()+"/status", nil).must(t, 200).body)
				if err := json.Unmarshal([]byte(body), &v); err != nil {
					return err
				}
				if v.Drift == nil || v.Drift.Check != acc.WorkflowID {
					return fmt.Errorf("the status shows another check: %s", pretty(v))
				}
				return nil
			})
			if !cond(v) {
				return fmt.Errorf("last check: %s", pretty(v))
			}
			return nil
		})
		return v, body
	}

	// As applied: the agent's first read sent its finding, in sync.
	v, _ := check("the agent's report of its cluster in sync", false, func(v agentDriftView) bool {
		return v.Drift.ClustersChecked == 1 && v.Drift.InSync == 3 && v.Drift.Drifted == 0 && len(v.Drift.Unchecked) == 0
	})
	if v.Drift.APIRequests != 0 {
		t.Errorf("temco made %d requests on the agent's cluster: %s", v.Drift.APIRequests, pretty(v))
	}

	// Behind temco's back, on the agent's own API server.
	dc := dynClient(t, kube)
	bg := context.Background()
	if _, err := dc.Resource(gvrDeployment).Namespace("default").Patch(bg, "dweb", types.MergePatchType, []byte(`{"spec":{"replicas":3}}`),
		metav1.PatchOptions{FieldManager: "operator-by-hand"}); err != nil {
		t.Fatal(err)
	}
	const changed = "changed-by-hand-agent-drift"
	setSecret := func(value string) {
		t.Helper()
		patch := `{"data":{"token":"` + base64.StdEncoding.EncodeToString([]byte(value)) + `"}}`
		if _, err := dc.Resource(gvrSecret).Namespace("default").Patch(bg, "dweb-secret", types.MergePatchType, []byte(patch),
			metav1.PatchOptions{FieldManager: "operator-by-hand"}); err != nil {
			t.Fatal(err)
		}
	}
	setSecret(changed)
	changedAt := time.Now().UTC().Add(-time.Second) // the api stamps the report: same machine, a second's slack

	v, body := check("the scaled Deployment and the changed Secret in the drift status", false, func(v agentDriftView) bool {
		return v.Drift.Drifted == 2
	})
	dr := v.Drift
	if dr.ClustersChecked != 1 || dr.InSync != 1 || dr.Corrected != 0 || len(dr.Unchecked) != 0 || dr.APIRequests != 0 {
		t.Errorf("the drift check of the agent cluster: %s", pretty(v))
	}
	found := map[string]bool{}
	for _, o := range dr.Objects {
		if o.Cluster != "drift-agent" || o.Missing || o.Corrected || o.Reported == nil || o.Reported.Before(changedAt) {
			t.Errorf("drifted object: %s", pretty(o))
			continue
		}
		switch {
		case o.GVK.Kind == "Deployment" && o.Name == "dweb" && len(o.Fields) == 1 && o.Fields[0].Path == "spec.replicas" &&
			o.Fields[0].Live == "3" && o.Fields[0].Desired == "1":
			found["scaled"] = true
		case o.GVK.Kind == "Secret" && o.Name == "dweb-secret" && len(o.Fields) == 1 && o.Fields[0].Path == "data.token" &&
			o.Fields[0].Redacted && o.Fields[0].Live == "" && o.Fields[0].Desired == "":
			found["secret"] = true
		}
	}
	if !found["scaled"] || !found["secret"] {
		t.Errorf("drifted objects found %v: %s", found, pretty(v))
	}
	for _, value := range []string{secret, changed, base64.StdEncoding.EncodeToString([]byte(secret)), base64.StdEncoding.EncodeToString([]byte(changed))} {
		if strings.Contains(body, value) {
			t.Errorf("the status shows a Secret's value %q", value)
		}
	}
	// The fleet (the dashboard's home) counts it as any drift.
	var fl struct {
		DIGs []struct {
			Drift *struct {
				Drifted int `json:"drifted"`
			} `json:"drift"`
			Attention []string `json:"attention"`
		} `json:"digs"`
	}
	c.do("GET", "/fleet?project="+d.project, nil).must(t, 200).json(t, &fl)
	if len(fl.DIGs) != 1 || fl.DIGs[0].Drift == nil || fl.DIGs[0].Drift.Drifted != 2 || !strings.Contains(strings.Join(fl.DIGs[0].Attention, ";"), "2 objects drifted") {
		t.Errorf("the fleet: %s", pretty(fl))
	}

	// Unchanged: the agent reads its cluster on and on, and sends no drift report.
	sent, reads := posts.count("drift"), compared.Load()
	eventually(t, "three more comparisons on the agent's cluster", time.Minute, func() error {
		if n := compared.Load(); n < reads+3 {
			return fmt.Errorf("%d lists since", n-reads)
		}
		return nil
	})
	if n := posts.count("drift"); n != sent {
		t.Errorf("%d drift reports sent while nothing changed, want none", n-sent)
	}

	// Correcting: temco holds no credential there; the objects say so and stay as they are.
	v, _ = check("a correcting check of the agent cluster", true, func(v agentDriftView) bool { return v.Drift.Drifted == 2 })
	for _, o := range v.Drift.Objects {
		if o.Corrected || !strings.Contains(o.Error, "not corrected: temco holds no credential of an agent cluster") {
			t.Errorf("corrected object: %s", pretty(o))
		}
	}
	if u, err := dc.Resource(gvrDeployment).Namespace("default").Get(bg, "dweb", metav1.GetOptions{}); err != nil || liveReplicas(u.Object) != 3 {
		t.Errorf("dweb after the correcting check: %v replicas, %v", liveReplicas(u.Object), err)
	}

	// Set back by hand: the agent sends the change, and the next check finds it in sync.
	if _, err := dc.Resource(gvrDeployment).Namespace("default").Patch(bg, "dweb", types.MergePatchType, []byte(`{"spec":{"replicas":1}}`),
		metav1.PatchOptions{FieldManager: "operator-by-hand"}); err != nil {
		t.Fatal(err)
	}
	setSecret(secret)
	check("the agent cluster in sync again", false, func(v agentDriftView) bool {
		return v.Drift.Drifted == 0 && v.Drift.InSync == 3 && len(v.Drift.Objects) == 0
	})
	if n := posts.count("drift"); n <= sent {
		t.Errorf("no drift report sent after the cluster changed back")
	}

	d.operate(lifecycle.OpTerminate)
	d.await("Terminated", 3*time.Minute, "", func(s status) bool { return s.Status == lifecycle.StatusTerminated })
}

// listCounter counts the LISTs by label selector that pass through it (a drift
// comparison's reads).
type listCounter struct {
	rt http.RoundTripper
	n  *atomic.Int64
}

func (l listCounter) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Method == http.MethodGet && r.URL.Query().Has("labelSelector") {
		l.n.Add(1)
	}
	return l.rt.RoundTrip(r)
}
