package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/temco/temco/internal/core/lifecycle"
	"github.com/temco/temco/internal/dev/devstack"
)

// EMCO's vFW flow (examples/single-cluster, written anew for two clusters): ncm networks
// and a VLAN provider network applied on cluster1 and cluster2, three workloads (packet
// generator, firewall, sink) with ovnaction interfaces on them, approve, instantiate,
// DIG and cluster-network status, an update that takes an interface off, terminate, and
// ncm terminate; every object and annotation read back from the clusters at each step.
func TestFirewallFlowAfterEMCOsVFW(t *testing.T) {
	clusters := []*devstack.Cluster{stack.Clusters[0], stack.Clusters[1]}
	// The networks as an EMCO user's emcoctl file, applied and later deleted with temco.
	dir := t.TempDir()
	for name, data := range map[string]string{"networks.yaml": vfwNetworks, "vfw.yaml": vfwIntents,
		"values.yaml": "Provider: " + provider + "\nClusters: [" + clusters[0].Name + ", " + clusters[1].Name + "]\n"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	var ncm []clusterNet
	for _, cl := range clusters {
		n := clusterNet{t: t, c: &client{t: t}, cl: cl}
		ncm = append(ncm, n)
		t.Cleanup(func() { // after a failure: nothing of the networks is left behind
			if s := n.status("?status=deployed&output=summary"); s.state() == lifecycle.StateApplied {
				n.c.do("POST", n.path()+"/terminate", nil).must(t, 202)
				n.await("networks of "+n.cl.Name+" terminated", "?status=deployed&output=summary",
					func(s netStatus) bool { return s.DeployedStatus == lifecycle.StatusTerminated })
			}
			for _, p := range []string{"/networks/unprotected-private-net", "/networks/protected-private-net", "/provider-networks/emco-private-net"} {
				if r := n.c.do("DELETE", n.path()+p, nil); r.code != 204 && r.code != 404 {
					t.Errorf("clean-up: DELETE %s: %d %s", p, r.code, r.body)
				}
			}
		})
	}
	if out, err := temco(t, dir, "apply", "-f", "networks.yaml", "-v", "values.yaml"); err != nil {
		t.Fatalf("temco apply networks: %v\n%s", err, out)
	}
	for _, n := range ncm {
		s := n.await("networks of "+n.cl.Name+" applied", "?status=deployed", func(s netStatus) bool { return s.DeployedStatus == lifecycle.StatusInstantiated })
		if s.state() != lifecycle.StateApplied || s.DeployedCounts[lifecycle.ResApplied] != 3 {
			t.Errorf("network status of %s: %s", n.cl.Name, pretty(s))
		}
		for _, name := range []string{"unprotected-private-net", "protected-private-net"} {
			if n.live(gvrNetwork, name) == nil {
				t.Errorf("%s has no Network %s", n.cl.Name, name)
			}
		}
		if n.live(gvrProviderNetwork, "emco-private-net") == nil {
			t.Errorf("%s has no ProviderNetwork emco-private-net", n.cl.Name)
		}
	}

	d := newDeployment(t,
		app{name: "packetgen", chart: webChart("packetgen"), placement: clusterLabel("edge")},
		app{name: "firewall", chart: webChart("firewall"), placement: clusterLabel("edge")},
		app{name: "sink", chart: webChart("sink"), placement: clusterLabel("edge")},
	)
	d.create()
	t.Cleanup(d.terminateIfRunning)
	c := d.c
	nci := d.dig() + "/network-controller-intent/vfw"
	type iface struct{ name, ifname, network, ip string }
	interfaces := map[string][]iface{ // as vfwIntents declares them
		"packetgen": {{"pg-unprotected", "eth1", "unprotected-private-net", "192.168.110.2"}, {"pg-emco", "eth2", "emco-private-net", "10.10.120.2"}},
		"firewall": {{"fw-unprotected", "eth1", "unprotected-private-net", "192.168.110.3"}, {"fw-protected", "eth2", "protected-private-net", "192.168.120.2"},
			{"fw-emco", "eth3", "emco-private-net", "10.10.120.3"}},
		"sink": {{"sink-protected", "eth1", "protected-private-net", "192.168.120.3"}, {"sink-emco", "eth2", "emco-private-net", "10.10.120.4"}},
	}
	if err := os.WriteFile(filepath.Join(dir, "dig.yaml"), []byte("DIG: "+d.dig()+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := temco(t, dir, "apply", "-f", "vfw.yaml", "-v", "values.yaml", "-v", "dig.yaml"); err != nil {
		t.Fatalf("temco apply vfw intents: %v\n%s", err, out)
	}
	d.useController("ovnaction", "action", "vfw")
	// checkInterfaces reads each workload's pod template on both clusters: the interfaces
	// it has, by interface name, with their networks and addresses.
	checkInterfaces := func(step string) {
		t.Helper()
		for _, cl := range clusters {
			for app, ifs := range interfaces {
				var got struct {
					Type      string `json:"type"`
					Interface []struct {
						Interface, Name, IPAddress string
					} `json:"interface"`
				}
				raw := podAnnotations(t, cl, app)[nfnAnnotation]
				if err := json.Unmarshal([]byte(raw), &got); err != nil || got.Type != "ovn4nfv" || len(got.Interface) != len(ifs) {
					t.Errorf("%s: %s on %s: annotation %s = %q, want %d interfaces", step, app, cl.Name, nfnAnnotation, raw, len(ifs))
					continue
				}
				for _, i := range ifs {
					if !slices.ContainsFunc(got.Interface, func(g struct{ Interface, Name, IPAddress string }) bool {
						return g.Interface == i.ifname && g.Name == i.network && g.IPAddress == i.ip
					}) {
						t.Errorf("%s: %s on %s lacks interface %s on %s (%s): %s", step, app, cl.Name, i.ifname, i.network, i.ip, raw)
					}
				}
			}
		}
	}

	d.operate(lifecycle.OpInstantiate)
	d.await("Instantiated", 2*time.Minute, "", func(s status) bool { return s.Status == lifecycle.StatusInstantiated })
	if s := d.status(""); s.RsyncStatus[lifecycle.ResApplied] != 18 {
		t.Errorf("DIG status after instantiate: %s", pretty(s))
	}
	checkInterfaces("instantiate")

	// The firewall loses its provider-network interface.
	c.do("DELETE", nci+"/workload-intents/firewall-wi/interfaces/fw-emco", nil).must(t, 204)
	interfaces["firewall"] = interfaces["firewall"][:2]
	d.update("update", nil)
	checkInterfaces("update")
	for _, n := range ncm { // the networks are untouched by the DIG's operations
		if s := n.status("?status=ready&output=summary"); s.ReadyCounts["Ready"] != 3 {
			t.Errorf("network status of %s after the update: %s", n.cl.Name, pretty(s))
		}
	}

	d.operate(lifecycle.OpTerminate)
	d.await("Terminated", 2*time.Minute, "", func(s status) bool { return s.Status == lifecycle.StatusTerminated })
	for _, cl := range clusters {
		for app := range interfaces {
			if liveDeployment(t, cl, app) != nil {
				t.Errorf("%s still has %s after terminate", cl.Name, app)
			}
		}
	}
	// temco delete of the networks' file: the apply becomes an awaited terminate, then the
	// networks go.
	if out, err := temco(t, dir, "delete", "-f", "networks.yaml", "-v", "values.yaml"); err != nil {
		t.Fatalf("temco delete networks: %v\n%s", err, out)
	}
	for _, n := range ncm {
		if s := n.status("?status=deployed"); s.DeployedStatus != lifecycle.StatusTerminated {
			t.Errorf("networks of %s after temco delete: %s", n.cl.Name, pretty(s))
		}
		if n.live(gvrNetwork, "protected-private-net") != nil || n.live(gvrProviderNetwork, "emco-private-net") != nil {
			t.Errorf("%s keeps its networks after ncm terminate", n.cl.Name)
		}
		n.c.do("GET", n.path()+"/networks/protected-private-net", nil).must(t, 404)
	}
}

// vfwNetworks declares the vFW's networks on every cluster of the values, as EMCO's
// examples do (a licence header first).
const vfwNetworks = `# SPDX-License-Identifier: Apache-2.0
---
{{- range .Clusters }}
version: emco/v2
resourceContext:
  anchor: cluster-providers/{{ $.Provider }}/clusters/{{ . }}/networks
metadata:
  name: unprotected-private-net
spec:
  cniType: ovn4nfv
  ipv4Subnets:
  - name: unprotected-subnet
    subnet: 192.168.110.0/24
    gateway: 192.168.110.1/24
---
version: emco/v2
resourceContext:
  anchor: cluster-providers/{{ $.Provider }}/clusters/{{ . }}/networks
metadata:
  name: protected-private-net
spec:
  cniType: ovn4nfv
  ipv4Subnets:
  - name: protected-subnet
    subnet: 192.168.120.0/24
    gateway: 192.168.120.1/24
---
version: emco/v2
resourceContext:
  anchor: cluster-providers/{{ $.Provider }}/clusters/{{ . }}/provider-networks
metadata:
  name: emco-private-net
spec:
  cniType: ovn4nfv
  ipv4Subnets:
  - name: subnet1
    subnet: 10.10.120.0/24
    gateway: 10.10.120.1/24
  providerNetType: VLAN
  vlan:
    vlanID: "120"
    providerInterfaceName: eth1
    logicalInterfaceName: eth1.120
    vlanNodeSelector: any
    nodeLabelList: []
---
version: emco/v2
resourceContext:
  anchor: cluster-providers/{{ $.Provider }}/clusters/{{ . }}/apply
---
{{- end }}
`

// vfwIntents declares the ovnaction intents of the vFW's three workloads.
const vfwIntents = `version: emco/v2
resourceContext:
  anchor: {{ .DIG }}/network-controller-intent
metadata:
  name: vfw
---
version: emco/v2
resourceContext:
  anchor: {{ .DIG }}/network-controller-intent/vfw/workload-intents
metadata:
  name: packetgen-wi
spec:
  app: packetgen
  workloadResource: packetgen
  type: Deployment
---
version: emco/v2
resourceContext:
  anchor: {{ .DIG }}/network-controller-intent/vfw/workload-intents/packetgen-wi/interfaces
metadata:
  name: pg-unprotected
spec:
  interface: eth1
  name: unprotected-private-net
  ipAddress: 192.168.110.2
  defaultGateway: "false"
---
version: emco/v2
resourceContext:
  anchor: {{ .DIG }}/network-controller-intent/vfw/workload-intents/packetgen-wi/interfaces
metadata:
  name: pg-emco
spec:
  interface: eth2
  name: emco-private-net
  ipAddress: 10.10.120.2
  defaultGateway: "false"
---
version: emco/v2
resourceContext:
  anchor: {{ .DIG }}/network-controller-intent/vfw/workload-intents
metadata:
  name: firewall-wi
spec:
  app: firewall
  workloadResource: firewall
  type: Deployment
---
version: emco/v2
resourceContext:
  anchor: {{ .DIG }}/network-controller-intent/vfw/workload-intents/firewall-wi/interfaces
metadata:
  name: fw-unprotected
spec:
  interface: eth1
  name: unprotected-private-net
  ipAddress: 192.168.110.3
  defaultGateway: "false"
---
version: emco/v2
resourceContext:
  anchor: {{ .DIG }}/network-controller-intent/vfw/workload-intents/firewall-wi/interfaces
metadata:
  name: fw-protected
spec:
  interface: eth2
  name: protected-private-net
  ipAddress: 192.168.120.2
  defaultGateway: "false"
---
version: emco/v2
resourceContext:
  anchor: {{ .DIG }}/network-controller-intent/vfw/workload-intents/firewall-wi/interfaces
metadata:
  name: fw-emco
spec:
  interface: eth3
  name: emco-private-net
  ipAddress: 10.10.120.3
  defaultGateway: "false"
---
version: emco/v2
resourceContext:
  anchor: {{ .DIG }}/network-controller-intent/vfw/workload-intents
metadata:
  name: sink-wi
spec:
  app: sink
  workloadResource: sink
  type: Deployment
---
version: emco/v2
resourceContext:
  anchor: {{ .DIG }}/network-controller-intent/vfw/workload-intents/sink-wi/interfaces
metadata:
  name: sink-protected
spec:
  interface: eth1
  name: protected-private-net
  ipAddress: 192.168.120.3
  defaultGateway: "false"
---
version: emco/v2
resourceContext:
  anchor: {{ .DIG }}/network-controller-intent/vfw/workload-intents/sink-wi/interfaces
metadata:
  name: sink-emco
spec:
  interface: eth2
  name: emco-private-net
  ipAddress: 10.10.120.4
  defaultGateway: "false"
`
