package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	apiclient "github.com/temco/temco/client"
	"github.com/temco/temco/internal/core/lifecycle"
	"github.com/temco/temco/starter"
)

// dashboardAnswer is the part of GET DIG/dashboard the test reads.
type dashboardAnswer struct {
	State    string `json:"state"`
	Total    int    `json:"total"`
	Clusters []struct {
		Cluster string `json:"cluster"`
		State   string `json:"state"`
		Apps    map[string]struct {
			State string `json:"state"`
			Ready string `json:"ready"`
		} `json:"apps"`
	} `json:"clusters"`
	LiveError string `json:"liveError"`
}

// The dashboard's view of a DIG on the real clusters: after an instantiate, a live read
// of the page's clusters shows every cell Ready, and one app's objects on one cluster are
// read live (the Deployment Present and Ready).
func TestDashboardShowsLiveReadiness(t *testing.T) {
	d := newDeployment(t, app{name: "dash", chart: webChart("dash"), placement: onEveryCluster()})
	d.create()
	acc := d.operate(lifecycle.OpInstantiate)
	d.await("Instantiated", 3*time.Minute, "", func(s status) bool { return s.Status == lifecycle.StatusInstantiated })

	var v dashboardAnswer
	page := []string{provider + "+cluster1", provider + "+cluster2", provider + "+cluster3"}
	eventually(t, "every cell Ready", 3*time.Minute, func() error {
		d.c.do("GET", d.dig()+"/dashboard?live=true", nil).must(t, 200).json(t, &v)
		if v.State != lifecycle.StateInstantiated || v.Total != 3 || len(v.Clusters) != 3 {
			return fmt.Errorf("dashboard %+v", v)
		}
		for _, c := range v.Clusters {
			if c.State != "Ready" || c.Apps["dash"].Ready != "Ready" {
				return fmt.Errorf("cluster %s: %+v (live error %q)", c.Cluster, c, v.LiveError)
			}
		}
		return nil
	})
	// A program reads the same through the client module (GET DIG/state), the clusters by
	// state as the live read left them.
	st, err := d.c.api().DIGState(context.Background(), d.dig(), apiclient.DIGStateOptions{Clusters: true})
	if err != nil {
		t.Fatal(err)
	}
	if st.State != lifecycle.StateInstantiated || st.ContextID != acc.ContextID || st.Revision != 1 || st.Clusters != 3 ||
		st.Running() || st.Failed() || st.ClusterStates["Ready"] != 3 || st.AppClusterStates["dash"]["Ready"] != 3 ||
		st.Objects[lifecycle.ResApplied] == 0 || len(st.History) == 0 || len(st.Revisions) != 1 {
		t.Errorf("the DIG's state: %+v", st)
	}
	recordHistory(t, starter.ReadWorkflowID(d.ref(), lifecycle.ReadInput{ContextID: acc.ContextID, Clusters: page}), "ReadClusterStatus-page")

	var objs struct {
		Objects []struct {
			Kind  string `json:"kind"`
			State string `json:"state"`
			Ready bool   `json:"ready"`
		} `json:"objects"`
	}
	d.c.do("GET", d.dig()+"/dashboard/clusters/"+provider+"/cluster2/apps/dash", nil).must(t, 200).json(t, &objs)
	found := false
	for _, o := range objs.Objects {
		if o.State != "Present" {
			t.Errorf("object %+v is not Present", o)
		}
		found = found || o.Kind == "Deployment" && o.Ready
	}
	if !found {
		t.Errorf("no Ready Deployment among %+v", objs.Objects)
	}
}
