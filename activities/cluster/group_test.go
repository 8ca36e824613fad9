package cluster

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/testsuite"

	"github.com/temco/temco/internal/core/lifecycle"
)

// runGroup runs RunGroup in a test activity environment, an earlier attempt having
// finished done, and returns its result and the clusters each was called on.
func runGroup(t *testing.T, clusters []string, done []lifecycle.GroupDone,
	each func(context.Context, lifecycle.ClusterInput) (lifecycle.ClusterResult, error)) (lifecycle.GroupResult, []string, error) {
	t.Helper()
	var s testsuite.WorkflowTestSuite
	env := s.NewTestActivityEnvironment()
	if done != nil {
		env.SetHeartbeatDetails(done)
	}
	var mu sync.Mutex
	var called []string
	env.RegisterActivityWithOptions(func(ctx context.Context, in lifecycle.GroupInput) (lifecycle.GroupResult, error) {
		return RunGroup(ctx, in, func(ctx context.Context, in lifecycle.ClusterInput) (lifecycle.ClusterResult, error) {
			mu.Lock()
			called = append(called, in.Cluster)
			mu.Unlock()
			return each(ctx, in)
		})
	}, activityOptions("Group"))
	v, err := env.ExecuteActivity("Group", lifecycle.GroupInput{ClusterInput: lifecycle.ClusterInput{ContextID: "42"}, Clusters: clusters})
	var out lifecycle.GroupResult
	if err == nil {
		err = v.Get(&out)
	}
	slices.Sort(called)
	return out, called, err
}

// A retried group redoes only the clusters its earlier attempts did not finish; a cluster
// that fails leaves the group with its error, and the others are done.
func TestAGroupRedoesOnlyUnfinishedClustersAndAFailedOneLeaves(t *testing.T) {
	earlier := []lifecycle.GroupDone{{Cluster: "p+c1", Result: lifecycle.ClusterResult{Done: 7}}}
	out, called, err := runGroup(t, []string{"p+c1", "p+c2", "p+c3"}, earlier,
		func(ctx context.Context, in lifecycle.ClusterInput) (lifecycle.ClusterResult, error) {
			w, _ := attemptOf(ctx, in)
			if w.Activity != out0(ctx).Activity || w.Number != out0(ctx).Attempts {
				return lifecycle.ClusterResult{}, errors.New("a cluster in a group saves as another writer")
			}
			if in.Cluster == "p+c3" {
				return lifecycle.ClusterResult{}, errors.New("dial tcp: connection refused")
			}
			return lifecycle.ClusterResult{Done: 2}, nil
		})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(called, []string{"p+c2", "p+c3"}) {
		t.Errorf("worked on %v, want only the unfinished p+c2 and p+c3", called)
	}
	if len(out.Done) != 2 || out.Done[0] != earlier[0] || out.Done[1].Cluster != "p+c2" || out.Done[1].Result.Done != 2 {
		t.Errorf("done %+v", out.Done)
	}
	if len(out.Left) != 1 || out.Left[0].Cluster != "p+c3" || !strings.Contains(out.Left[0].Error, "connection refused") {
		t.Errorf("left %+v", out.Left)
	}
	if out.Prior.Activity == "" || out.Prior.Attempts != 1 {
		t.Errorf("prior %+v: a left cluster's activity must continue this attempt", out.Prior)
	}
}

// out0 is the group attempt a member's context carries.
func out0(ctx context.Context) lifecycle.Prior { return ctx.Value(memberKey{}).(member).prior }

// A cluster that makes no progress in a group is cancelled and leaves it, saying why;
// one that heartbeats as it goes stays.
func TestAStalledClusterLeavesItsGroup(t *testing.T) {
	defer func(d time.Duration) { groupStall = d }(groupStall)
	groupStall = 300 * time.Millisecond
	out, _, err := runGroup(t, []string{"p+slow", "p+stuck"}, nil,
		func(ctx context.Context, in lifecycle.ClusterInput) (lifecycle.ClusterResult, error) {
			if in.Cluster == "p+stuck" {
				<-ctx.Done()
				return lifecycle.ClusterResult{}, ctx.Err()
			}
			for deadline := time.Now().Add(4 * time.Second); time.Now().Before(deadline); {
				beat(ctx)
				select {
				case <-ctx.Done():
					return lifecycle.ClusterResult{}, ctx.Err()
				case <-time.After(50 * time.Millisecond):
				}
			}
			return lifecycle.ClusterResult{Done: 1}, nil
		})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Done) != 1 || out.Done[0].Cluster != "p+slow" {
		t.Errorf("done %+v, want the cluster that made progress", out.Done)
	}
	if len(out.Left) != 1 || out.Left[0].Cluster != "p+stuck" || !strings.Contains(out.Left[0].Error, "no progress") {
		t.Errorf("left %+v, want the stuck cluster, saying why", out.Left)
	}
}

// A cluster that left its group saves its statuses as the group did, its attempts counted
// on from the group's, so a later save of the group's attempt is refused.
func TestALeftClusterContinuesTheGroupsAttempts(t *testing.T) {
	var s testsuite.WorkflowTestSuite
	env := s.NewTestActivityEnvironment()
	prior := lifecycle.Prior{Activity: "run/7", Attempts: 2, Scheduled: time.Unix(1e9, 0)}
	env.RegisterActivityWithOptions(func(ctx context.Context, in lifecycle.ClusterInput) (string, error) {
		w, scheduled := attemptOf(ctx, in)
		if !scheduled.Equal(prior.Scheduled) {
			return "", errors.New("patience does not run from the group's first schedule")
		}
		return w.Activity + " " + string(rune('0'+w.Number)), nil
	}, activityOptions("One"))
	v, err := env.ExecuteActivity("One", lifecycle.ClusterInput{ContextID: "42", Cluster: "p+c1", After: &prior})
	if err != nil {
		t.Fatal(err)
	}
	var got string
	if err := v.Get(&got); err != nil || got != "run/7 3" {
		t.Errorf("writer %q (%v), want run/7 3", got, err)
	}
}

func activityOptions(name string) activity.RegisterOptions {
	return activity.RegisterOptions{Name: name}
}

// A group heartbeats at its working pace while a cluster runs, and rarely while all its
// clusters wait for slots: each heartbeat is a write in Temporal, and its answer is how a
// stop reaches the group.
func TestAGroupHeartbeatsRarelyWhileItsClustersWait(t *testing.T) {
	defer func(b, idle time.Duration) { groupBeat, groupIdleBeat = b, idle }(groupBeat, groupIdleBeat)
	groupBeat, groupIdleBeat = 10*time.Millisecond, time.Hour
	count := func(running *sync.Map) int64 {
		var n atomic.Int64
		stop := beatAndWatch(func() { n.Add(1) }, running)
		time.Sleep(300 * time.Millisecond) // the window counted, not a wait for a state
		stop()
		return n.Load()
	}
	if n := count(&sync.Map{}); n != 0 {
		t.Errorf("%d heartbeats in 300 ms with every cluster waiting, want none before the idle beat", n)
	}
	busy := &sync.Map{}
	w := &stallWatch{last: new(atomic.Int64), cancel: func(error) {}}
	w.last.Store(time.Now().Add(time.Hour).UnixNano()) // never stalled
	busy.Store("p+c1", w)
	if n := count(busy); n < 5 {
		t.Errorf("%d heartbeats in 300 ms with a cluster working every 10 ms, want many", n)
	}
}

// listedBatch is a batch of clusters for GroupOf, counted when asked.
type listedBatch struct {
	clusters []string
	counted  atomic.Int32
}

func (b *listedBatch) StartBatch(context.Context, string, int) ([]string, error) {
	return b.clusters, nil
}
func (b *listedBatch) CountBatch(context.Context, string, int) error {
	b.counted.Add(1)
	return nil
}

// A group that lists its batch works on it when it fits and counts it when it finished
// every cluster itself; a cluster left to its own activity or to its agent leaves the
// count to the batch workflow; a batch larger than the group is handed back unworked.
func TestAGroupListingItsBatchCountsItOnlyWhenItFinishedEveryCluster(t *testing.T) {
	agent := &lifecycle.AgentWait{}
	for _, tc := range []struct {
		name    string
		size    int
		result  map[string]lifecycle.ClusterResult // by cluster (absent: Done 1)
		fail    string
		counted bool
		handed  int
	}{
		{name: "all done", size: 3, counted: true},
		{name: "one left", size: 3, fail: "p+c2"},
		{name: "one awaits its agent", size: 3, result: map[string]lifecycle.ClusterResult{"p+c1": {Awaiting: agent}}},
		{name: "too many", size: 2, handed: 3},
	} {
		b := &listedBatch{clusters: []string{"p+c1", "p+c2", "p+c3"}}
		var worked atomic.Int32
		var s testsuite.WorkflowTestSuite
		env := s.NewTestActivityEnvironment()
		env.RegisterActivityWithOptions(func(ctx context.Context, in lifecycle.GroupInput) (lifecycle.GroupResult, error) {
			return GroupOf(ctx, in, b, func(_ context.Context, in lifecycle.ClusterInput) (lifecycle.ClusterResult, error) {
				worked.Add(1)
				if in.Cluster == tc.fail {
					return lifecycle.ClusterResult{}, errors.New("dial tcp: connection refused")
				}
				if r, ok := tc.result[in.Cluster]; ok {
					return r, nil
				}
				return lifecycle.ClusterResult{Done: 1}, nil
			})
		}, activityOptions("Group"))
		v, err := env.ExecuteActivity("Group", lifecycle.GroupInput{ClusterInput: lifecycle.ClusterInput{ContextID: "42"},
			Batch: &lifecycle.GroupBatch{Index: 0, Size: tc.size, Count: true}})
		var out lifecycle.GroupResult
		if err == nil {
			err = v.Get(&out)
		}
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		wantWorked := int32(3)
		if tc.handed > 0 {
			wantWorked = 0
		}
		if out.Listed != 3 || len(out.Handed) != tc.handed || worked.Load() != wantWorked ||
			out.Counted != tc.counted || (b.counted.Load() == 1) != tc.counted {
			t.Errorf("%s: result %+v, worked on %d, counted %d times", tc.name, out, worked.Load(), b.counted.Load())
		}
	}
}
