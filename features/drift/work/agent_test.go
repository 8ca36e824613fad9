package work

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/temco/temco/internal/core/agent"
	"github.com/temco/temco/internal/core/appctx"
	"github.com/temco/temco/internal/core/drift"
	"github.com/temco/temco/internal/core/lifecycle"
	"github.com/temco/temco/internal/core/store"
	"github.com/temco/temco/internal/dev/devstack"
	"github.com/temco/temco/internal/dev/testenv"
)

var ferret *devstack.FerretDB

func TestMain(m *testing.M) { testenv.MainWithFerretDB(m, &ferret) }

// A drift check of an agent cluster records its agent's last report: none yet, the agent's
// error, or its objects with the report's time; a report of an agent that no longer calls
// says so; correction leaves the objects alone, saying why. A check's summary counts the
// check's record, never the report it was made from.
func TestDriftOfAnAgentClusterIsItsAgentsReport(t *testing.T) {
	ctx := context.Background()
	db := testenv.Database(t, ferret, "driftagent")
	st, err := store.New(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	contexts, err := appctx.New(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	agents := agent.Open(db)
	if _, err := agents.IssueJoin(ctx, "p+edge", "1"); err != nil { // the agent's record, which its calls mark
		t.Fatal(err)
	}
	a := &Activities{Store: st, Contexts: contexts}
	cm := appctx.Ref{Version: "v1", Kind: "ConfigMap", Namespace: "default", Name: "a"}
	placements := []*appctx.ClusterApp{{App: "web", Resources: []appctx.ResourceStatus{
		{Ref: cm, Status: lifecycle.ResApplied}, {Ref: appctx.Ref{Version: "v1", Kind: "Service", Name: "b"}, Status: lifecycle.ResApplied},
		{Ref: appctx.Ref{Version: "v1", Kind: "Pod", Name: "c"}, Status: lifecycle.ResFailed}}}}
	check := func(correct bool) (*appctx.ClusterDrift, lifecycle.ClusterResult) {
		t.Helper()
		in := lifecycle.ClusterInput{ContextID: "ctx1", Cluster: "p+edge", Drift: &lifecycle.DriftCheck{ID: "drift/x", Correct: correct}}
		rec := &appctx.ClusterDrift{Context: "ctx1", Cluster: "p+edge", Check: "drift/x", Checked: time.Now().UTC()}
		res, err := a.fromAgent(ctx, in, placements, rec)
		if err != nil {
			t.Fatal(err)
		}
		return rec, res
	}

	if rec, res := check(false); rec.Skipped != agentNotReported || rec.Reported != nil || res != (lifecycle.ClusterResult{NotReady: 2}) {
		t.Errorf("before any report: %+v, %+v", rec, res)
	}

	if err := contexts.PutAgentDrift(ctx, &appctx.ClusterDrift{Context: "ctx1", Cluster: "p+edge", Checked: time.Now().UTC(),
		Error: "list configmaps: forbidden"}); err != nil {
		t.Fatal(err)
	}
	if rec, res := check(false); rec.Error != "list configmaps: forbidden" || rec.Skipped != "" || res != (lifecycle.ClusterResult{NotReady: 2}) {
		t.Errorf("a report that the cluster could not be compared: %+v, %+v", rec, res)
	}

	reported := time.Now().UTC().Add(-time.Hour).Truncate(time.Millisecond) // unchanged since: not sent again
	fields := []drift.Field{{Path: "data.k", Live: `"x"`, Desired: `"v"`}}
	if err := contexts.PutAgentDrift(ctx, &appctx.ClusterDrift{Context: "ctx1", Cluster: "p+edge", Checked: reported, InSync: 1,
		Objects: []appctx.DriftObject{{App: "web", Ref: cm, Fields: fields}}}); err != nil {
		t.Fatal(err)
	}
	if err := agents.SaveSeen(ctx, map[string]time.Time{"p+edge": time.Now().UTC()}); err != nil {
		t.Fatal(err)
	}
	rec, res := check(false)
	if rec.Error != "" || rec.Skipped != "" || rec.Reported == nil || !rec.Reported.Equal(reported) || rec.InSync != 1 ||
		len(rec.Objects) != 1 || rec.Objects[0].Ref != cm || len(rec.Objects[0].Fields) != 1 || rec.Objects[0].Fields[0] != fields[0] ||
		rec.Objects[0].Error != "" || res != (lifecycle.ClusterResult{Done: 1, Failed: 1}) {
		t.Errorf("a report of drift: %+v, %+v", rec, res)
	}
	if err := contexts.PutClusterDrift(ctx, rec); err != nil {
		t.Fatal(err)
	}
	sum := &appctx.DriftSummary{Context: "ctx1", Check: "drift/x"}
	if err := contexts.SummarizeDrift(ctx, sum); err != nil {
		t.Fatal(err)
	}
	if sum.Clusters != 1 || sum.Drifted != 1 || sum.InSync != 1 || len(sum.DriftedClusters) != 1 {
		t.Errorf("the check's summary (its record, not the report too): %+v", sum)
	}

	if rec, _ := check(true); rec.Objects[0].Corrected || rec.Objects[0].Error != agentNotCorrected {
		t.Errorf("correctDrift on an agent cluster: %+v", rec.Objects[0])
	}

	if err := agents.SaveSeen(ctx, map[string]time.Time{"p+edge": time.Now().UTC().Add(-2 * agent.OfflineAfter)}); err != nil {
		t.Fatal(err)
	}
	if rec, res := check(false); !strings.Contains(rec.Error, "its agent has not called since") || len(rec.Objects) != 1 ||
		res != (lifecycle.ClusterResult{Done: 1, Failed: 1}) {
		t.Errorf("the report of an agent no longer calling: %+v, %+v", rec, res)
	}
}
