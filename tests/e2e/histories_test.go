package e2e

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/api/temporalproto"
	temporalclient "go.temporal.io/sdk/client"
)

// recordHistory saves a workflow's history for the replay tests when
// TEMCO_RECORD_HISTORIES names a directory (`make histories`).
func recordHistory(t *testing.T, workflowID, name string) {
	t.Helper()
	dir := os.Getenv("TEMCO_RECORD_HISTORIES")
	if dir == "" {
		return
	}
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
