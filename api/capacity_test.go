package api

import (
	"net/http"
	"strings"
	"testing"

	"github.com/temco/temco/internal/core/lifecycle"
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
