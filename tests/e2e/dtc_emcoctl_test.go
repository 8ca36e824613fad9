package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/temco/temco/internal/core/lifecycle"
)

// dtcFile is EMCO's network_policy example as its users write it (written anew): the dtc
// and nps registrations, the server cluster's label, a traffic group with an inbound
// intent (sidecarProxy: yes unquoted, as EMCO's files have it), a client with an access
// point, and the DIG's intent naming dtc.
const dtcFile = `version: emco/v2
resourceContext:
  anchor: controllers
metadata:
  name: dtc-{{.Project}}
spec:
  host: dtc
  port: 9018
  type: action
  priority: 1
---
version: emco/v2
resourceContext:
  anchor: dtc-controllers
metadata:
  name: nps-{{.Project}}
spec:
  host: nps
  port: 9033
  type: action
  priority: 1
---
version: emco/v2
resourceContext:
  anchor: cluster-providers/{{.Provider}}/clusters/cluster2/labels
clusterLabel: networkpolicy-supported
---
version: emco/v2
resourceContext:
  anchor: {{.DIG}}/traffic-group-intents
metadata:
  name: tg
---
version: emco/v2
resourceContext:
  anchor: {{.DIG}}/traffic-group-intents/tg/inbound-intents
metadata:
  name: serverin
spec:
  app: dtc-server
  appLabel: app=dtc-server
  serviceName: dtc-server
  port: 8080
  protocol: TCP
  management:
    sidecarProxy: yes
    tlsType: MUTUAL
---
version: emco/v2
resourceContext:
  anchor: {{.DIG}}/traffic-group-intents/tg/inbound-intents/serverin/clients
metadata:
  name: client1
spec:
  app: dtc-client
  appLabel: app=dtc-client
  serviceName: dtc-client
  namespaces: []
  cidrs: []
---
version: emco/v2
resourceContext:
  anchor: {{.DIG}}/traffic-group-intents/tg/inbound-intents/serverin/clients/client1/access-points
metadata:
  name: ap1
spec:
  action: ALLOW
  url: ["/status/*"]
  access: [GET]
---
version: emco/v2
resourceContext:
  anchor: {{.DIG}}/intents
metadata:
  name: dtc-intent
spec:
  intent:
    dtc-{{.Project}}: tg
`

// An EMCO user's dtc file runs with temco's emcoctl-compatible client: applied, the
// deployment instantiated gets nps's NetworkPolicy on the labelled server cluster; a
// mistake in a file is refused with its reason and nothing of that document is stored;
// and deleting the file removes every resource it made.
func TestDTCWithEMCOFiles(t *testing.T) {
	d := newDeployment(t,
		app{name: "dtc-server", chart: webChart("dtc-server"), placement: clusterNamed("cluster2")},
		app{name: "dtc-client", chart: webChart("dtc-client"), placement: clusterNamed("cluster1")})
	d.create()
	dir := t.TempDir()
	values := "Project: " + d.project + "\nProvider: " + provider + "\nDIG: " + strings.TrimPrefix(d.dig(), "/") + "\n"
	bad := `version: emco/v2
resourceContext:
  anchor: {{.DIG}}/traffic-group-intents/tg/inbound-intents
metadata:
  name: serverbad
spec:
  app: dtc-server
  appLabel: dtc-server
  serviceName: dtc-server
  port: 8080
  protocol: TCP
`
	for name, data := range map[string]string{"dtc.yaml": dtcFile, "bad.yaml": bad, "values.yaml": values} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		if s := d.status(""); s.Instance != "" && s.Status != lifecycle.StatusTerminated && s.state() != lifecycle.StateApproved {
			d.operate(lifecycle.OpTerminate)
			d.await("Terminated", 2*time.Minute, "", func(s status) bool { return s.Status == lifecycle.StatusTerminated })
		}
		if out, err := temco(t, dir, "delete", "-f", "dtc.yaml", "-v", "values.yaml"); err != nil {
			t.Logf("clean-up: temco delete: %v\n%s", err, out)
		}
	})

	if out, err := temco(t, dir, "apply", "-f", "dtc.yaml", "-v", "values.yaml"); err != nil {
		t.Fatalf("temco apply: %v\n%s", err, out)
	}
	if got := d.c.do("GET", d.dig()+"/traffic-group-intents/tg/inbound-intents/serverin", nil).must(t, 200).body; !strings.Contains(string(got), `"sidecarProxy":"yes"`) {
		t.Errorf("inbound intent as stored: %s", got)
	}
	out, err := temco(t, dir, "apply", "-f", "bad.yaml", "-v", "values.yaml")
	if err == nil || !strings.Contains(out, "400") || !strings.Contains(out, "one label as key=value") {
		t.Errorf("temco apply of a file with a bad appLabel: err %v, output:\n%s", err, out)
	}
	d.c.do("GET", d.dig()+"/traffic-group-intents/tg/inbound-intents/serverbad", nil).must(t, 404)
	d.c.do("POST", d.dig()+"/approve", nil).must(t, 202)
	d.operate(lifecycle.OpInstantiate)
	d.await("Instantiated", 2*time.Minute, "", func(s status) bool { return s.Status == lifecycle.StatusInstantiated })
	np := meshObject(t, stack.Clusters[1], gvrNetworkPolicy, "default", "tg-serverin")
	if np == nil {
		t.Fatal("cluster2 has no NetworkPolicy tg-serverin")
	}
	if got := policyClients(np); len(got) != 1 || got[0] != "dtc-client" {
		t.Errorf("NetworkPolicy admits %v, want dtc-client", got)
	}
	if meshObject(t, stack.Clusters[0], gvrNetworkPolicy, "default", "tg-serverin") != nil {
		t.Error("cluster1 (not networkpolicy-supported) has the NetworkPolicy")
	}

	d.operate(lifecycle.OpTerminate)
	d.await("Terminated", 2*time.Minute, "", func(s status) bool { return s.Status == lifecycle.StatusTerminated })
	if out, err := temco(t, dir, "delete", "-f", "dtc.yaml", "-v", "values.yaml"); err != nil {
		t.Fatalf("temco delete: %v\n%s", err, out)
	}
	for _, p := range []string{d.dig() + "/traffic-group-intents/tg", "/dtc-controllers/nps-" + d.project, "/controllers/dtc-" + d.project} {
		d.c.do("GET", p, nil).must(t, 404)
	}
}
