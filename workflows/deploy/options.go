// Package deploy holds the operation workflows of a DIG: Instantiate and Terminate, and
// the batch workflows they fan out to. Its batch engine (operation.go) runs a kind of
// batch a BatchKind describes: the operations' kinds are its own, and a workflow of
// another package with batches of its own declares its kind and runs it with RunBatch
// and FanOut. Workflow code here is deterministic: all I/O is in activities, named by
// lifecycle's constants, and manifests never travel through history.
package deploy

import (
	"time"

	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/temco/temco/internal/core/lifecycle"
	"github.com/temco/temco/internal/core/rollout"
)

// BatchWindow is how many batch child workflows run at once: with ClustersPerBatch
// clusters each, at most a few hundred cluster activities are in flight per operation.
const BatchWindow = 4

// inlineBatches is how many batches a workflow runs itself rather than as child
// workflows: a child costs Temporal an execution of its own, its start and its end, and
// two of its tasks more than the activity it runs. Up to 8 batches (2,000 clusters by
// default) add a few events each to the workflow's history; more go to children, which
// keep each history bounded however large the fleet.
const inlineBatches = 8

// GroupSize is how many clusters of a batch one group activity works on (runBatch); 1 or
// less: one activity per cluster. The worker sets it at start (--apply-group); a run
// records the value it used, so changing it never disturbs a replay.
var GroupSize = DefaultGroupSize

// DefaultGroupSize is a default batch (placement.DefaultClustersPerBatch): one group
// activity per batch.
const DefaultGroupSize = 250

// groupSize is GroupSize as this run recorded it.
func groupSize(ctx workflow.Context) int {
	var n int
	_ = workflow.SideEffect(ctx, func(workflow.Context) any { return GroupSize }).Get(&n)
	return n
}

// grouped is a kind's activity options for its group activity. A group heartbeats every
// few seconds whatever its clusters do, so a worker that died with it is noticed within
// groupHeartbeat, whatever the kind's options say: a group holds up to 250 clusters, and
// their retry waits for it. It may wait for the worker's cluster slots
// (activities/cluster/group.go) besides its slowest cluster's time, so it gets groupTime
// times the kind's time to end, 10 minutes at least. A cluster that stalls leaves the
// group on its own after a minute.
func grouped(ctx workflow.Context) workflow.Context {
	o := workflow.GetActivityOptions(ctx)
	o.HeartbeatTimeout = groupHeartbeat
	o.StartToCloseTimeout = max(groupTime*o.StartToCloseTimeout, 10*time.Minute)
	return workflow.WithActivityOptions(ctx, o)
}

// groupHeartbeat is a group's HeartbeatTimeout: the group records one every 3 s while its
// clusters work and every 8 s while they all wait for the worker's cluster slots
// (activities/cluster/group.go), and the worker gives the call 3 s at most
// (workers.Options), leaving 4 s to spare. A worker that dies holds its groups' clusters
// that long: waiting groups' heartbeats every 3 s against a 5 s timeout were most of what
// Temporal was asked by many operations at once (BENCHMARKS.md).
const groupHeartbeat = 15 * time.Second

// groupTime multiplies a kind's StartToCloseTimeout for its group activity.
const groupTime = 5

// continuing is activity options for a cluster that left its group after attempts: a
// limit on attempts counts the group's too (one at least remains).
func continuing(ctx workflow.Context, attempts int32) workflow.Context {
	o := workflow.GetActivityOptions(ctx)
	if o.RetryPolicy == nil || o.RetryPolicy.MaximumAttempts == 0 {
		return ctx
	}
	p := *o.RetryPolicy
	p.MaximumAttempts = max(1, p.MaximumAttempts-attempts)
	o.RetryPolicy = &p
	return workflow.WithActivityOptions(ctx, o)
}

// retryForever retries transient failures with capped exponential backoff until they
// succeed, the operation is stopped or it is cancelled; InvalidInput fails at once.
var retryForever = &temporal.RetryPolicy{
	InitialInterval:        lifecycle.RetryInitialInterval,
	BackoffCoefficient:     lifecycle.RetryBackoff,
	MaximumInterval:        lifecycle.RetryMaximumInterval,
	NonRetryableErrorTypes: []string{lifecycle.ErrInvalidInput, lifecycle.ErrInvalidState},
}

// bookkeeping is for short store-only activities.
func bookkeeping(ctx workflow.Context) workflow.Context {
	return workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: time.Minute, RetryPolicy: retryForever,
	})
}

// recording is bookkeeping run as a local activity: an operation's last store write takes
// milliseconds, and running it in the workflow task spares a round trip through the
// server (≈ 50 ms of a small instantiate on the dev machine).
func recording(ctx workflow.Context) workflow.Context {
	return workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{
		StartToCloseTimeout: time.Minute, RetryPolicy: retryForever,
	})
}

// batchRead bounds an activity that reads or counts one batch's documents (milliseconds).
// Its StartToCloseTimeout is what a worker that dies while running it costs the batch
// (15 s: counting 50 clusters takes seconds only on a store overloaded at 10,000):
// such activities do not heartbeat, so a minute here was a minute of every restart.
const batchRead = 15 * time.Second

// listing is for looking up a batch's clusters.
func listing(ctx workflow.Context) workflow.Context {
	return workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: batchRead, RetryPolicy: retryForever,
	})
}

// counting is for storing a batch's status counts: a convenience, not worth waiting for.
func counting(ctx workflow.Context) workflow.Context {
	return workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: batchRead, RetryPolicy: &temporal.RetryPolicy{MaximumAttempts: 3},
	})
}

// preparing is for rendering, placement and controllers.
func preparing(ctx workflow.Context) workflow.Context {
	return workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: 10 * time.Minute, HeartbeatTimeout: preparingHeartbeat, RetryPolicy: retryForever,
	})
}

// preparingHeartbeat: the worker heartbeats for the preparing activities (workers'
// keepAlive), so one on a worker that dies is retried within 30 s, not 10 minutes.
const preparingHeartbeat = 30 * time.Second

// controlling is for controller activities: built-in and external ones heartbeat while
// they run, so a controller worker that dies is retried within a minute, not after the
// ten-minute limit; with no worker on its queue the activity waits, visible as pending.
// The activity id names the controller (lifecycle.ControllerOfActivity reads it), for
// the status and the Temporal UI. External controllers run on their own task queue, and
// their input (names and ids, no secret) is sent unencrypted: they hold no key of temco's
// payload codec.
func controlling(ctx workflow.Context, c lifecycle.Controller, id string) workflow.Context {
	if c.TaskQueue != "" {
		ctx = workflow.WithDataConverter(ctx, converter.GetDefaultDataConverter())
	}
	return workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		ActivityID: id, TaskQueue: c.TaskQueue,
		StartToCloseTimeout: 10 * time.Minute, HeartbeatTimeout: 30 * time.Second, RetryPolicy: retryForever,
	})
}

// observing bounds a controller's finished hook: it does not change the operation's
// outcome, so a controller that is down must not hold the operation for long.
func observing(ctx workflow.Context) workflow.Context {
	opts := workflow.GetActivityOptions(ctx)
	opts.ScheduleToCloseTimeout = 5 * time.Minute
	return workflow.WithActivityOptions(ctx, opts)
}

// onCluster is for the per-cluster activities. Once they have run a few seconds they
// heartbeat after every object, so a worker that dies is noticed within the heartbeat
// timeout and the cluster is retried elsewhere; waits for dependencies keep heartbeating. A cancelled operation waits for
// its running cluster activities to stop: a terminate must not start deleting while an
// apply is still writing to the same cluster.
func onCluster(ctx workflow.Context) workflow.Context {
	return workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: time.Hour, HeartbeatTimeout: 10 * time.Second, RetryPolicy: retryForever,
		WaitForCancellation: true,
	})
}

// awaiting is for AwaitAgent: nothing runs while it waits (the api completes it with the
// agent's report), so it has no heartbeat and a stop or cancel need not wait for it. An
// attempt ends after the offline policy's After: the next one looks at when the agent
// last called (offline: the policy applies), stores its token again, and ends at once if
// the report came meanwhile.
func awaiting(ctx workflow.Context, off rollout.Offline) workflow.Context {
	return workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: max(time.Duration(off.After), rollout.MinOfflineAfter), RetryPolicy: retryForever,
	})
}

// reading is for status reads: an unreachable cluster is reported, not waited for.
func reading(ctx workflow.Context) workflow.Context {
	return workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: 2 * time.Minute, RetryPolicy: &temporal.RetryPolicy{MaximumAttempts: 3},
	})
}
