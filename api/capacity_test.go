package api

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

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
	c, srv, ops := lifecycleClient(t)

	created := c.do("POST", pCapacity, res("fleet", capacitySpec("app1"))).must(t, http.StatusCreated)
	want := `{"metadata":{"name":"fleet","description":"d-fleet","userData1":"","userData2":""},"spec":{"eligible":{"clusters":["cp1+c1","c2"],"namePattern":"^cp1\\+"},` +
		`"minClustersBelowCapacityCeiling":1,"maxClusters":2,"workloads":[{"app":"app1","deployment":"web","hpa":"web"}],` +
		`"evaluationInterval":"10s","scaleIn":{"cooldown":"5m0s","drain":{"maxReplicas":1}}}}`
	if string(created.body) != want {
		t.Errorf("created\n%s\nwant\n%s", created.body, want)
	}
	if r := c.do("GET", pCapacity+"/fleet", nil).must(t, http.StatusOK); string(r.body) != want {
		t.Errorf("GET answered %s", r.body)
	}

	// One per DIG.
	refused(t, c.do("POST", pCapacity, res("other", capacitySpec("app1"))),
		`deployment intent group "dig1" already has capacity placement "fleet": a deployment intent group has one capacity placement at most; replace it (PUT) or delete it first`)

	// The apps it names may come later, as every reference in EMCO (the autoscaler checks
	// them when it uses them), and are not deleted while it names them.
	c.do("PUT", pCapacity+"/fleet", res("fleet", capacitySpec("later"))).must(t, http.StatusOK)
	c.do("PUT", pCapacity+"/fleet", res("fleet", capacitySpec("app2"))).must(t, http.StatusOK)
	if m := c.do("DELETE", pCA+"/apps/app2", nil).must(t, http.StatusConflict).message(t); !strings.Contains(m, `capacity placement "fleet"`) {
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
		if m := c.do("PUT", pCapacity+"/fleet", res("fleet", s)).must(t, http.StatusBadRequest).message(t); !strings.Contains(m, tc.want) {
			t.Errorf("message %q, want %q", m, tc.want)
		}
	}
	if r := c.do("GET", pCapacity+"/fleet", nil).must(t, http.StatusOK); !strings.Contains(string(r.body), `"app":"app2"`) {
		t.Errorf("after refused changes: %s", r.body)
	}

	// Changed in any state of the DIG, without withdrawing its approval.
	c.do("POST", pDIG+"/approve", nil).must(t, http.StatusAccepted)
	c.do("PUT", pCapacity+"/fleet", res("fleet", capacitySpec("app1"))).must(t, http.StatusOK)
	if got := stateOf(t, srv, pDIG).Current(); got != lifecycle.StateApproved {
		t.Errorf("state after changing the capacity placement of an approved DIG: %s, want Approved", got)
	}
	c.do("DELETE", pCapacity+"/fleet", nil).must(t, http.StatusNoContent)
	c.do("DELETE", pCA+"/apps/app2", nil).must(t, http.StatusNoContent) // named by nothing now
	if len(ops.started) != 0 {
		t.Errorf("operations started: %v", ops.started)
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
	c, srv, _ := lifecycleClient(t)
	as := &autoscalers{}
	srv.Autoscalers = as
	c.do("POST", pCapacity, res("fleet", capacitySpec("app1"))).must(t, http.StatusCreated)
	c.do("PUT", pCapacity+"/fleet", res("fleet", capacitySpec("app1"))).must(t, http.StatusOK)
	// A refused change asks nothing of the autoscaler.
	c.do("PUT", pCapacity+"/fleet", res("fleet", map[string]any{})).must(t, http.StatusBadRequest)
	if want := []string{"start dig1", "start dig1"}; !slices.Equal(as.wakes, want) {
		t.Errorf("after create and replace: %v, want %v", as.wakes, want)
	}

	// Its status before any evaluation, then as the autoscaler recorded it; the DIG's status
	// shows it too once the DIG has a context.
	if r := c.do("GET", pCapacity+"/fleet/status", nil).must(t, http.StatusOK); strings.TrimSpace(string(r.body)) != `{"name":"fleet","members":[]}` {
		t.Errorf("status before any evaluation: %s", r.body)
	}
	at := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	state := lifecycle.AutoscaleState{
		Members: []capacity.Member{{Cluster: "cp1+c1", State: capacity.Active, Since: at, Added: at, Reason: "placed by the DIG's operation"}},
		Last:    &lifecycle.Evaluation{At: at, Signals: map[string]capacity.Signals{"cp1+c1": {Reachable: true, Unschedulable: 2}}},
	}
	for i := range 7 {
		state.Events = append(state.Events, lifecycle.Evaluation{At: at, Summary: "decision " + itoa(i)})
	}
	d, err := srv.Store.Get(context.Background(), pCapacity+"/fleet")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(state)
	d.State = string(b)
	if err := srv.Store.SetState(context.Background(), d); err != nil {
		t.Fatal(err)
	}
	r := c.do("GET", pCapacity+"/fleet/status", nil).must(t, http.StatusOK)
	for _, want := range []string{`"cluster":"cp1+c1","state":"ACTIVE"`, `"unschedulable":2`, `"decision 0"`, `"decision 6"`} {
		if !strings.Contains(string(r.body), want) {
			t.Errorf("status lacks %s: %s", want, r.body)
		}
	}
	record(t, srv, pDIG, lifecycle.StateInstantiated, "77", lifecycle.StatusInstantiated)
	r = c.do("GET", pDIG+"/status", nil).must(t, http.StatusOK)
	if s := string(r.body); !strings.Contains(s, `"autoscaler":{"name":"fleet"`) || strings.Contains(s, `"decision 1"`) || !strings.Contains(s, `"decision 2"`) {
		t.Errorf("DIG status, want the autoscaler with its last %d decisions: %s", digStatusEvents, s)
	}
	// A replace keeps the record.
	c.do("PUT", pCapacity+"/fleet", res("fleet", capacitySpec("app1"))).must(t, http.StatusOK)
	if r := c.do("GET", pCapacity+"/fleet/status", nil).must(t, http.StatusOK); !strings.Contains(string(r.body), `"cp1+c1"`) {
		t.Errorf("the record did not outlive a replace: %s", r.body)
	}

	c.do("POST", pCapacity+"/fleet/pause", nil).must(t, http.StatusAccepted)
	c.do("POST", pCapacity+"/fleet/resume", nil).must(t, http.StatusAccepted)
	if want := []string{"pause dig1", "resume dig1"}; !slices.Equal(as.signals, want) {
		t.Errorf("signals %v, want %v", as.signals, want)
	}
	as.refuse = true
	if m := c.do("POST", pCapacity+"/fleet/pause", nil).must(t, http.StatusConflict).message(t); !strings.Contains(m, "no autoscaler running") {
		t.Errorf("pause with none running: %q", m)
	}
	c.do("POST", pCapacity+"/other/pause", nil).must(t, http.StatusNotFound)

	as.wakes = nil
	c.do("DELETE", pCapacity+"/fleet", nil).must(t, http.StatusNoContent)
	if want := []string{"wake dig1"}; !slices.Equal(as.wakes, want) {
		t.Errorf("after the delete: %v, want %v (it ends at its next evaluation)", as.wakes, want)
	}
}
