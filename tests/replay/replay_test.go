// Package replay replays workflow histories recorded from real runs (tests/testdata, a
// new set per workflow change recorded by `make histories`) against the current workflow
// code: a change that would break running workflows fails here.
package replay

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	commonpb "go.temporal.io/api/common/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/api/proxy"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/interceptor"
	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/temco/temco/internal/adapters/codec"
	"github.com/temco/temco/internal/adapters/tracing"
	"github.com/temco/temco/internal/core/seal"
	"github.com/temco/temco/workers"
)

// Every set of histories (one directory per recording, kept forever) must replay: a set
// recorded before a workflow change proves the change is compatible with runs in flight.
func TestRecordedHistoriesReplay(t *testing.T) {
	sets, err := filepath.Glob("../testdata/histories/*/workflow-ids.json")
	if err != nil {
		t.Fatal(err)
	}
	if len(sets) == 0 {
		t.Fatal("no recorded histories: run `make histories`")
	}
	seen := map[string]bool{}
	keys, err := seal.NewKeyring([]string{"replay"}, [][]byte{make([]byte, 32)})
	if err != nil {
		t.Fatal(err)
	}
	dc := codec.DataConverter(keys)
	// Spans recorded, not exported: the SDK's provider with no exporter.
	traced, err := tracing.TemporalInterceptor(sdktrace.NewTracerProvider())
	if err != nil {
		t.Fatal(err)
	}
	for _, index := range sets {
		dir := filepath.Dir(index)
		ids := map[string]string{}
		b, err := os.ReadFile(index)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(b, &ids); err != nil {
			t.Fatal(err)
		}
		files := make([]string, 0, len(ids))
		for f := range ids {
			files = append(files, f)
		}
		sort.Strings(files)
		for _, f := range files {
			t.Run(filepath.Base(dir)+"/"+f, func(t *testing.T) {
				// Replayed as recorded (unencrypted payloads pass through the codec),
				// encrypted, as a worker with payload encryption reads them, and through
				// the tracing interceptor, as a worker with traces on replays them.
				for _, v := range []struct{ encrypt, traced bool }{{false, false}, {true, false}, {true, true}} {
					encrypt := v.encrypt
					hist, err := client.HistoryFromJSON(mustOpen(t, filepath.Join(dir, f)), client.HistoryJSONOptions{})
					if err != nil {
						t.Fatal(err)
					}
					if encrypt {
						encryptOwn(t, hist, codec.Codec{Keys: keys})
					}
					opts := worker.WorkflowReplayerOptions{DataConverter: dc, FailureConverter: codec.FailureConverter(dc)}
					if v.traced {
						opts.Interceptors = []interceptor.WorkerInterceptor{traced}
					}
					r, err := worker.NewWorkflowReplayerWithOptions(opts)
					if err != nil {
						t.Fatal(err)
					}
					for name, fn := range workers.AllWorkflows() {
						r.RegisterWorkflowWithOptions(fn, workflow.RegisterOptions{Name: name})
					}
					err = r.ReplayWorkflowHistoryWithOptions(log.NewStructuredLogger(slog.New(slog.DiscardHandler)), hist,
						worker.ReplayWorkflowHistoryOptions{OriginalExecution: workflow.Execution{ID: ids[f], RunID: "replay"}})
					if err != nil {
						t.Fatalf("replay %s (encrypted: %v, traced: %v): %v", f, encrypt, v.traced, err)
					}
				}
			})
			seen[strings.SplitN(f, "-", 2)[0]] = true
		}
	}
	for name := range workers.AllWorkflows() {
		if !seen[name] {
			t.Errorf("no recorded history of workflow type %s", name)
		}
	}
}

// encryptOwn encrypts the payloads of a history as a worker with payload encryption
// writes them: all but those of activities and child workflows on other task queues
// (external controllers, users' hook workflows), which hold no key and read and write
// plain payloads.
func encryptOwn(t *testing.T, hist *historypb.History, c codec.Codec) {
	t.Helper()
	own := hist.GetEvents()[0].GetWorkflowExecutionStartedEventAttributes().GetTaskQueue().GetName()
	foreign := map[int64]bool{} // scheduled or initiated event ids
	for _, e := range hist.GetEvents() {
		var of int64
		switch {
		case e.GetActivityTaskScheduledEventAttributes() != nil:
			if e.GetActivityTaskScheduledEventAttributes().GetTaskQueue().GetName() != own {
				foreign[e.GetEventId()] = true
			}
			continue
		case e.GetStartChildWorkflowExecutionInitiatedEventAttributes() != nil:
			if e.GetStartChildWorkflowExecutionInitiatedEventAttributes().GetTaskQueue().GetName() != own {
				foreign[e.GetEventId()] = true
			}
			continue
		case e.GetActivityTaskCompletedEventAttributes() != nil:
			of = e.GetActivityTaskCompletedEventAttributes().GetScheduledEventId()
		case e.GetActivityTaskFailedEventAttributes() != nil:
			of = e.GetActivityTaskFailedEventAttributes().GetScheduledEventId()
		case e.GetChildWorkflowExecutionCompletedEventAttributes() != nil:
			of = e.GetChildWorkflowExecutionCompletedEventAttributes().GetInitiatedEventId()
		case e.GetChildWorkflowExecutionFailedEventAttributes() != nil:
			of = e.GetChildWorkflowExecutionFailedEventAttributes().GetInitiatedEventId()
		}
		if foreign[of] {
			continue
		}
		if err := proxy.VisitPayloads(context.Background(), e, proxy.VisitPayloadsOptions{
			Visitor: func(_ *proxy.VisitPayloadsContext, p []*commonpb.Payload) ([]*commonpb.Payload, error) {
				return c.Encode(p)
			},
		}); err != nil {
			t.Fatal(err)
		}
	}
}

func mustOpen(t *testing.T, path string) io.Reader {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}
