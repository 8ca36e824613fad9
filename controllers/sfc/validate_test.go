package sfc

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// check asserts err is nil when want is "", else that its message contains want.
func check(t *testing.T, err error, want string) {
	t.Helper()
	if want == "" {
		assert.NoError(t, err)
		return
	}
	require.Error(t, err)
	assert.Contains(t, err.Error(), want)
}

func TestValidateChain(t *testing.T) {
	for _, tc := range []struct {
		sp   ChainSpec
		want string
	}{
		{ChainSpec{ChainType: "Routing", Namespace: "default"}, ""},
		{ChainSpec{Namespace: "default"}, `spec.chainType must be "Routing", the only chain type, not ""`},
		{ChainSpec{ChainType: "routing", Namespace: "default"}, `not "routing"`},
		{ChainSpec{ChainType: "Routing"}, `spec.namespace "" is not a namespace name`},
		{ChainSpec{ChainType: "Routing", Namespace: "Chains"}, `spec.namespace "Chains" is not a namespace name`},
	} {
		check(t, validateChain(tc.sp), tc.want)
	}
}

func TestValidateLink(t *testing.T) {
	good := LinkSpec{LeftNet: "left-net", RightNet: "dyn1", LinkLabel: "app=slb", App: "slb", WorkloadResource: "slb", ResourceType: "Deployment"}
	for _, tc := range []struct {
		edit func(*LinkSpec)
		want string
	}{
		{func(*LinkSpec) {}, ""},
		{func(s *LinkSpec) { s.LinkLabel = "example.com/sfc-link=ngfw" }, ""},
		{func(s *LinkSpec) { s.ResourceType = "CronJob" }, ""},
		{func(s *LinkSpec) { s.LeftNet = "" }, "spec.leftNet is required"},
		{func(s *LinkSpec) { s.RightNet = "a b" }, `spec.rightNet "a b" is invalid`},
		{func(s *LinkSpec) { s.RightNet = "left-net" }, `spec.leftNet and spec.rightNet are both "left-net"`},
		{func(s *LinkSpec) { s.App = "" }, "spec.app is required"},
		{func(s *LinkSpec) { s.WorkloadResource = "" }, "spec.workloadResource is required"},
		{func(s *LinkSpec) { s.LinkLabel = "" }, `spec.linkLabel "" is not a label key=value`},
		{func(s *LinkSpec) { s.LinkLabel = "app" }, `spec.linkLabel "app" is not a label key=value`},
		{func(s *LinkSpec) { s.LinkLabel = "app=" }, `spec.linkLabel "app=" is not a label key=value`},
		{func(s *LinkSpec) { s.LinkLabel = "-app=x" }, `key "-app" is invalid`},
		{func(s *LinkSpec) { s.LinkLabel = "app=a=b" }, `value "a=b" is invalid`},
		{func(s *LinkSpec) { s.ResourceType = "Service" }, `spec.resourceType "Service" is not a kind of workload whose pods can be labelled: use one of CronJob, DaemonSet, Deployment, Job, Pod, ReplicaSet, ReplicationController, StatefulSet`},
		{func(s *LinkSpec) { s.ResourceType = "deployment" }, `spec.resourceType "deployment" is not a kind of workload`},
	} {
		sp := good
		tc.edit(&sp)
		check(t, validateLink(sp), tc.want)
	}
}

func TestValidateClientSelector(t *testing.T) {
	sel := func(l map[string]string) metav1.LabelSelector { return metav1.LabelSelector{MatchLabels: l} }
	head := map[string]string{"sfc": "head"}
	for _, tc := range []struct {
		sp   ClientSelectorSpec
		want string
	}{
		{ClientSelectorSpec{ChainEnd: "left", PodSelector: sel(head), NamespaceSelector: sel(head)}, ""},
		{ClientSelectorSpec{ChainEnd: "middle", PodSelector: sel(head), NamespaceSelector: sel(head)}, `spec.chainEnd must be "left" or "right", not "middle"`},
		{ClientSelectorSpec{ChainEnd: "right", NamespaceSelector: sel(head)}, "spec.podSelector.matchLabels is required"},
		{ClientSelectorSpec{ChainEnd: "right", PodSelector: sel(head)}, "spec.namespaceSelector.matchLabels is required"},
		{ClientSelectorSpec{ChainEnd: "right", PodSelector: sel(map[string]string{"sfc": "a b"}), NamespaceSelector: sel(head)},
			"spec.podSelector is not a label selector"},
		{ClientSelectorSpec{ChainEnd: "right", PodSelector: sel(head), NamespaceSelector: metav1.LabelSelector{MatchLabels: head,
			MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "k", Operator: "Near"}}}}, "spec.namespaceSelector is not a label selector"},
	} {
		check(t, validateClientSelector(tc.sp), tc.want)
	}
}

func TestValidateProviderNetwork(t *testing.T) {
	for _, tc := range []struct {
		sp   ProviderNetworkSpec
		want string
	}{
		{ProviderNetworkSpec{ChainEnd: "left", ProviderNetwork: "pnet", GatewayIP: "172.30.10.2", Subnet: "172.30.10.0/24"}, ""},
		{ProviderNetworkSpec{ChainEnd: "right", ProviderNetwork: "pnet", GatewayIP: "172.30.10.2"}, ""},
		{ProviderNetworkSpec{ChainEnd: "right", ProviderNetwork: "pnet", GatewayIP: "172.30.10.2", Subnet: "172.30.10.7"}, ""},
		{ProviderNetworkSpec{ChainEnd: "", ProviderNetwork: "pnet", GatewayIP: "172.30.10.2"}, `spec.chainEnd must be "left" or "right", not ""`},
		{ProviderNetworkSpec{ChainEnd: "left", GatewayIP: "172.30.10.2"}, "spec.providerNetwork is required"},
		{ProviderNetworkSpec{ChainEnd: "left", ProviderNetwork: "pnet"}, `spec.gatewayIp "" is not an IPv4 address`},
		{ProviderNetworkSpec{ChainEnd: "left", ProviderNetwork: "pnet", GatewayIP: "fd00::1"}, `spec.gatewayIp "fd00::1" is not an IPv4 address`},
		{ProviderNetworkSpec{ChainEnd: "left", ProviderNetwork: "pnet", GatewayIP: "1.2.3.4", Subnet: "172.30.10.0/33"}, `spec.subnet "172.30.10.0/33" is not an IPv4 address or prefix`},
		{ProviderNetworkSpec{ChainEnd: "left", ProviderNetwork: "pnet", GatewayIP: "1.2.3.4", Subnet: "fd00::/64"}, `spec.subnet "fd00::/64"`},
	} {
		check(t, validateProviderNetwork(tc.sp), tc.want)
	}
}
