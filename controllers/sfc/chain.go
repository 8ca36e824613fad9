package sfc

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/temco/temco/controllers"
)

// chain is a network chain of the DIG with its records, each list in creation order.
type chain struct {
	Name      string
	Spec      ChainSpec
	Links     []Named[LinkSpec]
	Selectors []Named[ClientSelectorSpec]
	Networks  []Named[ProviderNetworkSpec]
}

// Named is a stored record's name and spec.
type Named[S any] = controllers.Named[S]

// orderLinks puts the links in chain order, leftmost first: each link's right network is
// the next one's left network, every network and label appears once per side, and every
// link is on the one path from the leftmost network.
func orderLinks(links []Named[LinkSpec]) ([]Named[LinkSpec], error) {
	if len(links) == 0 {
		return nil, fmt.Errorf("it has no links")
	}
	fromLeft := map[string]Named[LinkSpec]{}
	intoRight, withLabel := map[string]string{}, map[string]string{}
	for _, l := range links {
		if other, ok := fromLeft[l.Spec.LeftNet]; ok {
			return nil, fmt.Errorf("links %q and %q both have left network %q", other.Name, l.Name, l.Spec.LeftNet)
		}
		if other, ok := intoRight[l.Spec.RightNet]; ok {
			return nil, fmt.Errorf("links %q and %q both have right network %q", other, l.Name, l.Spec.RightNet)
		}
		if other, ok := withLabel[l.Spec.LinkLabel]; ok {
			return nil, fmt.Errorf("links %q and %q both have link label %q", other, l.Name, l.Spec.LinkLabel)
		}
		fromLeft[l.Spec.LeftNet], intoRight[l.Spec.RightNet], withLabel[l.Spec.LinkLabel] = l, l.Name, l.Name
	}
	var starts []string // left networks no link leads to
	for _, net := range slices.Sorted(maps.Keys(fromLeft)) {
		if _, ok := intoRight[net]; !ok {
			starts = append(starts, net)
		}
	}
	switch {
	case len(starts) == 0:
		return nil, fmt.Errorf("its links form a loop: every left network is also some link's right network")
	case len(starts) > 1:
		return nil, fmt.Errorf("its links form %d separate chains, starting at networks %s: they must form one",
			len(starts), strings.Join(starts, ", "))
	}
	out := make([]Named[LinkSpec], 0, len(links))
	for l, ok := fromLeft[starts[0]]; ok; l, ok = fromLeft[l.Spec.RightNet] {
		out = append(out, l)
	}
	if len(out) < len(links) { // the rest go round in a loop of their own
		var off []string
		for _, l := range links {
			if !slices.ContainsFunc(out, func(o Named[LinkSpec]) bool { return o.Name == l.Name }) {
				off = append(off, l.Name)
			}
		}
		return nil, fmt.Errorf("links %s form a loop apart from the chain from network %q", strings.Join(off, ", "), starts[0])
	}
	return out, nil
}

// chainString is Nodus's networkChain: "net=A,<label>,net=B,<label>,net=C".
func chainString(ordered []Named[LinkSpec]) string {
	var b strings.Builder
	b.WriteString("net=" + ordered[0].Spec.LeftNet)
	for _, l := range ordered {
		b.WriteString("," + l.Spec.LinkLabel + ",net=" + l.Spec.RightNet)
	}
	return b.String()
}

// routingNetwork is one entry of a NetworkChaining's left or right list.
type routingNetwork struct {
	NetworkName       string               `json:"networkName"`
	GatewayIP         string               `json:"gatewayIp"`
	Subnet            string               `json:"subnet"`
	PodSelector       metav1.LabelSelector `json:"podSelector"`
	NamespaceSelector metav1.LabelSelector `json:"namespaceSelector"`
}

// routingNetworks is one end's list, made as EMCO makes it: an entry per client selector,
// the end's provider networks filling in the first entries' network and the rest making
// entries of their own.
func (c chain) routingNetworks(end string) []routingNetwork {
	var out []routingNetwork
	for _, s := range c.Selectors {
		if s.Spec.ChainEnd == end {
			out = append(out, routingNetwork{PodSelector: s.Spec.PodSelector, NamespaceSelector: s.Spec.NamespaceSelector})
		}
	}
	i := 0
	for _, n := range c.Networks {
		if n.Spec.ChainEnd != end {
			continue
		}
		if i == len(out) {
			out = append(out, routingNetwork{})
		}
		out[i].NetworkName, out[i].GatewayIP, out[i].Subnet = n.Spec.ProviderNetwork, n.Spec.GatewayIP, n.Spec.Subnet
		i++
	}
	return out
}

// NetworkChaining objects, as Nodus defines them (icn-nodus
// pkg/apis/k8s/v1alpha1/networkchaining_types.go, the version EMCO builds with): the ends'
// lists are "left" and "right".
const (
	chainingAPIVersion = "k8s.plugin.opnfv.org/v1alpha1"
	chainingKind       = "NetworkChaining"
)

type networkChaining struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name string `json:"name"`
	} `json:"metadata"`
	Spec struct {
		ChainType   string `json:"chainType"`
		RoutingSpec struct {
			Namespace    string           `json:"namespace"`
			NetworkChain string           `json:"networkChain"`
			Left         []routingNetwork `json:"left"`
			Right        []routingNetwork `json:"right"`
		} `json:"routingSpec"`
	} `json:"spec"`
}

// plan is what one chain becomes: its NetworkChaining and the links in order.
type plan struct {
	Links    []Named[LinkSpec]
	Manifest json.RawMessage
}

// planChain checks a chain and builds its NetworkChaining.
func planChain(c chain) (*plan, error) {
	left, right := c.routingNetworks(EndLeft), c.routingNetworks(EndRight)
	switch {
	case len(left) == 0 && len(right) == 0:
		return nil, fmt.Errorf("it has neither client selectors nor provider networks")
	case len(left) == 0:
		return nil, fmt.Errorf("its left end has neither client selectors nor provider networks")
	case len(right) == 0:
		return nil, fmt.Errorf("its right end has neither client selectors nor provider networks")
	}
	links, err := orderLinks(c.Links)
	if err != nil {
		return nil, err
	}
	nc := networkChaining{APIVersion: chainingAPIVersion, Kind: chainingKind}
	nc.Metadata.Name = c.Name
	nc.Spec.ChainType = c.Spec.ChainType
	rs := &nc.Spec.RoutingSpec
	rs.Namespace, rs.NetworkChain, rs.Left, rs.Right = c.Spec.Namespace, chainString(links), left, right
	manifest, err := json.Marshal(nc)
	if err != nil {
		return nil, err
	}
	return &plan{Links: links, Manifest: manifest}, nil
}
