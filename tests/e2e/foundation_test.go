package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.temporal.io/api/enums/v1"
	"go.temporal.io/api/operatorservice/v1"
	temporalclient "go.temporal.io/sdk/client"

	"github.com/temco/temco/internal/core/lifecycle"
	"github.com/temco/temco/workers"
)

func TestTemporalWebUIAnswers(t *testing.T) {
	resp, err := http.Get(stack.Temporal.UIURL())
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("Temporal Web UI answered %s", resp.Status)
	}
}

func TestEveryClusterHasAReadyNode(t *testing.T) {
	for _, cl := range stack.Clusters {
		out, err := exec.Command(binDir+"/kubectl", "--kubeconfig", cl.Kubeconfig(), "get", "nodes", "--no-headers").CombinedOutput()
		if err != nil {
			t.Fatalf("kubectl get nodes on %s: %v: %s", cl.Name, err, out)
		}
		if f := strings.Fields(string(out)); len(f) < 2 || f[0] != "kwok-node-0" || f[1] != "Ready" {
			t.Errorf("%s nodes: %s", cl.Name, out)
		}
	}
}

// kill -9 of the api process loses no write it acknowledged.
func TestAPIKilledLosesNoAcknowledgedWrite(t *testing.T) {
	c := &client{} // no t: requests fail while the api is down
	var mu sync.Mutex
	var acked []string
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for w := range 4 {
		wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				name := fmt.Sprintf("kill-%d-%d", w, i)
				if r := c.do("POST", "/projects", res(name, nil)); r.code == 201 {
					mu.Lock()
					acked = append(acked, "/projects/"+name)
					mu.Unlock()
				}
				if r := c.do("POST", "/projects/"+name+"/composite-apps", res("ca", map[string]any{"compositeAppVersion": "v1"})); r.code == 201 {
					mu.Lock()
					acked = append(acked, "/projects/"+name+"/composite-apps/ca/v1")
					mu.Unlock()
				}
			}
		})
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		mu.Lock()
		n := len(acked)
		mu.Unlock()
		if n >= 40 || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	stack.API.Kill()
	close(stop)
	wg.Wait()
	if err := stack.StartAPI(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(acked) < 40 {
		t.Fatalf("only %d writes acknowledged before the kill", len(acked))
	}
	tc := &client{t: t}
	for _, path := range acked {
		if r := tc.do("GET", path, nil); r.code != 200 {
			t.Errorf("acknowledged %s is lost: %d %s", path, r.code, r.body)
		}
	}
	t.Logf("%d acknowledged writes survived kill -9 of the api", len(acked))
	// Nothing half-written is visible: every listed project reads back in full.
	var projects []struct {
		Metadata struct{ Name string } `json:"metadata"`
	}
	tc.do("GET", "/projects", nil).must(t, 200).json(t, &projects)
	for _, p := range projects {
		tc.do("GET", "/projects/"+p.Metadata.Name+"/composite-apps", nil).must(t, 200)
	}
}

func metricsOf(t *testing.T, url string) string {
	t.Helper()
	return string(getOK(t, url))
}

// getOK reads url, failing t unless it answers 200.
func getOK(t *testing.T, url string) []byte {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		t.Fatalf("GET %s: %s %s", url, resp.Status, b)
	}
	return b
}

// The api and the worker expose Prometheus metrics: requests by route, method and code;
// cluster operations by cluster and outcome, with latency and retries; Temporal SDK metrics.
// Both answer their readiness probes.
func TestMetricsAreExposed(t *testing.T) {
	d := newDeployment(t, app{name: "web", chart: webChart("web"), placement: clusterNamed("cluster1")})
	d.create()
	acc := d.operate("instantiate")
	d.await("Instantiated", time.Minute, "", func(s status) bool { return s.Status == "Instantiated" })
	// JSON logs tie a request to its workflow: the api logs the request and workflow ids,
	// the worker the operation's end under the same workflow id.
	logged(t, "api.log", map[string]any{"msg": "operation started", "workflow_id": acc.WorkflowID, "op": "instantiate"}, "request_id")
	logged(t, "worker.log", map[string]any{"msg": "operation ended", "WorkflowID": acc.WorkflowID, "status": "Instantiated"}, "RunID")
	api := metricsOf(t, strings.TrimSuffix(apiURL, "/v2")+"/metrics")
	for _, want := range []string{
		`temco_api_requests_total{code="201",method="POST",route="/v2/projects"}`,
		`temco_api_request_duration_seconds_bucket{method="POST",route="/v2/projects/:project/composite-apps/:compositeApp/:version/deployment-intent-groups/:deploymentIntentGroup/instantiate"`,
		"temporal_request", // the api's Temporal client
		`temco_store_commands_total{collection="resources",command="find",outcome="ok"}`,
	} {
		if !strings.Contains(api, want) {
			t.Errorf("api metrics lack %s", want)
		}
	}
	worker := metricsOf(t, fmt.Sprintf("http://127.0.0.1:%d/metrics", stack.MetricsPort()))
	for _, want := range []string{
		`temco_cluster_operations_total{cluster="local+cluster1",operation="apply",outcome="ok"}`,
		`temco_cluster_operation_duration_seconds_bucket{cluster="local+cluster1",operation="apply"`,
		"temporal_activity_execution_latency", "temporal_workflow_task_execution_latency", "go_goroutines",
		`temco_store_commands_total{collection="ctxplaced",command="update",outcome="ok"}`, `temco_store_command_duration_seconds_bucket{command="update"`,
	} {
		if !strings.Contains(worker, want) {
			t.Errorf("worker metrics lack %s", want)
		}
	}
	// Both are ready: their store and Temporal answer.
	for _, url := range []string{strings.TrimSuffix(apiURL, "/v2") + "/readyz", fmt.Sprintf("http://127.0.0.1:%d/readyz", stack.MetricsPort())} {
		if got := metricsOf(t, url); got != "ok" {
			t.Errorf("%s: %q", url, got)
		}
	}
	d.operate("terminate")
	d.await("Terminated", time.Minute, "", func(s status) bool { return s.Status == "Terminated" })
}

// A worker started against a fresh namespace registers the search attributes the lifecycle
// workflows carry; starting again changes nothing.
func TestWorkerRegistersSearchAttributes(t *testing.T) {
	ns := "sa-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	if out, err := exec.Command(binDir+"/temporal", "operator", "namespace", "create", "--address", stack.Temporal.Address(),
		"--namespace", ns).CombinedOutput(); err != nil {
		t.Fatalf("create namespace: %v %s", err, out)
	}
	c, err := temporalclient.Dial(temporalclient.Options{HostPort: stack.Temporal.Address(), Namespace: ns})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	for range 2 {
		if err := workers.EnsureSearchAttributes(ctx, c, ns); err != nil {
			t.Fatal(err)
		}
	}
	list, err := c.OperatorService().ListSearchAttributes(ctx, &operatorservice.ListSearchAttributesRequest{Namespace: ns})
	if err != nil {
		t.Fatal(err)
	}
	for name := range lifecycle.SearchAttributeTypes() {
		if list.GetCustomAttributes()[name] != enums.INDEXED_VALUE_TYPE_KEYWORD {
			t.Errorf("search attribute %s: %v, want Keyword", name, list.GetCustomAttributes()[name])
		}
	}
}

// logged waits for a JSON line of a temco log carrying every field of want, and keys.
func logged(t *testing.T, file string, want map[string]any, keys ...string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		data, err := os.ReadFile(filepath.Join(stack.DataDir(), "logs", file))
		if err != nil {
			t.Fatal(err)
		}
	lines:
		for _, line := range strings.Split(string(data), "\n") {
			var rec map[string]any
			if json.Unmarshal([]byte(line), &rec) != nil {
				continue
			}
			for k, v := range want {
				if rec[k] != v {
					continue lines
				}
			}
			for _, k := range keys {
				if rec[k] == nil || rec[k] == "" {
					t.Errorf("%s: %s lacks %s", file, line, k)
				}
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s has no JSON line with %v", file, want)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
