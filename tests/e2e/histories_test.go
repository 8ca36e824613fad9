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
