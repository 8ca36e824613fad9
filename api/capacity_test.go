package api_test

// The routes and DIG status section of features/autoscale, served by the api
// (export_features_test.go).

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/temco/temco/api"
	"github.com/temco/temco/features/autoscale"
	"github.com/temco/temco/internal/core/capacity"
	"github.com/temco/temco/internal/core/lifecycle"
	"github.com/temco/temco/starter"
)

const pCapacity = pDIG + "/capacity-placements"

func capacitySpec(app string) map[string]any {
	return map[string]any{
		"eligible":                        map[string]any{"clusters": []string{"cp1+c1", "c2"}, "namePattern": `^cp1\+`},
		"minClustersBelowCapacityCeiling": 1, "maxClusters": 2,
		"workloads":          []any{map[string]any{"app": app, "deployment": "web", "hpa": "web"}},
		"evaluationInterval": "10s",
		"scaleIn":            map[string]any{"cooldown": "5m", "drain": map[string]any{"maxReplicas": 1}},
	}
}

func TestCapacityPlacementResource(t *testing.T) {
	c := api.NewFeatureClient(t, autoscale.Extension(nil))

	created := c.Do("POST", pCapacity, res("fleet", capacitySpec("app1"))).Must(t, http.StatusCreated)
	want := `{"metadata":{"name":"fleet","description":"d-fleet","userData1":"","userData2":""},"spec":{"eligible":{"clusters":["cp1+c1","c2"],"namePattern":"^cp1\\+"},` +
		`"minClustersBelowCapacityCeiling":1,"maxClusters":2,"workloads":[{"app":"app1","deployment":"web","hpa":"web"}],` +
		`"evaluationInterval":"10s","scaleIn":{"cooldown":"5m0s","drain":{"maxReplicas":1}}}}`
	if string(created.Body()) != want {
		t.Errorf("created\n%s\nwant\n%s", created.Body(), want)
	}
	if r := c.Do("GET", pCapacity+"/fleet", nil).Must(t, http.StatusOK); string(r.Body()) != want {
		t.Errorf("GET answered %s", r.Body())
	}

	// One per DIG.
	refused(t, c.Do("POST", pCapacity, res("other", capacitySpec("app1"))),
		`deployment intent group "dig1" already has capacity placement "fleet": a deployment intent group has one capacity placement at most; replace it (PUT) or delete it first`)

	// The apps it names may come later, as every reference in EMCO (the autoscaler checks
	// them when it uses them), and are not deleted while it names them.
	c.Do("PUT", pCapacity+"/fleet", res("fleet", capacitySpec("later"))).Must(t, http.StatusOK)
	c.Do("PUT", pCapacity+"/fleet", res("fleet", capacitySpec("app2"))).Must(t, http.StatusOK)
	if m := c.Do("DELETE", pCA+"/apps/app2", nil).Must(t, http.StatusConflict).Message(t); !strings.Contains(m, `capacity placement "fleet"`) {
		t.Errorf("deleting a named app: message %q", m)
	}

	// Invalid specs: 400 naming the field; nothing changed.
	for _, tc := range []struct {
		edit func(map[string]any)
		want string
	}{
		{func(s map[string]any) { delete(s, "workloads") }, "spec.workloads: name at least one app's Deployment and HorizontalPodAutoscaler"},
		{func(s map[string]any) { s["eligible"] = map[string]any{"namePattern": "("} }, `spec.eligible.namePattern "(": error parsing regexp`},
		{func(s map[string]any) { s["maxClusters"] = 100000 }, "spec.maxClusters: 100000 is above 10000"},
		{func(s map[string]any) { s["evaluationInterval"] = "soon" }, `spec.evaluationInterval: "soon" is not a duration`},
		{func(s map[string]any) { s["maxClusters"] = "two" }, "spec.maxClusters: expected int, not string"},
		{func(s map[string]any) {
			s["workloads"] = []any{map[string]any{"app": "app1", "deployment": "Web", "hpa": "web"}}
		}, `spec.workloads[0].deployment "Web"`},
	} {
		s := capacitySpec("app1")
		tc.edit(s)
		if m := c.Do("PUT", pCapacity+"/fleet", res("fleet", s)).Must(t, http.StatusBadRequest).Message(t); !strings.Contains(m, tc.want) {
			t.Errorf("message %q, want %q", m, tc.want)
		}
	}
	if r := c.Do("GET", pCapacity+"/fleet", nil).Must(t, http.StatusOK); !strings.Contains(string(r.Body()), `"app":"app2"`) {
		t.Errorf("after refused changes: %s", r.Body())
	}

	// Changed in any state of the DIG, without withdrawing its approval.
	c.Do("POST", pDIG+"/approve", nil).Must(t, http.StatusAccepted)
	c.Do("PUT", pCapacity+"/fleet", res("fleet", capacitySpec("app1"))).Must(t, http.StatusOK)
	if got := c.StateOf(t, pDIG).Current(); got != lifecycle.StateApproved {
		t.Errorf("state after changing the capacity placement of an approved DIG: %s, want Approved", got)
	}
	c.Do("DELETE", pCapacity+"/fleet", nil).Must(t, http.StatusNoContent)
	c.Do("DELETE", pCA+"/apps/app2", nil).Must(t, http.StatusNoContent) // named by nothing now
	if len(c.Started()) != 0 {
		t.Errorf("operations started: %v", c.Started())
	}
}

// autoscalers records what the API asks of the autoscalers.
type autoscalers struct {
	wakes   []string // "start" or "wake", per request
	signals []string
	refuse  bool
}

func (a *autoscalers) WakeAutoscaler(_ context.Context, dig lifecycle.Target, start bool) error {
	a.wakes = append(a.wakes, map[bool]string{true: "start", false: "wake"}[start]+" "+dig.DIG)
	return nil
}

func (a *autoscalers) SignalAutoscaler(_ context.Context, dig lifecycle.Target, signal string) error {
	if a.refuse {
		return &starter.Refused{Message: dig.String() + " has no autoscaler running"}
	}
	a.signals = append(a.signals, signal+" "+dig.DIG)
	return nil
}

func TestAutoscalerFollowsItsCapacityPlacement(t *testing.T) {
	as := &autoscalers{}
	c := api.NewFeatureClient(t, autoscale.Extension(as))
	c.Do("POST", pCapacity, res("fleet", capacitySpec("app1"))).Must(t, http.StatusCreated)
	c.Do("PUT", pCapacity+"/fleet", res("fleet", capacitySpec("app1"))).Must(t, http.StatusOK)
	// A refused change asks nothing of the autoscaler.
	c.Do("PUT", pCapacity+"/fleet", res("fleet", map[string]any{})).Must(t, http.StatusBadRequest)
	if want := []string{"start dig1", "start dig1"}; !slices.Equal(as.wakes, want) {
		t.Errorf("after create and replace: %v, want %v", as.wakes, want)
	}

	// Its status before any evaluation, then as the autoscaler recorded it; the DIG's status
	// shows it too once the DIG has a context.
	if r := c.Do("GET", pCapacity+"/fleet/status", nil).Must(t, http.StatusOK); strings.TrimSpace(string(r.Body())) != `{"name":"fleet","members":[]}` {
		t.Errorf("status before any evaluation: %s", r.Body())
	}
	at := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	state := lifecycle.AutoscaleState{
		Members: []capacity.Member{{Cluster: "cp1+c1", State: capacity.Active, Since: at, Added: at, Reason: "placed by the DIG's operation"}},
		Last:    &lifecycle.Evaluation{At: at, Signals: map[string]capacity.Signals{"cp1+c1": {Reachable: true, Unschedulable: 2}}},
	}
	for i := range 7 {
		state.Events = append(state.Events, lifecycle.Evaluation{At: at, Summary: "decision " + strconv.Itoa(i)})
	}
	d, err := c.Store().Get(context.Background(), pCapacity+"/fleet")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(state)
	d.State = string(b)
	if err := c.Store().SetState(context.Background(), d); err != nil {
		t.Fatal(err)
	}
	r := c.Do("GET", pCapacity+"/fleet/status", nil).Must(t, http.StatusOK)
	for _, want := range []string{`"cluster":"cp1+c1","state":"ACTIVE"`, `"unschedulable":2`, `"decision 0"`, `"decision 6"`} {
		if !strings.Contains(string(r.Body()), want) {
			t.Errorf("status lacks %s: %s", want, r.Body())
		}
	}
	c.Record(t, pDIG, lifecycle.StateInstantiated, "77", lifecycle.StatusInstantiated)
	r = c.Do("GET", pDIG+"/status", nil).Must(t, http.StatusOK)
	if s := string(r.Body()); !strings.Contains(s, `"autoscaler":{"name":"fleet"`) || strings.Contains(s, `"decision 1"`) || !strings.Contains(s, `"decision 2"`) {
		t.Errorf("DIG status, want the autoscaler with its last %d decisions: %s", 5, s)
	}
	// So does the dashboard's view of the DIG, with no drift section (it has none); a DIG
	// without a capacity placement has its autoscaler null there, absent from its status.
	r = c.Do("GET", pDIG+"/dashboard", nil).Must(t, http.StatusOK)
	if s := string(r.Body()); !strings.Contains(s, `"rollout":null,"autoscaler":{"name":"fleet","members":[{"cluster":"cp1+c1"`) || strings.Contains(s, `"drift"`) {
		t.Errorf("dashboard, want the autoscaler after the rollout: %s", s)
	}
	// A replace keeps the record.
	c.Do("PUT", pCapacity+"/fleet", res("fleet", capacitySpec("app1"))).Must(t, http.StatusOK)
	if r := c.Do("GET", pCapacity+"/fleet/status", nil).Must(t, http.StatusOK); !strings.Contains(string(r.Body()), `"cp1+c1"`) {
		t.Errorf("the record did not outlive a replace: %s", r.Body())
	}

	c.Do("POST", pCapacity+"/fleet/pause", nil).Must(t, http.StatusAccepted)
	c.Do("POST", pCapacity+"/fleet/resume", nil).Must(t, http.StatusAccepted)
	if want := []string{"pause dig1", "resume dig1"}; !slices.Equal(as.signals, want) {
		t.Errorf("signals %v, want %v", as.signals, want)
	}
	as.refuse = true
	if m := c.Do("POST", pCapacity+"/fleet/pause", nil).Must(t, http.StatusConflict).Message(t); !strings.Contains(m, "no autoscaler running") {
		t.Errorf("pause with none running: %q", m)
	}
	c.Do("POST", pCapacity+"/other/pause", nil).Must(t, http.StatusNotFound)

	as.wakes = nil
	c.Do("DELETE", pCapacity+"/fleet", nil).Must(t, http.StatusNoContent)
	if s := string(c.Do("GET", pDIG+"/dashboard", nil).Must(t, http.StatusOK).Body()); !strings.Contains(s, `"rollout":null,"autoscaler":null,"apps"`) {
		t.Errorf("dashboard without a capacity placement: %s", s)
	}
	if s := string(c.Do("GET", pDIG+"/status", nil).Must(t, http.StatusOK).Body()); strings.Contains(s, `"autoscaler"`) {
		t.Errorf("status without a capacity placement: %s", s)
	}
	if want := []string{"wake dig1"}; !slices.Equal(as.wakes, want) {
		t.Errorf("after the delete: %v, want %v (it ends at its next evaluation)", as.wakes, want)
	}
}

// refused fails the test unless r is 409 with message want.
func refused(t *testing.T, r api.Response, want string) {
	t.Helper()
	if m := r.Must(t, http.StatusConflict).Message(t); m != want {
		t.Errorf("message %q\nwant    %q", m, want)
	}
}
