package ncm

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/temco/temco/internal/core/appctx"
)

func TestObjectsAsEMCOsNcmMakesThem(t *testing.T) {
	nets := []network{
		{name: "blue", net: &NetworkSpec{CniType: "ovn4nfv", Ipv4Subnets: []Subnet{{Name: "s", Subnet: "10.0.0.0/24", Gateway: "10.0.0.1/24"}}}},
		{name: "ext", provider: &ProviderNetworkSpec{CniType: "ovn4nfv", Ipv4Subnets: []Subnet{{Name: "s", Subnet: "10.1.0.0/24"}},
			ProviderNetType: "VLAN", Vlan: Vlan{VlanID: "100", ProviderInterfaceName: "eth1", LogicalInterfaceName: "eth1.100", VlanNodeSelector: "any"}}},
	}
	for _, multus := range []bool{false, true} {
		objs, err := objects(nets, multus, map[string]string{"emco/deployment-id": "1-network-intents"})
		if err != nil {
			t.Fatal(err)
		}
		var kinds []string
		for _, o := range objs {
			kinds = append(kinds, o.Kind+"/"+o.Name)
		}
		want := "Network/blue ProviderNetwork/ext"
		if multus {
			want = "Network/blue NetworkAttachmentDefinition/blue ProviderNetwork/ext NetworkAttachmentDefinition/ext"
		}
		if got := strings.Join(kinds, " "); got != want {
			t.Errorf("multus %v: objects %s, want %s", multus, got, want)
		}
		net := manifest(t, objs[0])
		if net["apiVersion"] != "k8s.plugin.opnfv.org/v1alpha1" || label(net, "net") != "blue" || label(net, "emco/deployment-id") != "1-network-intents" {
			t.Errorf("Network: %v", net)
		}
		pn := manifest(t, objs[len(objs)/2])
		vlan := pn["spec"].(map[string]any)["vlan"].(map[string]any)
		if vlan["vlanId"] != "100" || vlan["vlanID"] != nil || label(pn, "net") != "" {
			t.Errorf("ProviderNetwork: %v", pn)
		}
		if multus {
			nad := manifest(t, objs[1])
			if nad["apiVersion"] != "k8s.cni.cncf.io/v1" || nad["spec"].(map[string]any)["config"] != `{"cniVersion":"0.3.1","nfn-network":"blue","type":"ovn4nfvk8s-cni"}` {
				t.Errorf("NetworkAttachmentDefinition: %v", nad)
			}
		}
	}
}

func manifest(t *testing.T, o appctx.Object) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(o.Manifest), &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func label(m map[string]any, k string) string {
	l, _ := m["metadata"].(map[string]any)["labels"].(map[string]any)[k].(string)
	return l
}

func TestSubnetsAreCheckedAsEMCODoesAndMore(t *testing.T) {
	ok := Subnet{Name: "s", Subnet: "10.0.0.0/24", Gateway: "10.0.0.1/24", Exclude: "10.0.0.2 10.0.0.5..10.0.0.9"}
	if err := checkSubnets("ovn4nfv", []Subnet{ok}, []Subnet{{Name: "v6", Subnet: "2001:db8::/64"}}); err != nil {
		t.Errorf("valid subnets: %v", err)
	}
	for _, c := range []struct {
		cni    string
		v4, v6 []Subnet
		want   string
	}{
		{"flannel", []Subnet{ok}, nil, "cniType"},
		{"ovn4nfv", nil, nil, "ipv4Subnets or ipv6Subnets"},
		{"ovn4nfv", []Subnet{{Name: "s", Subnet: "10.0.0.0"}}, nil, "not an IPv4 CIDR"},
		{"ovn4nfv", []Subnet{{Name: "s", Subnet: "2001:db8::/64"}}, nil, "not an IPv4 CIDR"},
		{"ovn4nfv", nil, []Subnet{{Name: "s", Subnet: "10.0.0.0/24"}}, "not an IPv6 CIDR"},
		{"ovn4nfv", []Subnet{{Name: "-bad", Subnet: "10.0.0.0/24"}}, nil, "name"},
		{"ovn4nfv", []Subnet{{Name: "s", Subnet: "10.0.0.0/24", Gateway: "10.0.0.1"}}, nil, "gateway"},
		{"ovn4nfv", []Subnet{{Name: "s", Subnet: "10.0.0.0/24", Exclude: "10.0.0.2..10.0.0"}}, nil, "excludeIps"},
		{"ovn4nfv", []Subnet{ok, {Name: "t", Subnet: "10.0.0.128/25"}}, nil, "overlap"},
	} {
		if err := checkSubnets(c.cni, c.v4, c.v6); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s %v %v: %v, want an error naming %s", c.cni, c.v4, c.v6, err, c.want)
		}
	}
}

func TestProviderNetworksAreCheckedAndNormalised(t *testing.T) {
	sp := ProviderNetworkSpec{ProviderNetType: "vlan", Vlan: Vlan{VlanID: "0", VlanNodeSelector: "Specific", NodeLabelList: []string{"kubernetes.io/hostname=n1", "edge"}}}
	if err := checkProvider(&sp); err != nil || sp.ProviderNetType != "VLAN" || sp.Vlan.VlanNodeSelector != "specific" {
		t.Errorf("valid provider network: %v, %+v", err, sp)
	}
	for _, c := range []struct {
		sp   ProviderNetworkSpec
		want string
	}{
		{ProviderNetworkSpec{ProviderNetType: "BRIDGE", Vlan: Vlan{VlanID: "1", VlanNodeSelector: "any"}}, "providerNetType"},
		{ProviderNetworkSpec{ProviderNetType: "DIRECT", Vlan: Vlan{VlanID: "", VlanNodeSelector: "any"}}, "vlanID"},
		{ProviderNetworkSpec{ProviderNetType: "VLAN", Vlan: Vlan{VlanID: "4096", VlanNodeSelector: "any"}}, "vlanID"},
		{ProviderNetworkSpec{ProviderNetType: "VLAN", Vlan: Vlan{VlanID: "1", VlanNodeSelector: "some"}}, "vlanNodeSelector"},
		{ProviderNetworkSpec{ProviderNetType: "VLAN", Vlan: Vlan{VlanID: "1", VlanNodeSelector: "specific"}}, "at least one label"},
		{ProviderNetworkSpec{ProviderNetType: "VLAN", Vlan: Vlan{VlanID: "1", VlanNodeSelector: "any", NodeLabelList: []string{"a b=c"}}}, "nodeLabelList"},
	} {
		if err := checkProvider(&c.sp); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want an error naming %s", c.sp, err, c.want)
		}
	}
}

func TestOverlappingNetworksOfACluster(t *testing.T) {
	a := network{name: "a", net: &NetworkSpec{Ipv4Subnets: []Subnet{{Name: "s", Subnet: "10.0.0.0/16"}}}}
	b := network{name: "b", provider: &ProviderNetworkSpec{Ipv4Subnets: []Subnet{{Name: "t", Subnet: "10.0.3.0/24"}}}}
	c := network{name: "c", net: &NetworkSpec{Ipv4Subnets: []Subnet{{Name: "u", Subnet: "10.1.0.0/24"}}}}
	if got := overlapping([]network{a, c}); got != "" {
		t.Errorf("disjoint networks: %s", got)
	}
	if got := overlapping([]network{a, b, c}); !strings.Contains(got, `"s" (10.0.0.0/16) of network "a" overlaps subnet "t" (10.0.3.0/24) of provider network "b"`) {
		t.Errorf("overlap: %q", got)
	}
}
