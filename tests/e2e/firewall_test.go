package e2e

import (
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/temco/temco/internal/devstack"
	"github.com/temco/temco/internal/lifecycle"
)

// EMCO's vFW flow (examples/single-cluster, written anew for two clusters): ncm networks
// and a VLAN provider network applied on cluster1 and cluster2, three workloads (packet
// generator, firewall, sink) with ovnaction interfaces on them, approve, instantiate,
// DIG and cluster-network status, an update that takes an interface off, terminate, and
// ncm terminate; every object and annotation read back from the clusters at each step.
func TestFirewallFlowAfterEMCOsVFW(t *testing.T) {
	clusters := []*devstack.Cluster{stack.Clusters[0], stack.Clusters[1]}
	nets := map[string]map[string]any{
		"unprotected-private-net": network(subnet("unprotected-subnet", "192.168.110.0/24", "192.168.110.1/24")),
		"protected-private-net":   network(subnet("protected-subnet", "192.168.120.0/24", "192.168.120.1/24")),
	}
	pnet := map[string]any{"cniType": "ovn4nfv", "ipv4Subnets": []any{subnet("subnet1", "10.10.120.0/24", "10.10.120.1/24")},
		"providerNetType": "VLAN", "vlan": map[string]any{"vlanID": "120", "providerInterfaceName": "eth1",
			"logicalInterfaceName": "eth1.120", "vlanNodeSelector": "any"}}
	var ncm []clusterNet
	for _, cl := range clusters {
		n := clusterNet{t: t, c: &client{t: t}, cl: cl}
		ncm = append(ncm, n)
		for name, spec := range nets {
			n.c.do("POST", n.path()+"/networks", res(name, spec)).must(t, 201)
		}
		n.c.do("POST", n.path()+"/provider-networks", res("emco-private-net", pnet)).must(t, 201)
		t.Cleanup(func() {
			for _, p := range []string{"/networks/unprotected-private-net", "/networks/protected-private-net", "/provider-networks/emco-private-net"} {
				if r := n.c.do("DELETE", n.path()+p, nil); r.code != 204 {
					t.Errorf("clean-up: DELETE %s: %d %s", p, r.code, r.body)
				}
			}
		})
		n.c.do("POST", n.path()+"/apply", nil).must(t, 202)
		t.Cleanup(func() { // runs first: the networks go only once nothing of them is applied
			if s := n.status("?status=deployed&output=summary"); s.state() != lifecycle.StateTerminated {
				n.c.do("POST", n.path()+"/terminate", nil).must(t, 202)
				n.await("networks of "+n.cl.Name+" terminated", "?status=deployed&output=summary",
					func(s netStatus) bool { return s.DeployedStatus == lifecycle.StatusTerminated })
			}
		})
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
	c.do("POST", d.dig()+"/network-controller-intent", res("vfw", nil)).must(t, 201)
	type iface struct{ name, ifname, network, ip string }
	interfaces := map[string][]iface{
		"packetgen": {{"pg-unprotected", "eth1", "unprotected-private-net", "192.168.110.2"}, {"pg-emco", "eth2", "emco-private-net", "10.10.120.2"}},
		"firewall": {{"fw-unprotected", "eth1", "unprotected-private-net", "192.168.110.3"}, {"fw-protected", "eth2", "protected-private-net", "192.168.120.2"},
			{"fw-emco", "eth3", "emco-private-net", "10.10.120.3"}},
		"sink": {{"sink-protected", "eth1", "protected-private-net", "192.168.120.3"}, {"sink-emco", "eth2", "emco-private-net", "10.10.120.4"}},
	}
	for app, ifs := range interfaces {
		c.do("POST", nci+"/workload-intents", res(app+"-wi", map[string]any{"app": app, "workloadResource": app, "type": "Deployment"})).must(t, 201)
		for _, i := range ifs {
			c.do("POST", nci+"/workload-intents/"+app+"-wi/interfaces", res(i.name, map[string]any{
				"interface": i.ifname, "name": i.network, "ipAddress": i.ip, "defaultGateway": "false"})).must(t, 201)
		}
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
	for _, n := range ncm {
		n.c.do("POST", n.path()+"/terminate", nil).must(t, 202)
		n.await("networks of "+n.cl.Name+" terminated", "?status=deployed", func(s netStatus) bool { return s.DeployedStatus == lifecycle.StatusTerminated })
		if n.live(gvrNetwork, "protected-private-net") != nil || n.live(gvrProviderNetwork, "emco-private-net") != nil {
			t.Errorf("%s keeps its networks after ncm terminate", n.cl.Name)
		}
	}
}
