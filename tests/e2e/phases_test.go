package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	temporalclient "go.temporal.io/sdk/client"

	"github.com/temco/temco/internal/core/lifecycle"
)

// phaseNames are the parts of one instantiate, in order, as phases reports them.
var phaseNames = []string{"start", "render and placement", "to apply", "apply", "to end", "to client"}

// phases splits one instantiate, from the request (start) until the client heard of its
// end (returned), by its workflow history: until the workflow started, rendering and
// placement (which run together), until the first cluster (group) activity was scheduled, the cluster activities,
// until the workflow completed, and until the client heard of it. It tells which part
// of temco's time is its own and which is the apply. The clusters must be one batch
// (applied by the operation itself, not by batch child workflows), as in `make bench`.
func phases(tc temporalclient.Client, workflowID string, start, returned time.Time) ([]time.Duration, error) {
	var started, ended time.Time
	scheduled := map[int64]string{} // activity scheduled event id -> type
	first := map[string]time.Time{} // activity type -> first scheduled
	last := map[string]time.Time{}  // activity type -> last completed
	it := tc.GetWorkflowHistory(context.Background(), workflowID, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		e, err := it.Next()
		if err != nil {
			return nil, err
		}
		at := e.GetEventTime().AsTime()
		switch e.GetEventType() {
		case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED:
			started = at
		case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED:
			ended = at
		case enumspb.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
			name := e.GetActivityTaskScheduledEventAttributes().GetActivityType().GetName()
			scheduled[e.GetEventId()] = name
			if _, ok := first[name]; !ok {
				first[name] = at
			}
		case enumspb.EVENT_TYPE_ACTIVITY_TASK_COMPLETED:
			last[scheduled[e.GetActivityTaskCompletedEventAttributes().GetScheduledEventId()]] = at
		}
	}
	prepared := last[lifecycle.RenderApps.Name()]
	if p := last[lifecycle.PlaceApps.Name()]; p.After(prepared) || p.IsZero() {
		prepared = p
	}
	apply := lifecycle.ApplyGroup.Name() // or, with groups off, one per cluster
	if first[apply].IsZero() {
		apply = lifecycle.ApplyCluster.Name()
	}
	points := []time.Time{start, started, prepared, first[apply], last[apply], ended, returned}
	out := make([]time.Duration, len(phaseNames))
	for i := range out {
		if points[i].IsZero() || points[i+1].IsZero() {
			return nil, fmt.Errorf("workflow %s: no %s in its history", workflowID, phaseNames[i])
		}
		out[i] = points[i+1].Sub(points[i])
	}
	return out, nil
}

// phaseMedians formats the median of each phase over runs.
func phaseMedians(runs [][]time.Duration) string {
	var b strings.Builder
	for i, name := range phaseNames {
		var ds []time.Duration
		for _, r := range runs {
			ds = append(ds, r[i])
		}
		slices.Sort(ds)
		fmt.Fprintf(&b, "%s %d ms; ", name, ds[len(ds)/2].Milliseconds())
	}
	return strings.TrimSuffix(b.String(), "; ")
}
