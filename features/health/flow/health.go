// Package flow holds health's ClusterHealth workflow: round after round, every registered
// cluster's API server probed, a page of clusters per activity (work), so
// that the fleet home and the cluster view say which clusters temco can reach. One runs
// per temco (ClusterHealthID); it continues as new now and then.
package flow

import (
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/temco/temco/internal/core/lifecycle"
)

// roundsPerRun bounds one run's history: the workflow continues as new after them.
const roundsPerRun = 50

// Defaults of HealthInput.
const (
	DefaultInterval = time.Minute
	// DefaultPageSize: FerretDB reads a page's documents by scanning, so fewer, larger
	// pages cost less: a steady round of 10,000 clusters took 68 s with pages of 500 and
	// 34 s with pages of 2,000 (BENCHMARKS.md). Even all unreachable, a page ends within
	// its StartToCloseTimeout (2,000 / 32 at once × 5 s = 5 minutes).
	DefaultPageSize = 2000
)

// ClusterHealth probes every cluster each in.Interval (a round that takes longer is
// followed by the next at once); SignalWake starts the next round now, with the pace it
// carries (a HealthInput: the api's, as it starts), SignalStop ends the
// workflow. A page that fails ends its round, logged; the next round starts over.
func ClusterHealth(ctx workflow.Context, in HealthInput) error {
	interval := in.Interval
	if interval <= 0 {
		interval = DefaultInterval
	}
	size := in.PageSize
	if size <= 0 {
		size = DefaultPageSize
	}
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: 10 * time.Minute, HeartbeatTimeout: time.Minute,
		RetryPolicy: &temporal.RetryPolicy{MaximumAttempts: 3},
	})
	wake := workflow.GetSignalChannel(ctx, lifecycle.SignalWake)
	stop := workflow.GetSignalChannel(ctx, lifecycle.SignalStop)
	for range roundsPerRun {
		started := workflow.Now(ctx)
		round(ctx, size, started)
		stopped := false
		tctx, cancel := workflow.WithCancel(ctx)
		sel := workflow.NewSelector(ctx)
		sel.AddFuture(workflow.NewTimer(tctx, max(interval-workflow.Now(ctx).Sub(started), time.Second)), func(workflow.Future) {})
		sel.AddReceive(wake, func(c workflow.ReceiveChannel, _ bool) {
			var next HealthInput // the api's pace, sent as it starts
			c.Receive(ctx, &next)
			if next.Interval > 0 {
				in.Interval, interval = next.Interval, next.Interval
			}
			if next.PageSize > 0 {
				in.PageSize, size = next.PageSize, next.PageSize
			}
		})
		sel.AddReceive(stop, func(c workflow.ReceiveChannel, _ bool) { c.Receive(ctx, nil); stopped = true })
		sel.Select(ctx)
		for sel.HasPending() { // wakes that came meanwhile: one round answers them all
			sel.Select(ctx)
		}
		cancel()
		if stopped {
			return nil
		}
	}
	return workflow.NewContinueAsNewError(ctx, ClusterHealth, in)
}

// round probes every page of clusters in turn and records the round once all were.
func round(ctx workflow.Context, size int, started time.Time) {
	log := workflow.GetLogger(ctx)
	states := map[string]int{}
	for after := ""; ; {
		var page ProbedPage
		if err := ProbeClusters.Execute(ctx, ProbePage{After: after, Limit: size}).Get(ctx, &page); err != nil {
			log.Warn("cluster probes failed; the round ends here", "after", after, "error", lifecycle.ErrorMessage(err))
			return
		}
		if page.Last == "" {
			break
		}
		for s, n := range page.States {
			states[s] += n
		}
		after = page.Last
	}
	if err := RecordProbeRound.Execute(ctx, started).Get(ctx, nil); err != nil {
		log.Warn("record the round of probes", "error", lifecycle.ErrorMessage(err))
		return
	}
	log.Info("clusters probed", "states", states)
}
