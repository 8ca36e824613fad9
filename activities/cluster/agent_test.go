package cluster

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/testsuite"

	"github.com/temco/temco/internal/core/agent"
	"github.com/temco/temco/internal/core/appctx"
	"github.com/temco/temco/internal/core/lifecycle"
	"github.com/temco/temco/internal/core/rollout"
	"github.com/temco/temco/internal/core/seal"
	"github.com/temco/temco/internal/core/store"
	"github.com/temco/temco/internal/dev/testenv"
)

// agentFixture is a context "c1" placing app a (two ConfigMaps) on agent cluster p+edge,
// published to its agent, and the activities that wait for it.
type agentFixture struct {
	a      *Activities
	agents *agent.Store
	item   string
	gen    int64
}

func newAgentFixture(t *testing.T) *agentFixture {
	t.Helper()
	ctx := context.Background()
	db := testenv.Database(t, ferret, strings.ReplaceAll(strings.ToLower(t.Name()), "/", "_"))
	s, err := appctx.New(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	st, err := store.New(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	keys, err := seal.NewKeyring([]string{"k"}, [][]byte{bytes.Repeat([]byte{1}, 32)})
	if err != nil {
		t.Fatal(err)
	}
	obj := func(name string) appctx.Object {
		return appctx.Object{Ref: appctx.Ref{Version: "v1", Kind: "ConfigMap", Name: name}, Manifest: "{}", Hash: name}
	}
	if err := s.Create(ctx, &appctx.Context{ID: "c1", Instance: "c1", Apps: []string{"a"}}); err != nil {
		t.Fatal(err)
	}
	if err := s.PutApps(ctx, "c1", []*appctx.App{{Name: "a", Objects: []appctx.Object{obj("x"), obj("y")}}}); err != nil {
		t.Fatal(err)
	}
	if err := s.PutPlacement(ctx, "c1", []*appctx.ClusterApp{{App: "a", Cluster: "p+edge", Unlisted: true}}, map[string]int{"p+edge": 0}); err != nil {
		t.Fatal(err)
	}
	f := &agentFixture{a: &Activities{Clients: &Clients{Store: st, Keys: keys}, Contexts: s}, agents: agent.Open(db), item: agent.ItemID("p+edge", "c1")}
	if _, err := f.agents.IssueJoin(ctx, "p+edge", "t0"); err != nil { // the agent's record, where its calls are noted
		t.Fatal(err)
	}
	if f.gen, err = f.agents.Publish(ctx, agent.Item{Cluster: "p+edge", Instance: "c1", Context: "c1"}); err != nil {
		t.Fatal(err)
	}
	return f
}

// await runs AwaitAgent as Temporal would; pending reports whether it went on waiting
// for the api to complete it.
func (f *agentFixture) await(t *testing.T, off rollout.Offline) (res lifecycle.ClusterResult, pending bool) {
	t.Helper()
	var s testsuite.WorkflowTestSuite
	env := s.NewTestActivityEnvironment()
	env.RegisterActivity(f.a.AwaitAgent)
	v, err := env.ExecuteActivity(f.a.AwaitAgent, lifecycle.AgentWait{Cluster: "p+edge", Item: f.item, Gen: f.gen, Context: "c1", Offline: off})
	if errors.Is(err, activity.ErrResultPending) {
		return res, true
	}
	if err != nil {
		t.Fatal(err)
	}
	if err := v.Get(&res); err != nil {
		t.Fatal(err)
	}
	return res, false
}

func (f *agentFixture) statuses(t *testing.T) []appctx.ResourceStatus {
	t.Helper()
	cas, err := f.a.Contexts.ClusterApps(context.Background(), "c1", "p+edge")
	if err != nil || len(cas) != 1 {
		t.Fatal(cas, err)
	}
	return cas[0].Resources
}

// The wait stores its task token and goes on waiting while the agent calls; a report
// there already ends it; a later publication supersedes it.
func TestAwaitAgentWaitsForTheReport(t *testing.T) {
	ctx := context.Background()
	f := newAgentFixture(t)
	if err := f.agents.SaveSeen(ctx, map[string]time.Time{"p+edge": time.Now().UTC()}); err != nil {
		t.Fatal(err)
	}
	if _, pending := f.await(t, rollout.Offline{}); !pending {
		t.Fatal("the wait ended without a report")
	}
	if it, _ := f.agents.Item(ctx, f.item); it.Token == nil || it.TokenGen != f.gen {
		t.Errorf("no task token stored with the item: %+v", it)
	}
	if _, err := f.agents.SaveReport(ctx, f.item, agent.Report{Cluster: "p+edge", Gen: f.gen, Applied: "c1", Result: lifecycle.ClusterResult{Done: 2}}); err != nil {
		t.Fatal(err)
	}
	if res, pending := f.await(t, rollout.Offline{}); pending || res.Done != 2 {
		t.Errorf("with the report there: %+v, pending %v", res, pending)
	}
	old := f.gen
	if f.gen, _ = f.agents.Publish(ctx, agent.Item{Cluster: "p+edge", Instance: "c1", Context: "c1"}); f.gen == old {
		t.Fatal("no new generation")
	}
	f.gen = old
	if res, pending := f.await(t, rollout.Offline{}); pending || res != (lifecycle.ClusterResult{}) {
		t.Errorf("a superseded wait: %+v, pending %v", res, pending)
	}
}

// An agent that has not called for the policy's After is offline: wait says so on its
// objects and goes on waiting; fail fails them; skip ends without counting the cluster,
// and reads of it count nothing until its agent reports.
func TestAwaitAgentAppliesTheOfflinePolicy(t *testing.T) {
	ctx := context.Background()
	after := rollout.Duration(time.Minute)
	for _, policy := range []string{rollout.OfflineWait, rollout.OfflineFail, rollout.OfflineSkip} {
		t.Run(policy, func(t *testing.T) {
			f := newAgentFixture(t)
			seen := time.Now().UTC().Add(-2 * time.Minute).Truncate(time.Second)
			if err := f.agents.SaveSeen(ctx, map[string]time.Time{"p+edge": seen}); err != nil {
				t.Fatal(err)
			}
			// Published just now: not offline yet, whenever the agent last called.
			if _, pending := f.await(t, rollout.Offline{Policy: policy, After: after}); !pending {
				t.Fatal("offline at once after the publication")
			}
			f.agents.SetNow(func() time.Time { return time.Now().UTC().Add(-5 * time.Minute) })
			if f.gen, _ = f.agents.Publish(ctx, agent.Item{Cluster: "p+edge", Instance: "c1", Context: "c1"}); f.gen == 0 {
				t.Fatal("publish")
			}
			res, pending := f.await(t, rollout.Offline{Policy: policy, After: after})
			st := f.statuses(t)
			since := "Offline since " + seen.Format(time.RFC3339)
			switch policy {
			case rollout.OfflineWait:
				if !pending || !strings.Contains(st[0].Warning, since) || st[0].Status != lifecycle.ResPending {
					t.Errorf("pending %v, statuses %#v", pending, st)
				}
			case rollout.OfflineFail:
				if pending || res.Failed != 2 || res.Offline == nil || st[1].Status != lifecycle.ResFailed || !strings.Contains(st[1].Error, since) {
					t.Errorf("result %+v pending %v, statuses %+v", res, pending, st)
				}
			case rollout.OfflineSkip:
				if pending || res.Failed != 0 || res.Offline == nil || !strings.Contains(st[0].Warning, "went on without the cluster") {
					t.Errorf("result %+v pending %v, statuses %+v", res, pending, st)
				}
				g := &agentCluster{key: "p+edge", agents: f.agents}
				cas, _ := f.a.Contexts.ClusterApps(ctx, "c1", "p+edge")
				if read := g.read(ctx, &appctx.Context{ID: "c1", Instance: "c1"}, cas, reading{}); read.Offline == nil || read.NotReady != 0 ||
					cas[0].Live[0].State != appctx.LiveUnknown {
					t.Errorf("a read of the skipped cluster: %+v, live %+v", read, cas[0].Live)
				}
				if _, err := f.agents.SaveReport(ctx, f.item, agent.Report{Cluster: "p+edge", Gen: f.gen, Applied: "c1"}); err != nil {
					t.Fatal(err)
				}
				if read := g.read(ctx, &appctx.Context{ID: "c1", Instance: "c1"}, cas, reading{}); read.Offline != nil {
					t.Errorf("a read once the agent reported: %+v", read)
				}
			}
		})
	}
}
