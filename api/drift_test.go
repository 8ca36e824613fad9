package api_test

// The routes and DIG hooks of features/drift, served by the api (export_features_test.go).

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/temco/temco/api"
	featuredrift "github.com/temco/temco/features/drift"
	"github.com/temco/temco/features/drift/flow"
	"github.com/temco/temco/internal/core/appctx"
	"github.com/temco/temco/internal/core/drift"
	"github.com/temco/temco/internal/core/lifecycle"
)

const pDIG, pCA, digName = api.PathDIG, api.PathCA, api.DIGName

var res = api.Res

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
	c := api.NewFeatureClient(t, featuredrift.Extension(sch))
	withDrift := func(dd any) map[string]any {
		sp := api.DIGSpec()
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
		if m := c.Do("PUT", pDIG, res("dig1", withDrift(bad.dd))).Must(t, http.StatusBadRequest).Message(t); m != bad.want {
			t.Errorf("message %q\nwant    %q", m, bad.want)
		}
	}
	const id = "drift/p1/ca/v1/dig1"
	c.Do("PUT", pDIG, res("dig1", withDrift(map[string]any{"interval": "10m"}))).Must(t, http.StatusOK)
	c.Do("PUT", pDIG, res("dig1", withDrift(map[string]any{"interval": "1h", "correctDrift": true}))).Must(t, http.StatusOK)
	var got map[string]any
	c.Do("GET", pDIG, nil).Must(t, http.StatusOK).JSON(t, &got)
	if dd := got["spec"].(map[string]any)["driftDetection"]; dd.(map[string]any)["correctDrift"] != true {
		t.Errorf("stored driftDetection %v", dd)
	}
	c.Do("PUT", pDIG, res("dig1", api.DIGSpec())).Must(t, http.StatusOK)
	c.Do("POST", pCA+"/deployment-intent-groups", res("dig2", withDrift(map[string]any{"interval": "2m"}))).Must(t, http.StatusCreated)
	c.Do("DELETE", pCA+"/deployment-intent-groups/dig2", nil).Must(t, http.StatusNoContent)
	want := []string{id + " 0s", id + " 10m0s", id + " 1h0m0s", id + " 0s", "drift/p1/ca/v1/dig2 2m0s", "drift/p1/ca/v1/dig2 0s"}
	if !slices.Equal(sch.synced, want) {
		t.Errorf("schedules synced\n%s\nwant\n%s", strings.Join(sch.synced, "\n"), strings.Join(want, "\n"))
	}
}

// driftSection is the drift section of a DIG's status, as far as the tests read it.
type driftSection struct {
	Check           string `json:"check"`
	ClustersChecked int    `json:"clustersChecked"`
	InSync          int    `json:"inSync"`
	Drifted         int    `json:"drifted"`
	Missing         int    `json:"missing"`
	APIRequests     int    `json:"apiRequests"`
	Objects         []struct {
		Cluster string        `json:"cluster"`
		Name    string        `json:"name"`
		Missing bool          `json:"missing"`
		Fields  []drift.Field `json:"fields"`
	} `json:"objects"`
	Unchecked []struct {
		Cluster string `json:"cluster"`
		Reason  string `json:"reason"`
	} `json:"unchecked"`
}

// recordDriftCheck records a drift check of context 77 of the DIG, Instantiated: on c1
// two objects drifted, c2 skipped, c3 checked by an older check.
func recordDriftCheck(t *testing.T, c *api.FeatureClient) {
	t.Helper()
	c.Record(t, pDIG, lifecycle.StateInstantiated, "77", lifecycle.StatusInstantiated)
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
		if err := c.Contexts().PutClusterDrift(ctx, d); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Contexts().SummarizeDrift(ctx, &appctx.DriftSummary{Context: "77", Check: "chk", Started: checked, Finished: checked}); err != nil {
		t.Fatal(err)
	}
}

// The DIG's status shows its context's last drift check: counts, each drifted object
// with its fields, and the clusters not compared with the reason.
func TestStatusShowsTheLastDriftCheck(t *testing.T) {
	c := api.NewFeatureClient(t, featuredrift.Extension(&schedules{}))
	recordDriftCheck(t, c)
	var s struct {
		Drift driftSection `json:"drift"`
	}
	c.Do("GET", pDIG+"/status", nil).Must(t, http.StatusOK).JSON(t, &s)
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
	s.Drift = driftSection{}
	c.Do("GET", pDIG+"/status?cluster=cp1%2Bc2", nil).Must(t, http.StatusOK).JSON(t, &s)
	if len(s.Drift.Objects) != 0 || len(s.Drift.Unchecked) != 1 {
		t.Errorf("drift on cp1+c2: %+v", s.Drift)
	}
}

// POST DIG/drift-check starts a check now, correcting what it finds when asked, of an
// instantiated DIG only; a bad body is a 400 that starts nothing.
func TestDriftCheckOnRequest(t *testing.T) {
	sch := &schedules{}
	c := api.NewFeatureClient(t, featuredrift.Extension(sch))
	if m := c.Do("POST", pDIG+"/drift-check", nil).Must(t, http.StatusConflict).Message(t); m != digName+" is Created: a drift check needs it Instantiated" {
		t.Errorf("message %q", m)
	}
	c.Record(t, pDIG, lifecycle.StateInstantiated, "ctx-1", lifecycle.StatusInstantiated)
	var got struct {
		WorkflowID string `json:"workflowId"`
		Correct    bool   `json:"correct"`
	}
	c.Do("POST", pDIG+"/drift-check", map[string]any{"correct": true}).Must(t, http.StatusAccepted).JSON(t, &got)
	if !strings.HasPrefix(got.WorkflowID, "drift/p1/ca/v1/dig1") || !got.Correct {
		t.Errorf("answer %+v", got)
	}
	c.Do("POST", pDIG+"/drift-check", nil).Must(t, http.StatusAccepted)
	c.Do("POST", pDIG+"/drift-check", map[string]any{"correct": "yes"}).Must(t, http.StatusBadRequest)
	if want := []string{pDIG + " correct=true", pDIG + " correct=false"}; !slices.Equal(sch.checked, want) {
		t.Errorf("checks started %v, want %v", sch.checked, want)
	}
}

// Switched off (--disable-features drift), the feature's routes are still there: a
// check asked of an instantiated DIG answers 503 saying so (a DIG missing or in another
// state as when on), spec.driftDetection is still checked, and the status still shows
// the checks recorded.
func TestDriftSwitchedOffAnswersSo(t *testing.T) {
	c := api.NewFeatureClient(t, featuredrift.Extension(nil))
	c.Do("POST", pCA+"/deployment-intent-groups/nodig/drift-check", nil).Must(t, http.StatusNotFound)
	c.Do("POST", pDIG+"/drift-check", nil).Must(t, http.StatusConflict)
	sp := api.DIGSpec()
	sp["driftDetection"] = map[string]any{"interval": "30s"}
	c.Do("PUT", pDIG, res("dig1", sp)).Must(t, http.StatusBadRequest)
	sp["driftDetection"] = map[string]any{"interval": "10m"}
	c.Do("PUT", pDIG, res("dig1", sp)).Must(t, http.StatusOK)
	recordDriftCheck(t, c)
	rec := c.Serve(httptest.NewRequest("POST", "/v2"+pDIG+"/drift-check", nil))
	if want := "this temco runs no drift checks: feature drift is switched off (--disable-features)"; rec.Code != http.StatusServiceUnavailable || !strings.Contains(rec.Body.String(), want) {
		t.Errorf("drift check: %d %s, want 503 saying %q", rec.Code, rec.Body, want)
	}
	var s struct {
		Drift driftSection `json:"drift"`
	}
	c.Do("GET", pDIG+"/status", nil).Must(t, http.StatusOK).JSON(t, &s)
	if s.Drift.Check != "chk" {
		t.Errorf("status's drift %+v", s.Drift)
	}
}
