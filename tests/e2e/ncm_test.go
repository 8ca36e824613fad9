package e2e

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/temco/temco/internal/core/lifecycle"
	"github.com/temco/temco/internal/dev/devstack"
)

// The kinds ncm puts on a cluster.
var (
	gvrNetwork         = schema.GroupVersionResource{Group: "k8s.plugin.opnfv.org", Version: "v1alpha1", Resource: "networks"}
	gvrProviderNetwork = schema.GroupVersionResource{Group: "k8s.plugin.opnfv.org", Version: "v1alpha1", Resource: "providernetworks"}
	gvrNAD             = schema.GroupVersionResource{Group: "k8s.cni.cncf.io", Version: "v1", Resource: "network-attachment-definitions"}
)

// netStatus is the status of a cluster's network intents, as ncm answers it.
type netStatus struct {
	Name   string `json:"name"`
	States struct {
		Actions []struct {
			State    string `json:"state"`
			Instance string `json:"instance"`
		} `json:"actions"`
	} `json:"states"`
	Status         string         `json:"status"`
	DeployedStatus string         `json:"deployedStatus"`
	ReadyStatus    string         `json:"readyStatus"`
	DeployedCounts map[string]int `json:"deployedCounts"`
	ReadyCounts    map[string]int `json:"readyCounts"`
	RsyncStatus    map[string]int `json:"rsyncStatus"`
	Error          string         `json:"error"`
	Apps           []any          `json:"apps"`
	Cluster        *struct {
		ClusterProvider string        `json:"clusterProvider"`
		Cluster         string        `json:"cluster"`
		Resources       []netResource `json:"resources"`
	} `json:"cluster"`
}

type netResource struct {
	GVK            struct{ Kind string } `json:"GVK"`
	Name           string                `json:"name"`
	DeployedStatus string                `json:"deployedStatus"`
	Attempts       int                   `json:"attempts"`
	Error          string                `json:"error"`
}

func (s netStatus) state() string {
	if n := len(s.States.Actions); n > 0 {
		return s.States.Actions[n-1].State
	}
	return ""
}

// clusterNet drives the network intents of one cluster of the stack.
type clusterNet struct {
	t  *testing.T
	c  *client
	cl *devstack.Cluster
}

func (n clusterNet) path() string { return "/cluster-providers/" + provider + "/clusters/" + n.cl.Name }

func (n clusterNet) status(query string) netStatus {
	n.t.Helper()
	var s netStatus
	n.c.do("GET", n.path()+"/status"+query, nil).must(n.t, 200).json(n.t, &s)
	return s
}

func (n clusterNet) await(what string, query string, cond func(netStatus) bool) netStatus {
	n.t.Helper()
	return awaitValue(n.t, what, 2*time.Minute, func() netStatus { return n.status(query) }, cond)
}

// live reads an object of gvr in namespace default (nil when it does not exist).
func (n clusterNet) live(gvr schema.GroupVersionResource, name string) map[string]any {
	n.t.Helper()
	u, err := dynClient(n.t, n.cl).Resource(gvr).Namespace("default").Get(context.Background(), name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		n.t.Fatalf("read %s %s on %s: %v", gvr.Resource, name, n.cl.Name, err)
	}
	return u.Object
}

func network(subnets ...map[string]any) map[string]any {
	return map[string]any{"cniType": "ovn4nfv", "ipv4Subnets": subnets}
}

func subnet(name, cidr, gateway string) map[string]any {
	s := map[string]any{"name": name, "subnet": cidr}
	if gateway != "" {
		s["gateway"] = gateway
	}
	return s
}

// ncm after EMCO's vFW example: networks and a VLAN provider network on a cluster, checked
// and refused as EMCO does (and overlaps, which temco refuses too), applied with the
// cluster unreachable (Retrying shown, the worker killed and restarted meanwhile), read
// back live with Multus's NetworkAttachmentDefinitions, locked while applied, terminated;
// an apply stopped while retrying.
func TestClusterNetworkIntents(t *testing.T) {
	c := &client{t: t}
	n := clusterNet{t: t, c: c, cl: stack.Clusters[2]}
	nets, pnets := n.path()+"/networks", n.path()+"/provider-networks"

	// Bad input: 400 naming the field; overlaps with another network of the cluster: 409.
	for _, bad := range []struct {
		path string
		spec map[string]any
		want string
	}{
		{nets, map[string]any{"cniType": "calico", "ipv4Subnets": []any{subnet("s", "10.1.0.0/24", "")}}, "cniType"},
		{nets, map[string]any{"cniType": "ovn4nfv"}, "ipv4Subnets or ipv6Subnets"},
		{nets, network(subnet("s", "10.1.0.0/33", "")), "not an IPv4 CIDR"},
		{nets, network(subnet("s", "10.1.0.0/24", "10.1.0.1")), "gateway"},
		{nets, network(map[string]any{"name": "s", "subnet": "10.1.0.0/24", "excludeIps": "10.1.0.2..x"}), "excludeIps"},
		{nets, network(subnet("a", "10.1.0.0/24", ""), subnet("b", "10.1.0.128/25", "")), "overlap"},
		{pnets, map[string]any{"cniType": "ovn4nfv", "ipv4Subnets": []any{subnet("s", "10.2.0.0/24", "")}, "providerNetType": "BRIDGE",
			"vlan": map[string]any{"vlanID": "100", "vlanNodeSelector": "any"}}, "providerNetType"},
		{pnets, map[string]any{"cniType": "ovn4nfv", "ipv4Subnets": []any{subnet("s", "10.2.0.0/24", "")}, "providerNetType": "VLAN",
			"vlan": map[string]any{"vlanID": "4096", "vlanNodeSelector": "any"}}, "vlanID"},
		{pnets, map[string]any{"cniType": "ovn4nfv", "ipv4Subnets": []any{subnet("s", "10.2.0.0/24", "")}, "providerNetType": "VLAN",
			"vlan": map[string]any{"vlanID": "100", "vlanNodeSelector": "specific"}}, "nodeLabelList"},
	} {
		r := c.do("POST", bad.path, res("bad", bad.spec))
		if r.code != 400 || !strings.Contains(string(r.body), bad.want) {
			t.Errorf("POST %v: %d %s, want 400 naming %s", bad.spec, r.code, r.body, bad.want)
		}
	}
	c.do("POST", nets, res("protected-private-net", network(
		map[string]any{"name": "protected-subnet", "subnet": "192.168.10.0/24", "gateway": "192.168.10.1/24", "excludeIps": "192.168.10.2 192.168.10.5..192.168.10.10"}))).must(t, 201)
	c.do("POST", nets, res("unprotected-private-net", network(subnet("unprotected-subnet", "192.168.20.0/24", "192.168.20.1/24")))).must(t, 201)
	pnet := map[string]any{"cniType": "ovn4nfv", "ipv4Subnets": []any{subnet("subnet1", "10.10.20.0/24", "10.10.20.1/24")},
		"providerNetType": "vlan", "vlan": map[string]any{"vlanID": "100", "providerInterfaceName": "eth1",
			"logicalInterfaceName": "eth1.100", "vlanNodeSelector": "specific", "nodeLabelList": []any{"kubernetes.io/hostname=node1"}}}
	c.do("POST", pnets, res("emco-private-net", pnet)).must(t, 201)
	if r := c.do("POST", nets, res("clash", network(subnet("s", "192.168.10.128/25", "")))); r.code != 409 || !strings.Contains(string(r.body), "protected-private-net") {
		t.Errorf("overlapping network: %d %s, want 409 naming the other network", r.code, r.body)
	}
	c.do("POST", n.path()+"/kv-pairs", res("cni", map[string]any{"kv": []any{map[string]any{"CNI-Networking-Multi-VM-CNI-Wrapper": "multus"}}})).must(t, 201)
	if s := n.status(""); s.Name != provider+"+"+n.cl.Name || s.Cluster != nil {
		t.Errorf("status before any apply: %s", pretty(s))
	}

	// Apply while the cluster is unreachable: Retrying shows; the worker dies and comes
	// back meanwhile, then the cluster: the apply completes.
	n.cl.StopAPIServer()
	apiUp := false
	t.Cleanup(func() {
		if !apiUp {
			_ = n.cl.StartAPIServer(context.Background())
		}
	})
	var acc lifecycle.OpAccepted
	c.do("POST", n.path()+"/apply", nil).must(t, 202).json(t, &acc)
	if !strings.HasPrefix(acc.WorkflowID, "cluster-network/"+provider+"/"+n.cl.Name+"/") {
		t.Errorf("apply: %+v", acc)
	}
	n.await("Retrying", "?status=deployed", func(s netStatus) bool {
		return s.Cluster != nil && slices.ContainsFunc(s.Cluster.Resources, func(r netResource) bool {
			return r.DeployedStatus == lifecycle.ResRetrying && r.Attempts >= 2 && r.Error != ""
		})
	})
	stack.Worker.Kill()
	if err := stack.StartWorker(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := n.cl.StartAPIServer(context.Background()); err != nil {
		t.Fatal(err)
	}
	apiUp = true
	s := n.await("Applied", "?status=deployed", func(s netStatus) bool { return s.DeployedStatus == lifecycle.StatusInstantiated })
	if s.state() != lifecycle.StateApplied || s.DeployedCounts[lifecycle.ResApplied] != 6 || s.Cluster == nil || len(s.Cluster.Resources) != 6 || s.Apps != nil {
		t.Errorf("applied status: %s", pretty(s))
	}
	// EMCO's legacy default: status and rsyncStatus.
	if s := n.status(""); s.Status != lifecycle.StatusInstantiated || s.RsyncStatus[lifecycle.ResApplied] != 6 {
		t.Errorf("default status: %s", pretty(s))
	}
	if s := n.status("?status=ready&output=summary"); s.ReadyCounts["Ready"] != 6 || s.Cluster != nil {
		t.Errorf("ready summary: %s", pretty(s))
	}
	want := map[string]any{"cniType": "ovn4nfv", "ipv4Subnets": []any{map[string]any{"name": "protected-subnet", "subnet": "192.168.10.0/24",
		"gateway": "192.168.10.1/24", "excludeIps": "192.168.10.2 192.168.10.5..192.168.10.10"}}}
	obj := n.live(gvrNetwork, "protected-private-net")
	if obj == nil || !jsonEqual(obj["spec"], want) || obj["metadata"].(map[string]any)["labels"].(map[string]any)["net"] != "protected-private-net" {
		t.Errorf("Network protected-private-net on %s: %v", n.cl.Name, obj)
	}
	if n.live(gvrNetwork, "unprotected-private-net") == nil {
		t.Errorf("Network unprotected-private-net missing on %s", n.cl.Name)
	}
	obj = n.live(gvrProviderNetwork, "emco-private-net")
	vlan, _ := obj["spec"].(map[string]any)["vlan"].(map[string]any)
	if obj == nil || vlan["vlanId"] != "100" || vlan["vlanID"] != nil || obj["spec"].(map[string]any)["providerNetType"] != "VLAN" {
		t.Errorf("ProviderNetwork emco-private-net on %s: %v", n.cl.Name, obj)
	}
	for _, name := range []string{"protected-private-net", "unprotected-private-net", "emco-private-net"} {
		nad := n.live(gvrNAD, name)
		if nad == nil || !strings.Contains(nad["spec"].(map[string]any)["config"].(string), `"nfn-network":"`+name+`"`) {
			t.Errorf("NetworkAttachmentDefinition %s on %s: %v", name, n.cl.Name, nad)
		}
	}

	// While applied: apply again does nothing; networks and the cluster are locked.
	var again lifecycle.OpAccepted
	c.do("POST", n.path()+"/apply", nil).must(t, 202).json(t, &again)
	if again.ContextID != acc.ContextID || again.WorkflowID != "" {
		t.Errorf("apply of applied intents: %+v, want nothing started for context %s", again, acc.ContextID)
	}
	for _, r := range []response{
		c.do("PUT", nets+"/unprotected-private-net", res("unprotected-private-net", network(subnet("s", "192.168.30.0/24", "")))),
		c.do("POST", nets, res("more", network(subnet("s", "192.168.40.0/24", "")))),
		c.do("DELETE", pnets+"/emco-private-net", nil),
	} {
		if r.code != 409 || !strings.Contains(string(r.body), "terminate") {
			t.Errorf("change while applied: %d %s, want 409 saying to terminate", r.code, r.body)
		}
	}
	c.do("DELETE", n.path(), nil).must(t, 409)
	c.do("POST", n.path()+"/stop", nil).must(t, 409) // nothing runs

	c.do("POST", n.path()+"/terminate", nil).must(t, 202)
	s = n.await("Terminated", "?status=deployed", func(s netStatus) bool { return s.DeployedStatus == lifecycle.StatusTerminated })
	if s.state() != lifecycle.StateTerminated || s.DeployedCounts[lifecycle.ResDeleted] != 6 {
		t.Errorf("terminated status: %s", pretty(s))
	}
	for _, o := range []struct {
		gvr  schema.GroupVersionResource
		name string
	}{{gvrNetwork, "protected-private-net"}, {gvrNetwork, "unprotected-private-net"}, {gvrProviderNetwork, "emco-private-net"}, {gvrNAD, "emco-private-net"}} {
		if n.live(o.gvr, o.name) != nil {
			t.Errorf("%s %s still on %s after terminate", o.gvr.Resource, o.name, n.cl.Name)
		}
	}
	c.do("POST", n.path()+"/terminate", nil).must(t, 202) // nothing to do, as EMCO
	c.do("PUT", nets+"/unprotected-private-net", res("unprotected-private-net", network(subnet("s", "192.168.30.0/24", "")))).must(t, 200)

	// An apply stopped while the cluster is unreachable ends InstantiateStopped; apply is
	// then refused until a terminate.
	n.cl.StopAPIServer()
	apiUp = false
	c.do("POST", n.path()+"/apply", nil).must(t, 202)
	n.await("Retrying again", "?status=deployed&output=summary", func(s netStatus) bool { return s.DeployedCounts[lifecycle.ResRetrying] > 0 })
	c.do("POST", n.path()+"/stop", nil).must(t, 202)
	n.await("stopped", "?status=deployed&output=summary", func(s netStatus) bool { return s.state() == lifecycle.StateInstantiateStopped })
	if r := c.do("POST", n.path()+"/apply", nil); r.code != 409 {
		t.Errorf("apply after a stopped apply: %d %s, want 409", r.code, r.body)
	}
	if err := n.cl.StartAPIServer(context.Background()); err != nil {
		t.Fatal(err)
	}
	apiUp = true
	c.do("POST", n.path()+"/terminate", nil).must(t, 202)
	n.await("Terminated again", "?status=deployed&output=summary", func(s netStatus) bool { return s.DeployedStatus == lifecycle.StatusTerminated })
	for _, p := range []string{nets + "/protected-private-net", nets + "/unprotected-private-net", pnets + "/emco-private-net", n.path() + "/kv-pairs/cni"} {
		c.do("DELETE", p, nil).must(t, 204)
	}
}

// jsonEqual compares two values as JSON.
func jsonEqual(a, b any) bool {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return string(ja) == string(jb)
}
