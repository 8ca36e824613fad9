package api

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/temco/temco/internal/adapters/metrics"
)

// /metrics counts the fleet as its home does: DIGs by state, the running operation, the
// rollout waiting for an approval, placements by state, and the workers Temporal sees;
// reasons and states with none are exported at 0, so that an alert has a series.
func TestMetricsCountTheFleet(t *testing.T) {
	ops := &fleetOps{}
	c := newClient(t, func(s *Server) {
		ops.contexts, s.Ops, s.Registry = s.Contexts, ops, metrics.NewRegistry()
		s.Pollers = func(context.Context) (map[string]int, error) {
			return map[string]int{"workflow": 2, "activity": 2}, nil
		}
	})
	fleetOf(t, c, ops)
	rec := httptest.NewRecorder()
	c.h.ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	got := rec.Body.String()
	for _, want := range []string{
		`temco_digs{state="Instantiated"} 2`, `temco_digs{state="Created"} 1`, `temco_digs{state="Terminated"} 0`,
		"temco_operations_running 1",
		`temco_rollouts_waiting{reason="approval"} 1`, `temco_rollouts_waiting{reason="paused"} 0`,
		`temco_placements{state="Applied"} 1`, `temco_placements{state="Retrying"} 1`, `temco_placements{state="Failed"} 0`,
		`temco_clusters{state="Unreachable"} 0`, "temco_digs_drifted 0", "temco_drifted_objects 0",
		`temco_task_queue_pollers{type="activity"} 2`,
	} {
		if !strings.Contains(got, want+"\n") {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	if t.Failed() {
		t.Logf("/metrics:\n%s", got)
	}
}
