// Activities, whose methods are the cluster activities, and the observation of each attempt.

package cluster

import (
	"context"
	"errors"
	"sync"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	"golang.org/x/sync/singleflight"

	"github.com/temco/temco/internal/adapters/metrics"
	"github.com/temco/temco/internal/core/appctx"
	"github.com/temco/temco/internal/core/lifecycle"
)

// Activities apply, delete and read objects on clusters.
type Activities struct {
	Clients  *Clients
	Contexts *appctx.Store
	Metrics  *metrics.Clusters // nil: not recorded
	// Report tells the workflow that scheduled an activity that its cluster is being
	// retried (nil: nobody is told). See workflows/deploy/retrying.go.
	Report func(ctx context.Context, workflowID, runID string, r lifecycle.ClusterRetry) error

	cacheMu sync.Mutex
	cache   []*contextCacheEntry // recent contexts, whose apps and placement are fixed once prepared
	loading singleflight.Group   // a context's first activities (hundreds at once) share one load
}

// observe records one attempt of a cluster activity; a failure Temporal will retry
// (anything but a non-retryable application error) counts as a retry, and is reported
// to the workflow on attempts 1, 2, 4, 8... (a cluster down for a day costs a dozen),
// counted as attemptOf does: a cluster leaving a group is reported on the group's.
func (a *Activities) observe(ctx context.Context, in lifecycle.ClusterInput, op string, start time.Time, err *error) {
	var appErr *temporal.ApplicationError
	retry := *err != nil && ctx.Err() == nil && !(errors.As(*err, &appErr) && appErr.NonRetryable())
	a.Metrics.Observe(in.Cluster, op, *err, retry, time.Since(start))
	attempt, _ := attemptOf(ctx, in)
	if n := attempt.Number; retry && a.Report != nil && n&(n-1) == 0 {
		info := activity.GetInfo(ctx)
		r := lifecycle.ClusterRetry{Cluster: in.Cluster, Attempt: n, Error: (*err).Error()}
		if rerr := a.Report(ctx, info.WorkflowExecution.ID, info.WorkflowExecution.RunID, r); rerr != nil {
			activity.GetLogger(ctx).Warn("report a retrying cluster", "cluster", in.Cluster, "error", rerr)
		}
	}
}
