// Package apitest drives workflowmgr's REST resources through temco's API against a real
// FerretDB and a Temporal dev server, with a worker of the test's own serving the workflow.
package apitest

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/temco/temco/api"
	"github.com/temco/temco/controllers/apiharness"
	"github.com/temco/temco/controllers/workflowmgr"
	"github.com/temco/temco/internal/adapters/egress"
	"github.com/temco/temco/internal/dev/devstack"
	"github.com/temco/temco/internal/dev/testenv"
)

var (
	ferret *devstack.FerretDB
	server *devstack.Temporal
	tc     client.Client
)

const (
	dig     = apiharness.DIG
	intents = dig + "/temporal-workflow-intents"
	queue   = "workflowmgr-test"
)

func TestMain(m *testing.M) { os.Exit(run(m)) }

func run(m *testing.M) int {
	dir, err := os.MkdirTemp("", "temco-workflowmgr-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	if ferret, err = testenv.StartFerretDB(filepath.Join(dir, "ferretdb")); err != nil {
		fmt.Fprintln(os.Stderr, "start FerretDB:", err)
		return 1
	}
	defer ferret.Stop()
	if server, err = startTemporal(filepath.Join(dir, "temporal")); err != nil {
		fmt.Fprintln(os.Stderr, "start Temporal:", err)
		return 1
	}
	defer server.Stop()
	if tc, err = client.Dial(client.Options{HostPort: server.Address(), Logger: log.NewStructuredLogger(slog.New(slog.NewTextHandler(io.Discard, nil)))}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer tc.Close()
	w := worker.New(tc, queue, worker.Options{})
	w.RegisterWorkflowWithOptions(waitForFinish, workflow.RegisterOptions{Name: "WaitForFinish"})
	if err := w.Start(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer w.Stop()
	return m.Run()
}

// startTemporal starts a dev server on free ports, on others again if it exits at once:
// a port found free may be taken meanwhile by another package's stack (make test runs
// several), which ended this package once.
func startTemporal(dir string) (*devstack.Temporal, error) {
	bin, err := testenv.BinDir()
	if err != nil {
		return nil, err
	}
	for attempt := 1; ; attempt++ {
		t := &devstack.Temporal{Bin: filepath.Join(bin, "temporal"), Dir: dir}
		if t.Port, err = devstack.FreePort(); err != nil {
			return nil, err
		}
		if t.UIPort, err = devstack.FreePort(); err != nil {
			return nil, err
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		err = t.Start(ctx)
		timedOut := ctx.Err() != nil
		cancel()
		if err == nil || attempt == 3 || timedOut {
			return t, err
		}
		fmt.Fprintf(os.Stderr, "start Temporal (attempt %d): %v; on other ports again\n", attempt, err)
	}
}

// waitForFinish is a user's workflow: it answers query "step" and returns the "all"
// activity's parameter "k" once signalled "finish", or ends canceled.
func waitForFinish(ctx workflow.Context, p workflowmgr.WorkflowParams) (string, error) {
	step := "waiting"
	if err := workflow.SetQueryHandler(ctx, "step", func(prefix string) (string, error) { return prefix + step, nil }); err != nil {
		return "", err
	}
	finished := false
	sel := workflow.NewSelector(ctx)
	sel.AddReceive(workflow.GetSignalChannel(ctx, "finish"), func(c workflow.ReceiveChannel, _ bool) {
		c.Receive(ctx, nil)
		finished = true
	})
	sel.AddReceive(ctx.Done(), func(workflow.ReceiveChannel, bool) {})
	sel.Select(ctx)
	if !finished {
		return "", ctx.Err()
	}
	return p.ActivityParams["all"]["k"], nil
}

// newServer serves workflow intents; requests may name hosts of 127.0.0.1 (the test's
// Temporal server and workflow clients).
func newServer(t *testing.T) *apiharness.Server {
	return newServerAllowing(t, "127.0.0.1")
}

func newServerAllowing(t *testing.T, hosts string) *apiharness.Server {
	t.Helper()
	s := apiharness.New(t, ferret, nil, workflowmgr.Kinds(&workflowmgr.Temporal{Own: tc, Egress: egress.MustParse(hosts),
		Rules: workflowmgr.Rules{OwnTaskQueue: "temco"}})...)
	s.TreeWithDIG()
	return s
}

// intent is a workflow intent body in EMCO's example style: lowercase Temporal keys.
func intent(name, id string, client map[string]any) map[string]any {
	if client == nil {
		client = map[string]any{}
	}
	return apiharness.Body(name, map[string]any{"workflowClient": client, "temporal": map[string]any{
		"workflowClientName":   "WaitForFinish",
		"workflowStartOptions": map[string]any{"id": id, "taskqueue": queue, "workflowRunTimeout": int64(time.Minute)},
		"workflowParams":       map[string]any{"activityParams": map[string]any{"all": map[string]string{"k": "v"}}},
	}})
}

func status(t *testing.T, s *apiharness.Server, name, query string) workflowStatus {
	t.Helper()
	var st workflowStatus
	if err := json.Unmarshal([]byte(s.Want("GET", intents+"/"+name+"/status?"+query, nil, 200)), &st); err != nil {
		t.Fatal(err)
	}
	return st
}

type workflowStatus struct {
	WorkflowID  string `json:"workflowID"`
	RunID       string `json:"runID"`
	Description struct {
		WorkflowExecutionInfo struct {
			Status string `json:"status"`
		} `json:"workflowExecutionInfo"`
	} `json:"workflowExecutionDescription"`
	History     []map[string]any `json:"workflowHistory"`
	Result      any              `json:"workflowResult"`
	QueryResult any              `json:"workflowQueryResult"`
	Error       string           `json:"workflowError"`
}

func TestIntentsValidateAsEMCO(t *testing.T) {
	s := newServer(t)
	s.Refused("POST", intents, apiharness.Body("w", map[string]any{"workflowClient": map[string]any{}}), "spec.temporal is required")
	s.Refused("POST", intents, apiharness.Body("w", map[string]any{"workflowClient": map[string]any{},
		"temporal": map[string]any{"workflowStartOptions": map[string]any{"ID": "x"}}}), "workflowStartOptions.TaskQueue is required")
	s.Refused("POST", intents, apiharness.Body("w", map[string]any{"workflowClient": map[string]any{},
		"temporal": map[string]any{"workflowStartOptions": map[string]any{"TaskQueue": "q", "WorkflowRunTimeout": "1m"}}}), "")
	s.Want("POST", intents, intent("w", "", nil), 201)
	s.Want("POST", intents, intent("w", "", nil), 409)
	got := s.Want("GET", intents+"/w", nil, 200)
	if !strings.Contains(got, `"TaskQueue":"`+queue+`"`) || !strings.Contains(got, `"WorkflowRunTimeout":60000000000`) {
		t.Errorf("stored intent %s lacks Temporal's keys", got)
	}
	s.Want("POST", intents+"/none/start", nil, 404)
	s.Refused("GET", intents+"/w/status?workflowId=x", nil, "Unknown query parameter: workflowId")
	s.Refused("POST", intents+"/w/cancel", nil, "empty workflow cancel request body")
	s.Want("DELETE", intents+"/w", nil, 204)
}

func TestStartQueryAndResultOnTemcosTemporal(t *testing.T) {
	s := newServer(t)
	s.Want("POST", intents, intent("w", "", nil), 201)
	req := httptest.NewRequest("POST", "/v2"+intents+"/w/start", nil)
	req.Header.Set(api.ClientHeader, "test")
	rec := httptest.NewRecorder()
	s.Handler.ServeHTTP(rec, req)
	if rec.Code != 204 {
		t.Fatalf("start: %d %s", rec.Code, rec.Body)
	}
	const id = "user/p/ca/v1/dig/w" // the intent names no id: the DIG's prefix and its name
	if loc := rec.Header().Get("Location"); !strings.Contains(loc, "workflowID="+url.QueryEscape(id)) {
		t.Errorf("Location %q does not name workflow %s", loc, id)
	}
	st := status(t, s, "w", "runDescribeWfExec=true")
	if st.WorkflowID != id || st.Description.WorkflowExecutionInfo.Status != "WORKFLOW_EXECUTION_STATUS_RUNNING" {
		t.Errorf("status %+v", st)
	}
	// The query handler exists once the worker has run the first workflow task.
	if err := awaitHistory(id, 3); err != nil {
		t.Fatal(err)
	}
	if st := status(t, s, "w", "queryType=step&queryParams=now:"); st.QueryResult != "now:waiting" {
		t.Errorf("query result %v", st.QueryResult)
	}
	if err := tc.SignalWorkflow(context.Background(), id, "", "finish", nil); err != nil {
		t.Fatal(err)
	}
	st = status(t, s, "w", "waitForResult=true&getWfHistory=true")
	if st.Result != "v" || len(st.History) < 5 || st.Error != "" {
		t.Errorf("result %v, error %q, %d history events", st.Result, st.Error, len(st.History))
	}
	s.Want("GET", intents+"/w/status?runDescribeWfExec=true&workflowID=nosuch", nil, 404)
}

// awaitHistory waits until workflow id has at least n events (the first workflow task
// completed makes 4).
func awaitHistory(id string, n int) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for {
		events := 0
		it := tc.GetWorkflowHistory(ctx, id, "", false, 0)
		for it.HasNext() {
			if _, err := it.Next(); err != nil {
				return err
			}
			events++
		}
		if events > n {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("workflow %s: %d history events after 10 s", id, events)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func TestCancelAndTerminate(t *testing.T) {
	s := newServer(t)
	s.Want("POST", intents, intent("c", "wfmgr-cancel", nil), 201)
	s.Want("POST", intents+"/c/start", nil, 204)
	s.Want("POST", intents+"/c/cancel", map[string]any{"spec": map[string]any{}}, 204)
	if st := status(t, s, "c", "waitForResult=true"); !strings.Contains(st.Error, "canceled") {
		t.Errorf("canceled workflow: error %q", st.Error)
	}

	// The request names the server: dialled for that request (here the same one).
	s.Want("POST", intents, intent("t", "wfmgr-terminate", nil), 201)
	s.Want("POST", intents+"/t/start", nil, 204)
	s.Want("POST", intents+"/t/cancel", map[string]any{"spec": map[string]any{"temporalServer": server.Address(),
		"terminate": true, "reason": "no longer needed"}}, 204)
	st := status(t, s, "t", "runDescribeWfExec=true&temporalServer="+server.Address())
	if got := st.Description.WorkflowExecutionInfo.Status; got != "WORKFLOW_EXECUTION_STATUS_TERMINATED" {
		t.Errorf("terminated workflow: status %s", got)
	}
	s.Want("GET", intents+"/t/status?runDescribeWfExec=true&temporalServer=127.0.0.1:1", nil, 502)
}

// Hosts no admin allowed are never dialled: 403 naming the host, nothing stored.
func TestHostsOffTheAllowListAreRefused(t *testing.T) {
	s := newServerAllowing(t, "")
	s.Want("POST", intents, intent("t", "wfmgr-remote", nil), 201)
	s.Want("GET", intents+"/t/status?runDescribeWfExec=true&temporalServer="+server.Address(), nil, 403)
	s.Want("POST", intents+"/t/cancel", map[string]any{"spec": map[string]any{"temporalServer": server.Address(), "terminate": true}}, 403)
	s.Want("POST", intents, intent("e", "", map[string]any{"clientEndpointName": "127.0.0.1", "clientEndpointPort": 9}), 403)
	s.Want("GET", intents+"/e", nil, 404)
	// temco's own task queue is not a user's.
	body := intent("own", "", nil)
	body["spec"].(map[string]any)["temporal"].(map[string]any)["workflowStartOptions"].(map[string]any)["taskqueue"] = "temco"
	s.Want("POST", intents, body, 403)
}

func TestStartThroughEMCOWorkflowClient(t *testing.T) {
	var mu sync.Mutex
	var got []string
	answer := http.StatusNoContent
	wc := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		got = append(got, r.Method+" "+r.URL.Path+" "+string(body))
		code := answer
		mu.Unlock()
		w.WriteHeader(code)
	}))
	defer wc.Close()
	host, port, _ := strings.Cut(strings.TrimPrefix(wc.URL, "http://"), ":")
	var portNum int
	fmt.Sscan(port, &portNum)
	s := newServer(t)
	s.Want("POST", intents, intent("e", "emco-1", map[string]any{"clientEndpointName": host, "clientEndpointPort": portNum}), 201)
	s.Want("POST", intents+"/e/start", nil, 204)
	mu.Lock()
	answer = http.StatusInternalServerError
	mu.Unlock()
	s.Want("POST", intents+"/e/start", nil, 502)
	if len(got) != 2 || !strings.HasPrefix(got[0], "POST /invoke/WaitForFinish {") || !strings.Contains(got[0], `"TaskQueue":"`+queue+`"`) ||
		!strings.Contains(got[0], `"ID":"user/p/ca/v1/dig/emco-1"`) {
		t.Errorf("workflow client got %q", got)
	}
}
