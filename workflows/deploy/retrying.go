package deploy

import (
	"maps"
	"slices"

	"go.temporal.io/sdk/workflow"

	"github.com/temco/temco/internal/core/lifecycle"
)

// Clusters Temporal keeps retrying are reported by their activities (a signal to the
// workflow that scheduled them, on attempts 1, 2, 4, 8...), so that the progress query
// can list them with their last error. A batch child passes the reports on to the
// operation's workflow, and says so when such a cluster is done.

// onRetryReports runs report for every retry report the workflow receives.
func onRetryReports(ctx workflow.Context, report func(workflow.Context, lifecycle.ClusterRetry)) {
	ch := workflow.GetSignalChannel(ctx, lifecycle.SignalClusterRetrying)
	workflow.Go(ctx, func(ctx workflow.Context) {
		for {
			var r lifecycle.ClusterRetry
			if !ch.Receive(ctx, &r) {
				return
			}
			report(ctx, r)
		}
	})
}

// retryList tracks reported clusters until they are done; Attempt 0 means done.
type retryList map[string]lifecycle.ClusterRetry

func (l retryList) note(r lifecycle.ClusterRetry) {
	if r.Attempt == 0 {
		delete(l, r.Cluster)
		return
	}
	l[r.Cluster] = r
}

func (l retryList) sorted() []lifecycle.ClusterRetry {
	out := make([]lifecycle.ClusterRetry, 0, len(l))
	for _, k := range slices.Sorted(maps.Keys(l)) {
		out = append(out, l[k])
	}
	return out
}

// forwarder passes a batch child's reports on to the operation's workflow.
type forwarder struct {
	parent   workflow.Execution
	reported map[string]bool
}

func (f *forwarder) report(ctx workflow.Context, r lifecycle.ClusterRetry) {
	f.reported[r.Cluster] = r.Attempt != 0
	workflow.SignalExternalWorkflow(ctx, f.parent.ID, f.parent.RunID, lifecycle.SignalClusterRetrying, r)
}

// settled tells the parent that a cluster it heard about is done.
func (f *forwarder) settled(ctx workflow.Context, cluster string) {
	if f.reported[cluster] {
		f.report(ctx, lifecycle.ClusterRetry{Cluster: cluster})
	}
}
