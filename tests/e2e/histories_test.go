package e2e

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/api/proxy"
	"go.temporal.io/api/temporalproto"
	temporalclient "go.temporal.io/sdk/client"

	"github.com/temco/temco/internal/adapters/codec"
	"github.com/temco/temco/internal/core/lifecycle"
	"github.com/temco/temco/internal/core/seal"
)

// recordHistory saves a workflow's history for the replay tests when
// TEMCO_RECORD_HISTORIES names a directory (`make histories`).
func recordHistory(t *testing.T, workflowID, name string) {
	t.Helper()
	dir := os.Getenv("TEMCO_RECORD_HISTORIES")
	if dir == "" {
		return
	}
	hist := history(t, workflowID)
	// Saved decrypted: the files stay readable, and the replay test encrypts them itself.
	keys, err := seal.LoadKeyFile(stack.KeyFile)
	if err != nil {
		t.Fatal(err)
	}
	if err := proxy.VisitPayloads(context.Background(), hist, proxy.VisitPayloadsOptions{
		Visitor: func(_ *proxy.VisitPayloadsContext, p []*commonpb.Payload) ([]*commonpb.Payload, error) {
			return codec.Codec{Keys: keys}.Decode(p)
		},
	}); err != nil {
		t.Fatal(err)
	}
	data, err := temporalproto.CustomJSONMarshalOptions{Indent: "  "}.Marshal(hist)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name+".json"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	// Replay needs the original workflow id: child workflow ids derive from it.
	index := map[string]string{}
	indexFile := filepath.Join(dir, "workflow-ids.json")
	if b, err := os.ReadFile(indexFile); err == nil {
		_ = json.Unmarshal(b, &index)
	}
	index[name+".json"] = workflowID
	b, _ := json.MarshalIndent(index, "", "  ")
	if err := os.WriteFile(indexFile, append(b, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("recorded %s (%d events) as %s", workflowID, len(hist.Events), name)
}

// history reads a workflow's history from the stack's Temporal.
func history(t *testing.T, workflowID string) *historypb.History {
	t.Helper()
	c, err := temporalclient.Dial(temporalclient.Options{HostPort: stack.Temporal.Address()})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	it := c.GetWorkflowHistory(context.Background(), workflowID, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	hist := &historypb.History{}
	for it.HasNext() {
		e, err := it.Next()
		if err != nil {
			t.Fatalf("history of %s: %v", workflowID, err)
		}
		hist.Events = append(hist.Events, e)
	}
	return hist
}

// beginsFollowAcceptance checks, in the history of a lifecycle workflow that was asked no
// stop, that each operation's begin was scheduled as an activity by the workflow task
// that accepted its update: so the begin ran only once Temporal had persisted the
// acceptance, and no update lost with a server restart can leave a begin's record behind
// (a local activity would have run, and written the store, inside that task).
func beginsFollowAcceptance(t *testing.T, workflowID string) {
	t.Helper()
	accepted, begun := 0, 0
	pending := false // an acceptance whose task has scheduled no begin yet
	for _, e := range history(t, workflowID).Events {
		switch e.GetEventType() {
		case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED:
			if e.GetWorkflowExecutionUpdateAcceptedEventAttributes().GetAcceptedRequest().GetInput().GetName() == lifecycle.UpdateOperate {
				accepted++
				pending = true
			}
		case enumspb.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
			if pending && e.GetActivityTaskScheduledEventAttributes().GetActivityType().GetName() == lifecycle.BeginOperation.Name() {
				begun++
				pending = false
			}
		case enumspb.EVENT_TYPE_MARKER_RECORDED, enumspb.EVENT_TYPE_WORKFLOW_TASK_STARTED:
			if e.GetMarkerRecordedEventAttributes().GetMarkerName() == "Version" {
				continue // a version gate's marker, recorded as the task runs
			}
			if pending {
				t.Errorf("%s: event %d (%s) came after an operation's acceptance, before its begin was scheduled",
					workflowID, e.GetEventId(), e.GetEventType())
				pending = false
			}
		}
	}
	if accepted == 0 || begun != accepted {
		t.Errorf("%s: %d operations accepted, %d of them begun by an activity scheduled with the acceptance", workflowID, accepted, begun)
	}
}
