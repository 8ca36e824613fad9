package metrics

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/temco/temco/internal/core/lifecycle"
)

// temco's own workflow metrics keep their names and get buckets for operations of
// minutes; the SDK's others keep the default buckets.
func TestWorkflowMetricsAreExportedUnderTheirNames(t *testing.T) {
	reg := prometheus.NewRegistry()
	h := Temporal(reg).WithTags(map[string]string{"workflow_type": "Instantiate"}).
		WithTags(map[string]string{"kind": "dig", "operation": "instantiate", "outcome": "succeeded"})
	h.Counter(lifecycle.MetricOperations).Inc(1)
	h.Timer(lifecycle.MetricOperationDuration).Record(90 * time.Second)
	h.Timer("temporal_workflow_task_execution_latency").Record(time.Millisecond)
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	if len(families) != 3 {
		t.Fatalf("%d families exported, want 3: %v", len(families), families)
	}
	for _, f := range families {
		h := f.GetMetric()[0].GetHistogram()
		switch f.GetName() {
		case lifecycle.MetricOperations:
			var labels []string
			for _, l := range f.GetMetric()[0].GetLabel() {
				labels = append(labels, l.GetName()+"="+l.GetValue())
			}
			if got := strings.Join(labels, ","); got != "kind=dig,operation=instantiate,outcome=succeeded,workflow_type=Instantiate" ||
				f.GetMetric()[0].GetCounter().GetValue() != 1 {
				t.Errorf("%s: %s %v", f.GetName(), got, f.GetMetric()[0].GetCounter().GetValue())
			}
		case lifecycle.MetricOperationDuration:
			if b := h.GetBucket(); b[len(b)-1].GetUpperBound() < 3600 || h.GetSampleSum() != 90 {
				t.Errorf("%s: buckets up to %v, sum %v", f.GetName(), b[len(b)-1].GetUpperBound(), h.GetSampleSum())
			}
		case "temporal_workflow_task_execution_latency":
			if b := h.GetBucket(); b[len(b)-1].GetUpperBound() != 10 {
				t.Errorf("%s: buckets up to %v, want the default", f.GetName(), b[len(b)-1].GetUpperBound())
			}
		}
	}
}
