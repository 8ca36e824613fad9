package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/temco/temco/features/health/flow"
	"github.com/temco/temco/internal/core/health"
)

// reachView is the part of a cluster's dashboard answer about its probes.
type reachView struct {
	Reachability struct {
		State   string     `json:"state"`
		Error   string     `json:"error"`
		Since   *time.Time `json:"since"`
		Checked *time.Time `json:"checked"`
	} `json:"reachability"`
}

// The cluster probes (the ClusterHealth workflow) see an API server go and come back: its
// cluster's view says Unreachable, with why, and the fleet counts it, then Reachable again;
// the GitOps cluster is not probed.
func TestClusterProbesSeeAnAPIServerGoAndComeBack(t *testing.T) {
	c := &client{t: t}
	down := stack.Clusters[2]
	viewOf := func(cluster string) func() reachView {
		return func() reachView {
			return getAs[reachView](t, c, "/cluster-providers/"+provider+"/clusters/"+cluster+"/dashboard")
		}
	}
	view := viewOf(down.Name)
	state := func(want string) func(reachView) bool {
		return func(v reachView) bool { return v.Reachability.State == want }
	}
	// A cluster reached through git is not probed, and says so.
	gc := registerGitOps(t)
	if g := awaitValue(t, gc+" GitOps", time.Minute, viewOf(gc), state(health.GitOps)); g.Reachability.Error != "" {
		t.Errorf("the GitOps cluster: %+v", g.Reachability)
	}
	before := awaitValue(t, down.Name+" Reachable", time.Minute, view, state(health.Reachable))
	if before.Reachability.Since == nil || before.Reachability.Error != "" {
		t.Errorf("a reachable cluster: %+v", before.Reachability)
	}
	down.StopAPIServer()
	restarted := false
	t.Cleanup(func() {
		if !restarted {
			if err := down.StartAPIServer(context.Background()); err != nil {
				t.Errorf("restart apiserver of %s: %v", down.Name, err)
			}
		}
	})
	gone := awaitValue(t, down.Name+" Unreachable", time.Minute, view, state(health.Unreachable))
	if !strings.Contains(gone.Reachability.Error, "connect") || gone.Reachability.Since == nil || !gone.Reachability.Since.After(*before.Reachability.Since) {
		t.Errorf("an unreachable cluster: %+v (before: %+v)", gone.Reachability, before.Reachability)
	}
	type fleet struct {
		Summary struct {
			Clusters map[string]int `json:"clusters"`
		} `json:"summary"`
	}
	f := awaitValue(t, "the fleet counting an unreachable cluster", 30*time.Second, func() fleet { return getAs[fleet](t, c, "/fleet?limit=1") },
		func(f fleet) bool { return f.Summary.Clusters[health.Unreachable] >= 1 })
	if f.Summary.Clusters[health.Reachable] < 2 {
		t.Errorf("fleet's clusters by reachability: %v, want the 2 others reachable", f.Summary.Clusters)
	}
	if err := down.StartAPIServer(context.Background()); err != nil {
		t.Fatal(err)
	}
	restarted = true
	back := awaitValue(t, down.Name+" Reachable again", time.Minute, view, state(health.Reachable))
	if back.Reachability.Error != "" || back.Reachability.Checked == nil {
		t.Errorf("a cluster back: %+v", back.Reachability)
	}
	recordHistory(t, flow.ClusterHealthID, "ClusterHealth-probes")
}
