package e2e

import (
	"strings"
	"testing"
	"time"

	temporalclient "go.temporal.io/sdk/client"

	"github.com/temco/temco/internal/core/lifecycle"
)

// A dtc sub-controller outside temco: the example labeller, registered in
// /v2/dtc-controllers with a task queue, runs as its own step of the DIG's dtc intent,
// with the traffic group's name as its intent (so it labels the objects "tg"), before
// the built-in nps of lower priority (EMCO's dtc runs higher priorities first); its edits
// reach the cluster and its finished hooks run.
func TestDTCExternalSubcontroller(t *testing.T) {
	bin := buildLabeller(t)
	d := newDeployment(t, app{name: "lab", chart: webChart("lab"), placement: clusterNamed("cluster1")})
	d.create()
	c := d.c
	dtc, lab, nps := "dtc-"+d.project, "labeller-"+d.project, "nps-"+d.project
	c.do("POST", "/controllers", res(dtc, map[string]any{"host": "dtc", "port": 9018, "type": "action", "priority": 1})).must(t, 201)
	c.do("POST", "/dtc-controllers", res(lab, map[string]any{"taskQueue": lab, "type": "action", "priority": 9})).must(t, 201)
	c.do("POST", "/dtc-controllers", res(nps, map[string]any{"host": "nps", "port": 9033, "type": "action", "priority": 1})).must(t, 201)
	t.Cleanup(func() {
		if s := d.status(""); s.Instance != "" && s.Status != lifecycle.StatusTerminated && s.state() != lifecycle.StateApproved {
			d.operate(lifecycle.OpTerminate)
			d.await("Terminated", 2*time.Minute, "", func(s status) bool { return s.Status == lifecycle.StatusTerminated })
		}
		for _, p := range []string{d.dig() + "/intents/dtc", d.dig() + "/traffic-group-intents/tg", "/dtc-controllers/" + lab,
			"/dtc-controllers/" + nps, "/controllers/" + dtc} {
			if r := c.do("DELETE", p, nil); r.code != 204 && r.code != 404 {
				t.Errorf("clean-up: DELETE %s: %d %s", p, r.code, r.body)
			}
		}
	})
	c.do("POST", d.dig()+"/traffic-group-intents", res("tg", nil)).must(t, 201)
	c.do("POST", d.dig()+"/intents", res("dtc", map[string]any{"intent": map[string]string{dtc: "tg"}})).must(t, 201)
	c.do("POST", d.dig()+"/approve", nil).must(t, 202)

	p := startLabeller(t, bin, lab)
	acc := d.operate(lifecycle.OpInstantiate)
	d.await("Instantiated", 2*time.Minute, "", func(s status) bool { return s.Status == lifecycle.StatusInstantiated })
	p.awaitLog(t, "msg=labelled", 10*time.Second)
	p.awaitLog(t, "msg=finished context="+acc.ContextID+" operation=instantiate", 10*time.Second)
	for _, o := range []map[string]any{liveObject(t, 0, deployments, "lab"), liveObject(t, 0, configMaps, "lab-config")} {
		if got := label(o, "example.com/labelled-by"); got != "tg" {
			t.Errorf("live object: label example.com/labelled-by = %q, want the traffic group's name tg", got)
		}
	}
	// The steps ran as separate activities in dtc's order: the labeller (priority 9), then nps.
	tc, err := temporalclient.Dial(temporalclient.Options{HostPort: stack.Temporal.Address()})
	if err != nil {
		t.Fatal(err)
	}
	defer tc.Close()
	steps, err := controllerSteps(tc, acc.WorkflowID)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range steps {
		names = append(names, s.name)
	}
	if got, want := strings.Join(names, ","), lab+","+nps+",commit,"+lab+" finished,"+nps+" finished"; got != want {
		t.Errorf("controller steps of the instantiate: %s, want %s", got, want)
	}

	d.operate(lifecycle.OpTerminate)
	d.await("Terminated", 2*time.Minute, "", func(s status) bool { return s.Status == lifecycle.StatusTerminated })
	p.awaitLog(t, "msg=finished context="+acc.ContextID+" operation=terminate", 10*time.Second)
}
