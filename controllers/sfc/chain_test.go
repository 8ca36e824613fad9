package sfc

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func link(name, left, right, label string) Named[LinkSpec] {
	return Named[LinkSpec]{Name: name, Spec: LinkSpec{LeftNet: left, RightNet: right, LinkLabel: label,
		App: name, WorkloadResource: name, ResourceType: "Deployment"}}
}

func TestOrderLinks(t *testing.T) {
	slb, ngfw, sdewan := link("slb", "left-net", "dyn1", "app=slb"), link("ngfw", "dyn1", "dyn2", "app=ngfw"), link("sdewan", "dyn2", "right-net", "app=sdewan")
	for _, tc := range []struct {
		name  string
		links []Named[LinkSpec]
		chain string // want, or
		err   string // the refusal's reason
	}{
		{"one link", []Named[LinkSpec]{slb}, "net=left-net,app=slb,net=dyn1", ""},
		{"in any order", []Named[LinkSpec]{sdewan, slb, ngfw}, "net=left-net,app=slb,net=dyn1,app=ngfw,net=dyn2,app=sdewan,net=right-net", ""},
		{"none", nil, "", "it has no links"},
		{"two links from one network", []Named[LinkSpec]{slb, link("other", "left-net", "x", "app=x")}, "",
			`links "slb" and "other" both have left network "left-net"`},
		{"two links into one network", []Named[LinkSpec]{slb, link("other", "x", "dyn1", "app=x")}, "",
			`links "slb" and "other" both have right network "dyn1"`},
		{"one label twice", []Named[LinkSpec]{slb, link("other", "dyn1", "x", "app=slb")}, "",
			`links "slb" and "other" both have link label "app=slb"`},
		{"two chains", []Named[LinkSpec]{slb, link("other", "a", "b", "app=x")}, "",
			"its links form 2 separate chains, starting at networks a, left-net: they must form one"},
		{"a loop", []Named[LinkSpec]{link("p", "a", "b", "x=p"), link("q", "b", "a", "x=q")}, "",
			"its links form a loop: every left network is also some link's right network"},
		{"a loop beside the chain", []Named[LinkSpec]{slb, ngfw, link("p", "a", "b", "x=p"), link("q", "b", "a", "x=q")}, "",
			`links p, q form a loop apart from the chain from network "left-net"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := orderLinks(tc.links)
			if tc.err != "" {
				require.EqualError(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.chain, chainString(got))
		})
	}
}

func selector(name, end, pod, ns string) Named[ClientSelectorSpec] {
	return Named[ClientSelectorSpec]{Name: name, Spec: ClientSelectorSpec{ChainEnd: end,
		PodSelector:       metav1.LabelSelector{MatchLabels: map[string]string{"sfc": pod}},
		NamespaceSelector: metav1.LabelSelector{MatchLabels: map[string]string{"sfc": ns}}}}
}

func network(name, end, gw, subnet string) Named[ProviderNetworkSpec] {
	return Named[ProviderNetworkSpec]{Name: name, Spec: ProviderNetworkSpec{ChainEnd: end, ProviderNetwork: name, GatewayIP: gw, Subnet: subnet}}
}

// Provider networks fill in the client selectors' entries in order, as EMCO pairs them;
// the rest become entries of their own.
func TestRoutingNetworksPairSelectorsWithProviderNetworks(t *testing.T) {
	c := chain{
		Selectors: []Named[ClientSelectorSpec]{selector("l1", EndLeft, "head", "head"), selector("r1", EndRight, "tail", "tail"), selector("l2", EndLeft, "head2", "head2")},
		Networks:  []Named[ProviderNetworkSpec]{network("pl", EndLeft, "172.30.10.2", "172.30.10.0/24"), network("pr1", EndRight, "172.30.20.2", ""), network("pr2", EndRight, "172.30.30.2", "")},
	}
	left, right := c.routingNetworks(EndLeft), c.routingNetworks(EndRight)
	require.Len(t, left, 2)
	assert.Equal(t, "pl", left[0].NetworkName)
	assert.Equal(t, "head", left[0].PodSelector.MatchLabels["sfc"])
	assert.Equal(t, "172.30.10.0/24", left[0].Subnet)
	assert.Equal(t, "", left[1].NetworkName)
	assert.Equal(t, "head2", left[1].NamespaceSelector.MatchLabels["sfc"])
	require.Len(t, right, 2)
	assert.Equal(t, []string{"pr1", "pr2"}, []string{right[0].NetworkName, right[1].NetworkName})
	assert.Equal(t, "tail", right[0].PodSelector.MatchLabels["sfc"])
	assert.Empty(t, right[1].PodSelector.MatchLabels)
}

func TestPlanChainBuildsNodusNetworkChaining(t *testing.T) {
	c := chain{Name: "chain1", Spec: ChainSpec{ChainType: ChainTypeRouting, Namespace: "chains"},
		Links:     []Named[LinkSpec]{link("ngfw", "dyn1", "right-net", "app=ngfw"), link("slb", "left-net", "dyn1", "app=slb")},
		Selectors: []Named[ClientSelectorSpec]{selector("l", EndLeft, "head", "head")},
		Networks:  []Named[ProviderNetworkSpec]{network("pr", EndRight, "172.30.20.2", "172.30.20.0/24")},
	}
	p, err := planChain(c)
	require.NoError(t, err)
	assert.Equal(t, []string{"slb", "ngfw"}, []string{p.Links[0].Name, p.Links[1].Name})
	assert.JSONEq(t, `{"apiVersion":"k8s.plugin.opnfv.org/v1alpha1","kind":"NetworkChaining","metadata":{"name":"chain1"},
		"spec":{"chainType":"Routing","routingSpec":{"namespace":"chains","networkChain":"net=left-net,app=slb,net=dyn1,app=ngfw,net=right-net",
		"left":[{"networkName":"","gatewayIp":"","subnet":"","podSelector":{"matchLabels":{"sfc":"head"}},"namespaceSelector":{"matchLabels":{"sfc":"head"}}}],
		"right":[{"networkName":"pr","gatewayIp":"172.30.20.2","subnet":"172.30.20.0/24","podSelector":{},"namespaceSelector":{}}]}}}`,
		string(p.Manifest))
}

func TestPlanChainNeedsBothEnds(t *testing.T) {
	links := []Named[LinkSpec]{link("slb", "a", "b", "app=slb")}
	for _, tc := range []struct {
		name string
		c    chain
		err  string
	}{
		{"no ends", chain{Links: links}, "it has neither client selectors nor provider networks"},
		{"no left", chain{Links: links, Networks: []Named[ProviderNetworkSpec]{network("p", EndRight, "1.2.3.4", "")}},
			"its left end has neither client selectors nor provider networks"},
		{"no right", chain{Links: links, Selectors: []Named[ClientSelectorSpec]{selector("s", EndLeft, "a", "b")}},
			"its right end has neither client selectors nor provider networks"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := planChain(tc.c)
			require.EqualError(t, err, tc.err)
		})
	}
	c := chain{Links: links, Selectors: []Named[ClientSelectorSpec]{selector("s", EndLeft, "a", "b")},
		Networks: []Named[ProviderNetworkSpec]{network("p", EndRight, "1.2.3.4", "")}}
	p, err := planChain(c)
	require.NoError(t, err)
	var nc networkChaining
	require.NoError(t, json.Unmarshal(p.Manifest, &nc))
	assert.True(t, strings.HasPrefix(nc.Spec.RoutingSpec.NetworkChain, "net=a,"))
}
