// Groups: one activity works on the clusters of a batch together, as each cluster's own
// activity would, so that Temporal persists one schedule, start and completion per group
// instead of per cluster. A cluster that fails leaves the group and goes on as its own
// retrying activity, which continues the group's attempt numbers and status writer.

package cluster

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"go.temporal.io/sdk/activity"
	"golang.org/x/sync/errgroup"
	"golang.org/x/sync/semaphore"

	"github.com/temco/temco/internal/core/appctx"
	"github.com/temco/temco/internal/core/lifecycle"
	"github.com/temco/temco/internal/core/store"
)

// groupBeat is how often a group heartbeats while some of its clusters work, carrying the
// clusters it has finished (a retried attempt skips them); the worker sends one every 3 s
// at most. A heartbeat's answer is how Temporal tells an activity it was cancelled, and a
// stopped operation waits for its groups to hear it (WaitForCancellation).
var groupBeat = 2 * time.Second // tests shorten it

// groupIdleBeat is how often a group heartbeats while all its clusters left wait for the
// worker's cluster slots: each heartbeat is a write of the activity's state in Temporal,
// and with 100 rollouts at once up to 400 groups are in flight, nearly all waiting; at 3 s
// their heartbeats were 63 % of the requests temco sent Temporal (BENCHMARKS.md). The
// group's HeartbeatTimeout (workflows/deploy, 15 s) leaves 7 s for one to arrive.
var groupIdleBeat = 8 * time.Second // tests shorten it

// groupStall is how long a cluster in a group may go without progress (its heartbeats)
// before it is cancelled and leaves the group: on its own, its activity's HeartbeatTimeout
// would have caught it; the group's heartbeats say only that the worker lives.
var groupStall = time.Minute // tests shorten it

// groupCount bounds a group's count of its batch: below its HeartbeatTimeout (15 s,
// workflows/deploy), as CountBatch's own timeout was.
const groupCount = 10 * time.Second

// errStalled is why a stalled cluster left its group.
var errStalled = fmt.Errorf("no progress for %s: left its group to be retried on its own", groupStall)

// clusterSlots bounds the clusters a worker works on at once across its groups: a group
// takes one Temporal activity slot for up to 250 clusters, so the worker's slots no longer
// bound them. 400, as many as the worker's activity slots (workers.Options) allowed
// clusters at once before groups.
var clusterSlots = semaphore.NewWeighted(400)

// member marks the context of a cluster worked on in a group: its attempt is the group's,
// and its heartbeats record when it last made progress.
type member struct {
	prior lifecycle.Prior
	last  *atomic.Int64 // unix nanoseconds of its last heartbeat
}

type memberKey struct{}

// attemptOf returns the attempt a cluster's work counts as, the writer of its statuses
// and when its first attempt was scheduled: the group's when in one, a left cluster's
// activity's counted on from the group's (in.After), else its own activity's.
func attemptOf(ctx context.Context, in lifecycle.ClusterInput) (appctx.Attempt, time.Time) {
	if m, ok := ctx.Value(memberKey{}).(member); ok {
		return appctx.Attempt{Activity: m.prior.Activity, Number: m.prior.Attempts}, m.prior.Scheduled
	}
	info := activity.GetInfo(ctx)
	if p := in.After; p != nil {
		return appctx.Attempt{Activity: p.Activity, Number: p.Attempts + info.Attempt}, p.Scheduled
	}
	return appctx.Attempt{Activity: appctx.ActivityName(info.WorkflowExecution.RunID, info.ActivityID), Number: info.Attempt}, info.ScheduledTime
}

// beat heartbeats a cluster's own activity; in a group it does nothing, the group
// heartbeats for all (its details are the clusters it finished).
func beat(ctx context.Context, details ...any) {
	if m, ok := ctx.Value(memberKey{}).(member); ok {
		m.last.Store(time.Now().UnixNano())
		return
	}
	activity.RecordHeartbeat(ctx, details...)
}

// RunGroup runs each, a cluster activity's body, on every cluster of a group at once. A
// retried attempt skips the clusters an earlier one finished (its heartbeat details). A
// cluster whose work fails, or stalls for groupStall, leaves the group (Left); the group
// fails only when cancelled.
func RunGroup(ctx context.Context, in lifecycle.GroupInput,
	each func(context.Context, lifecycle.ClusterInput) (lifecycle.ClusterResult, error)) (lifecycle.GroupResult, error) {
	// Its clusters ask the store as the group starts, however long each waits for a slot:
	// one read of their group, their batch's layout and their registrations' epochs serves
	// them all (store.Flights), as one read per cluster at that moment would.
	ctx = withSiblings(store.AsOf(ctx, time.Now()), in.Clusters)
	info := activity.GetInfo(ctx)
	out := lifecycle.GroupResult{Prior: lifecycle.Prior{Activity: appctx.ActivityName(info.WorkflowExecution.RunID, info.ActivityID),
		Attempts: info.Attempt, Scheduled: info.ScheduledTime}}
	if activity.HasHeartbeatDetails(ctx) {
		_ = activity.GetHeartbeatDetails(ctx, &out.Done) // unreadable: everything is redone
	}
	finished := slices.Clone(out.Done)
	var mu sync.Mutex // guards out
	report := func() {
		mu.Lock()
		defer mu.Unlock()
		activity.RecordHeartbeat(ctx, out.Done)
	}
	var running sync.Map // cluster -> *stallWatch
	defer beatAndWatch(report, &running)()

	var g errgroup.Group
	for _, c := range in.Clusters {
		if slices.ContainsFunc(finished, func(d lifecycle.GroupDone) bool { return d.Cluster == c }) {
			continue
		}
		g.Go(func() error {
			if err := clusterSlots.Acquire(ctx, 1); err != nil {
				return err // cancelled while waiting for a slot
			}
			defer clusterSlots.Release(1)
			w := &stallWatch{last: new(atomic.Int64)}
			w.last.Store(time.Now().UnixNano())
			mctx, cancel := context.WithCancelCause(context.WithValue(ctx, memberKey{}, member{prior: out.Prior, last: w.last}))
			defer cancel(nil)
			w.cancel = cancel
			running.Store(c, w)
			defer running.Delete(c)
			one := in.ClusterInput
			one.Cluster = c
			r, err := each(mctx, one)
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if cause := context.Cause(mctx); err != nil && cause != nil {
				err = cause
			}
			mu.Lock()
			if err != nil {
				out.Left = append(out.Left, lifecycle.GroupLeft{Cluster: c, Error: err.Error()})
			} else {
				out.Done = append(out.Done, lifecycle.GroupDone{Cluster: c, Result: r})
			}
			mu.Unlock()
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return lifecycle.GroupResult{}, err
	}
	return out, nil
}

// beatAndWatch heartbeats a group (report) every groupBeat while some of its clusters run,
// every groupIdleBeat while none does, and cancels its running clusters that stalled,
// until the function it returns is called.
func beatAndWatch(report func(), running *sync.Map) (stop func()) {
	done, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		t := time.NewTicker(groupBeat)
		defer t.Stop()
		stall, last := groupStall, time.Now()
		for {
			select {
			case <-done:
				return
			case now := <-t.C:
				busy := false
				running.Range(func(_, w any) bool {
					busy = true
					w.(*stallWatch).check(now, stall)
					return true
				})
				if busy || now.Sub(last) >= groupIdleBeat {
					report()
					last = now
				}
			}
		}
	}()
	return func() { close(done); <-stopped }
}

// stallWatch cancels a cluster of a group that has not heartbeaten for groupStall.
type stallWatch struct {
	last   *atomic.Int64
	cancel context.CancelCauseFunc
}

func (w *stallWatch) check(now time.Time, stall time.Duration) {
	if now.Sub(time.Unix(0, w.last.Load())) > stall {
		w.cancel(errStalled)
	}
}

// Batches lists a context's batch as its work starts (dropping its stored counts) and
// stores its counts once its clusters are done: appctx.Store.
type Batches interface {
	StartBatch(ctx context.Context, ctxID string, batch int) ([]string, error)
	CountBatch(ctx context.Context, ctxID string, batch int) error
}

// GroupOf is RunGroup on a group's clusters, or on its batch when it lists the batch
// itself (in.Batch): one activity then does what ListBatch, the group and CountBatch did
// as three, each a schedule, a start, a completion and a workflow task in Temporal.
func GroupOf(ctx context.Context, in lifecycle.GroupInput, batches Batches,
	each func(context.Context, lifecycle.ClusterInput) (lifecycle.ClusterResult, error)) (lifecycle.GroupResult, error) {
	b := in.Batch
	if b == nil {
		return RunGroup(ctx, in, each)
	}
	clusters, err := batches.StartBatch(ctx, cmp.Or(b.ClustersOf, in.ContextID), b.Index)
	if err != nil {
		return lifecycle.GroupResult{}, err
	}
	if len(clusters) > b.Size {
		return lifecycle.GroupResult{Listed: len(clusters), Handed: clusters}, nil
	}
	in.Clusters = clusters
	out, err := RunGroup(ctx, in, each)
	if err != nil {
		return out, err
	}
	out.Listed = len(clusters)
	if b.Count && len(out.Left) == 0 && !slices.ContainsFunc(out.Done, func(d lifecycle.GroupDone) bool { return d.Result.Awaiting != nil }) {
		// A convenience, as CountBatch is: a batch left uncounted is counted live. After
		// a heartbeat, the count has the group's whole HeartbeatTimeout; groupCount is less.
		activity.RecordHeartbeat(ctx, out.Done)
		cctx, cancel := context.WithTimeout(ctx, groupCount)
		out.Counted = batches.CountBatch(cctx, in.ContextID, b.Index) == nil
		cancel()
	}
	return out, nil
}

// ApplyGroup is ApplyCluster on each cluster of a group.
func (a *Activities) ApplyGroup(ctx context.Context, in lifecycle.GroupInput) (lifecycle.GroupResult, error) {
	return GroupOf(ctx, in, a.Contexts, a.ApplyCluster)
}

// DeleteGroup is DeleteCluster on each cluster of a group.
func (a *Activities) DeleteGroup(ctx context.Context, in lifecycle.GroupInput) (lifecycle.GroupResult, error) {
	return GroupOf(ctx, in, a.Contexts, a.DeleteCluster)
}

// PruneGroup is PruneCluster on each cluster of a group.
func (a *Activities) PruneGroup(ctx context.Context, in lifecycle.GroupInput) (lifecycle.GroupResult, error) {
	return GroupOf(ctx, in, a.Contexts, a.PruneCluster)
}

// ReadGroup is ReadCluster on each cluster of a group.
func (a *Activities) ReadGroup(ctx context.Context, in lifecycle.GroupInput) (lifecycle.GroupResult, error) {
	return GroupOf(ctx, in, a.Contexts, a.ReadCluster)
}
