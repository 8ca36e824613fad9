package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
)

// A user's workflow intent runs on temco's Temporal, served by the user's own worker: the
// api starts it, reads its status and its query, and cancels it.
func TestWorkflowIntentsStartReadStatusAndCancel(t *testing.T) {
	const queue = "e2e-workflow-intents"
	tc := dialTemporal(t)
	defer tc.Close()
	w := worker.New(tc, queue, worker.Options{})
	w.RegisterWorkflowWithOptions(func(ctx workflow.Context, p map[string]any) (string, error) {
		if err := workflow.SetQueryHandler(ctx, "step", func() (string, error) { return "waiting", nil }); err != nil {
			return "", err
		}
		ctx.Done().Receive(ctx, nil) // until canceled
		return "", ctx.Err()
	}, workflow.RegisterOptions{Name: "UntilCanceled"})
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	defer w.Stop()

	c := &client{t: t}
	p := projectName(t)
	ca := "/projects/" + p + "/composite-apps/ca/v1"
	c.do("POST", "/projects", res(p, nil)).must(t, 201)
	c.do("POST", "/projects/"+p+"/composite-apps", res("ca", map[string]any{"compositeAppVersion": "v1"})).must(t, 201)
	c.do("POST", ca+"/deployment-intent-groups", res("dig", map[string]any{
		"compositeProfile": "prof", "version": "r1", "logicalCloud": "default"})).must(t, 201)
	intents := ca + "/deployment-intent-groups/dig/temporal-workflow-intents"
	given := p + "-wf"
	id := "user/" + p + "/ca/v1/dig/" + given // under the DIG's prefix: see workflowmgr.Scope
	c.do("POST", intents, res("wf", map[string]any{"workflowClient": map[string]any{}, "temporal": map[string]any{
		"workflowClientName":   "UntilCanceled",
		"workflowStartOptions": map[string]any{"id": given, "taskqueue": queue, "workflowExecutionTimeout": int64(time.Minute)},
	}})).must(t, 201)
	c.do("POST", intents+"/wf/start", nil).must(t, 204)

	var st struct {
		WorkflowID  string `json:"workflowID"`
		QueryResult string `json:"workflowQueryResult"`
		Description struct {
			Info struct {
				Status string `json:"status"`
			} `json:"workflowExecutionInfo"`
		} `json:"workflowExecutionDescription"`
		Error string `json:"workflowError"`
	}
	// The query handler exists once the worker has run the first workflow task.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		r := c.do("GET", intents+"/wf/status?runDescribeWfExec=true&queryType=step", nil)
		if r.code == 200 || time.Now().After(deadline) {
			r.must(t, 200).json(t, &st)
			break
		}
	}
	if st.WorkflowID != id || st.QueryResult != "waiting" || st.Description.Info.Status != "WORKFLOW_EXECUTION_STATUS_RUNNING" {
		t.Fatalf("status of the running workflow: %+v", st)
	}
	c.do("POST", intents+"/wf/cancel", map[string]any{"spec": map[string]any{"reason": "e2e"}}).must(t, 204)
	c.do("GET", intents+"/wf/status?waitForResult=true", nil).must(t, 200).json(t, &st)
	if !strings.Contains(st.Error, "canceled") {
		t.Errorf("status after cancel: workflowError %q", st.Error)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	d, err := tc.DescribeWorkflowExecution(ctx, id, "")
	if err != nil {
		t.Fatal(err)
	}
	if got := d.WorkflowExecutionInfo.Status.String(); got != "Canceled" {
		t.Errorf("workflow %s is %s, want Canceled", id, got)
	}
}
