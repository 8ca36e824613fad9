package nps

import (
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/temco/temco/controllers/dtc"
)

// NetworkPolicy is the networking.k8s.io/v1 object nps writes, with only the fields it sets.
type NetworkPolicy struct {
	APIVersion string   `json:"apiVersion"`
	Kind       string   `json:"kind"`
	Metadata   Metadata `json:"metadata"`
	Spec       Spec     `json:"spec"`
}

// Metadata names the policy; it has no namespace (see the package comment).
type Metadata struct {
	Name string `json:"name"`
}

// Spec selects the server's pods and admits its clients.
type Spec struct {
	PodSelector Selector      `json:"podSelector"`
	PolicyTypes []string      `json:"policyTypes"`
	Ingress     []IngressRule `json:"ingress"`
}

// Selector selects pods by their labels.
type Selector struct {
	MatchLabels map[string]string `json:"matchLabels"`
}

// IngressRule admits From on Ports.
type IngressRule struct {
	From  []Peer `json:"from"`
	Ports []Port `json:"ports"`
}

// Peer is a client's pods or one of its CIDRs.
type Peer struct {
	PodSelector *Selector `json:"podSelector,omitempty"`
	IPBlock     *IPBlock  `json:"ipBlock,omitempty"`
}

// IPBlock is a range of source addresses.
type IPBlock struct {
	CIDR string `json:"cidr"`
}

// Port is the server's port with its protocol, in one entry.
type Port struct {
	Protocol string `json:"protocol"`
	Port     int    `json:"port"`
}

// Protocols NetworkPolicy ports carry.
var protocols = []string{"TCP", "UDP", "SCTP"}

// Policy builds the NetworkPolicy of an inbound intent of traffic group group; an intent
// without clients has none (nil). Its errors say what is wrong, for a refusal.
func Policy(group string, isi dtc.Inbound) (*NetworkPolicy, error) {
	if len(isi.Clients) == 0 {
		return nil, nil
	}
	name := group + "-" + isi.Name
	if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 {
		return nil, fmt.Errorf("the NetworkPolicy's name %q is not a Kubernetes object name: %s", name, strings.Join(errs, "; "))
	}
	sp := isi.Spec
	if !slices.Contains(protocols, sp.Protocol) {
		return nil, fmt.Errorf("spec.protocol %q: a NetworkPolicy carries %s only", sp.Protocol, strings.Join(protocols, ", "))
	}
	key, value, err := dtc.ParseLabel("spec.appLabel", sp.AppLabel)
	if err != nil {
		return nil, err
	}
	var from []Peer
	for _, c := range isi.Clients {
		if c.Spec.AppLabel != "" { // always set through the API; EMCO skips an empty one
			k, v, err := dtc.ParseLabel("spec.appLabel", c.Spec.AppLabel)
			if err != nil {
				return nil, fmt.Errorf("client %q: %w", c.Name, err)
			}
			from = append(from, Peer{PodSelector: &Selector{MatchLabels: map[string]string{k: v}}})
		}
		if sp.ExternalSupport {
			for _, cidr := range c.Spec.CIDRs {
				from = append(from, Peer{IPBlock: &IPBlock{CIDR: cidr}})
			}
		}
	}
	if len(from) == 0 { // an empty "from" would admit every source
		return nil, fmt.Errorf("no client has an appLabel or, with spec.externalSupport, a CIDR to admit")
	}
	return &NetworkPolicy{
		APIVersion: "networking.k8s.io/v1",
		Kind:       "NetworkPolicy",
		Metadata:   Metadata{Name: name},
		Spec: Spec{
			PodSelector: Selector{MatchLabels: map[string]string{key: value}},
			PolicyTypes: []string{"Ingress"},
			Ingress:     []IngressRule{{From: from, Ports: []Port{{Protocol: sp.Protocol, Port: sp.Port}}}},
		},
	}, nil
}
