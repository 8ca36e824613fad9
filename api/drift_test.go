package api

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/temco/temco/features/drift/flow"
	"github.com/temco/temco/internal/core/appctx"
	"github.com/temco/temco/internal/core/drift"
	"github.com/temco/temco/internal/core/lifecycle"
)

// schedules records the drift schedules the api asks for.
type schedules struct{ synced, checked []string }

func (s *schedules) CheckDrift(_ context.Context, dig lifecycle.Target, correct bool) (string, error) {
	s.checked = append(s.checked, fmt.Sprintf("%s correct=%v", dig.ID(), correct))
	return flow.WorkflowID(dig) + "-asked", nil
}

func (s *schedules) SyncDrift(_ context.Context, dig lifecycle.Target, interval time.Duration) error {
	s.synced = append(s.synced, flow.ScheduleID(dig)+" "+interval.String())
	return nil
}

// spec.driftDetection is checked (a duration of at least a minute), and the DIG's drift
// schedule follows every create, replace and delete; a DIG without it has none (tree
// creates dig1 without it: its schedule is removed, in case one was left).
func TestDriftDetectionScheduleFollowsTheDIG(t *testing.T) {
	sch := &schedules{}
	c := newClient(t, func(s *Server) { s.Drift = sch })
	tree(t, c)
	withDrift := func(dd any) map[string]any {
		sp := digSpec()
		sp["driftDetection"] = dd
		return sp
	}
	for _, bad := range []struct {
		dd   any
		want string
	}{
		{map[string]any{"interval": "30s"}, `spec.driftDetection.interval "30s" is invalid: give a duration of at least 1m0s, e.g. "10m"`},
		{map[string]any{"interval": "often"}, `spec.driftDetection.interval "often" is invalid: give a duration of at least 1m0s, e.g. "10m"`},
		{map[string]any{"correctDrift": true}, `spec.driftDetection.interval is required: a duration of at least 1m0s, e.g. "10m"`},
	} {
		if m := c.do("PUT", pDIG, res("dig1", withDrift(bad.dd))).must(t, http.StatusBadRequest).message(t); m != bad.want {
			t.Errorf("message %q\nwant    %q", m, bad.want)
		}
	}
	const id = "drift/p1/ca/v1/dig1"
	c.do("PUT", pDIG, res("dig1", withDrift(map[string]any{"interval": "10m"}))).must(t, http.StatusOK)
	c.do("PUT", pDIG, res("dig1", withDrift(map[string]any{"interval": "1h", "correctDrift": true}))).must(t, http.StatusOK)
	var got map[string]any
	c.do("GET", pDIG, nil).must(t, http.StatusOK).json(t, &got)
	if dd := got["spec"].(map[string]any)["driftDetection"]; dd.(map[string]any)["correctDrift"] != true {
		t.Errorf("stored driftDetection %v", dd)
	}
	c.do("PUT", pDIG, res("dig1", digSpec())).must(t, http.StatusOK)
	c.do("POST", pCA+"/deployment-intent-groups", res("dig2", withDrift(map[string]any{"interval": "2m"}))).must(t, http.StatusCreated)
	c.do("DELETE", pCA+"/deployment-intent-groups/dig2", nil).must(t, http.StatusNoContent)
	want := []string{id + " 0s", id + " 10m0s", id + " 1h0m0s", id + " 0s", "drift/p1/ca/v1/dig2 2m0s", "drift/p1/ca/v1/dig2 0s"}
	if !slices.Equal(sch.synced, want) {
		t.Errorf("schedules synced\n%s\nwant\n%s", strings.Join(sch.synced, "\n"), strings.Join(want, "\n"))
	}
}

// The DIG's status shows its context's last drift check: counts, each drifted object
// with its fields, and the clusters not compared with the reason.
func TestStatusShowsTheLastDriftCheck(t *testing.T) {
	c, srv, _ := lifecycleClient(t)
	record(t, srv, pDIG, lifecycle.StateInstantiated, "77", lifecycle.StatusInstantiated)
	ctx := context.Background()
	checked := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	for _, d := range []*appctx.ClusterDrift{
		{Context: "77", Cluster: "cp1+c1", Check: "chk", Checked: checked, InSync: 2, Requests: 3, Objects: []appctx.DriftObject{
			{App: "app1", Ref: appctx.Ref{Group: "apps", Version: "v1", Kind: "Deployment", Namespace: "default", Name: "web"},
				Fields: []drift.Field{{Path: "spec.replicas", Live: "3", Desired: "1"}}},
			{App: "app1", Ref: appctx.Ref{Version: "v1", Kind: "ConfigMap", Namespace: "default", Name: "web-config"}, Missing: true},
		}},
		{Context: "77", Cluster: "cp1+c2", Check: "chk", Checked: checked, Skipped: "GitOps cluster"},
		{Context: "77", Cluster: "cp1+c3", Check: "older", Checked: checked, InSync: 9},
	} {
		if err := srv.Contexts.PutClusterDrift(ctx, d); err != nil {
			t.Fatal(err)
		}
	}
	if err := srv.Contexts.SummarizeDrift(ctx, &appctx.DriftSummary{Context: "77", Check: "chk", Started: checked, Finished: checked}); err != nil {
		t.Fatal(err)
	}
	var s struct {
		Drift driftStatus `json:"drift"`
	}
	c.do("GET", pDIG+"/status", nil).must(t, http.StatusOK).json(t, &s)
	d := s.Drift
	if d.Check != "chk" || d.ClustersChecked != 2 || d.InSync != 2 || d.Drifted != 2 || d.Missing != 1 || d.APIRequests != 3 {
		t.Errorf("drift summary %+v", d)
	}
	if len(d.Objects) != 2 || d.Objects[0].Name != "web" || d.Objects[0].Fields[0].Path != "spec.replicas" ||
		d.Objects[0].Fields[0].Live != "3" || !d.Objects[1].Missing || d.Objects[1].Cluster != "c1" {
		t.Errorf("drifted objects %+v", d.Objects)
	}
	if len(d.Unchecked) != 1 || d.Unchecked[0].Cluster != "c2" || d.Unchecked[0].Reason != "GitOps cluster" {
		t.Errorf("unchecked clusters %+v", d.Unchecked)
	}
	// The cluster filter selects objects and clusters too.
	s.Drift = driftStatus{}
	c.do("GET", pDIG+"/status?cluster=cp1%2Bc2", nil).must(t, http.StatusOK).json(t, &s)
	if len(s.Drift.Objects) != 0 || len(s.Drift.Unchecked) != 1 {
		t.Errorf("drift on cp1+c2: %+v", s.Drift)
	}
}

// POST DIG/drift-check starts a check now, correcting what it finds when asked, of an
// instantiated DIG only; a bad body is a 400 that starts nothing.
func TestDriftCheckOnRequest(t *testing.T) {
	sch := &schedules{}
	var srv *Server
	c := newClient(t, func(s *Server) { s.Drift, srv = sch, s })
	tree(t, c)
	refused(t, c.do("POST", pDIG+"/drift-check", nil), digName+" is Created: a drift check needs it Instantiated")
	record(t, srv, pDIG, lifecycle.StateInstantiated, "ctx-1", lifecycle.StatusInstantiated)
	var got driftChecked
	c.do("POST", pDIG+"/drift-check", map[string]any{"correct": true}).must(t, http.StatusAccepted).json(t, &got)
	if !strings.HasPrefix(got.WorkflowID, "drift/p1/ca/v1/dig1") || !got.Correct {
		t.Errorf("answer %+v", got)
	}
	c.do("POST", pDIG+"/drift-check", nil).must(t, http.StatusAccepted)
	c.do("POST", pDIG+"/drift-check", map[string]any{"correct": "yes"}).must(t, http.StatusBadRequest)
	if want := []string{pDIG + " correct=true", pDIG + " correct=false"}; !slices.Equal(sch.checked, want) {
		t.Errorf("checks started %v, want %v", sch.checked, want)
	}
}
