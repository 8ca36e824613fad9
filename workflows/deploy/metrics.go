package deploy

import (
	"go.temporal.io/sdk/workflow"

	"github.com/temco/temco/internal/core/lifecycle"
)

// recordEnded counts an ended operation and times it from its workflow's start. The SDK's
// handler drops metrics during a replay and records no command, so this neither counts a
// replayed operation again nor changes what committed histories replay (tests/replay).
func recordEnded(ctx workflow.Context, target lifecycle.Target, op, outcome string) {
	m := workflow.GetMetricsHandler(ctx).WithTags(map[string]string{"kind": target.Kind().Name, "operation": op, "outcome": outcome})
	m.Counter(lifecycle.MetricOperations).Inc(1)
	m.Timer(lifecycle.MetricOperationDuration).Record(workflow.Now(ctx).Sub(workflow.GetInfo(ctx).WorkflowStartTime))
}
