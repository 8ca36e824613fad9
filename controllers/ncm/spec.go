// Package ncm is EMCO's network configuration manager: the virtual networks and provider
// networks of a cluster (resources under the cluster), and the objects their apply puts on
// it (Nodus k8s.plugin.opnfv.org Network and ProviderNetwork, and with Multus a
// NetworkAttachmentDefinition per network). Apply, terminate and stop are the lifecycle
// operations of the cluster's network intents (lifecycle.Target.Cluster), run by the same
// workflows as a DIG's; ovnaction reads which networks a cluster has through Networks.
package ncm

import (
	"context"

	"github.com/temco/temco/internal/core/digstate"
	"github.com/temco/temco/internal/core/lifecycle"
	"github.com/temco/temco/internal/core/store"
)

// Stored kinds.
const (
	KindNetwork         = "ncm-network"
	KindProviderNetwork = "ncm-provider-network"
)

// Routes below the cluster, with EMCO's path parameter names.
const (
	networksPath         = "/networks"
	providerNetworksPath = "/provider-networks"
)

// Subnet is an IPv4 or IPv6 subnet of a network (EMCO's Ipv4Subnet/Ipv6Subnet).
type Subnet struct {
	Subnet  string `json:"subnet"` // CIDR, e.g. 172.16.33.0/24
	Name    string `json:"name"`
	Gateway string `json:"gateway,omitempty"`    // CIDR notation, e.g. 172.16.33.1/24
	Exclude string `json:"excludeIps,omitempty"` // "172.16.33.2 172.16.33.5..172.16.33.10"
}

// NetworkSpec is a virtual network's spec.
type NetworkSpec struct {
	CniType     string   `json:"cniType"`
	Ipv4Subnets []Subnet `json:"ipv4Subnets,omitempty"`
	Ipv6Subnets []Subnet `json:"ipv6Subnets,omitempty"`
}

// Vlan is a provider network's VLAN. REST says vlanID; the CR says vlanId.
type Vlan struct {
	VlanID                string   `json:"vlanID"`
	ProviderInterfaceName string   `json:"providerInterfaceName"`
	LogicalInterfaceName  string   `json:"logicalInterfaceName"`
	VlanNodeSelector      string   `json:"vlanNodeSelector"`
	NodeLabelList         []string `json:"nodeLabelList"`
}

// ProviderNetworkSpec is a provider network's spec.
type ProviderNetworkSpec struct {
	CniType         string   `json:"cniType"`
	Ipv4Subnets     []Subnet `json:"ipv4Subnets,omitempty"`
	Ipv6Subnets     []Subnet `json:"ipv6Subnets,omitempty"`
	ProviderNetType string   `json:"providerNetType"`
	Vlan            Vlan     `json:"vlan"`
}

// Network kinds as the cluster's objects name them.
const (
	CRNetwork         = "Network"
	CRProviderNetwork = "ProviderNetwork"
)

// ClusterNetworks is what a cluster offers workloads: its networks by name (with their
// kind, CRNetwork or CRProviderNetwork), and whether they are applied on it now.
type ClusterNetworks struct {
	Applied  bool
	State    string // the network intents' lifecycle state ("Created" when never applied)
	Networks map[string]string
}

// Networks reads the networks and provider networks of a cluster ("provider+cluster").
func Networks(ctx context.Context, st *store.Store, clusterKey string) (ClusterNetworks, error) {
	id := lifecycle.ClusterID(clusterKey)
	_, info, err := digstate.Load(ctx, st, id)
	if err != nil {
		return ClusterNetworks{}, err
	}
	out := ClusterNetworks{State: info.Current(), Networks: map[string]string{}}
	if out.State == "" {
		out.State = lifecycle.StateCreated
	}
	out.Applied = out.State == lifecycle.StateApplied
	nets, err := load(ctx, st, id)
	if err != nil {
		return ClusterNetworks{}, err
	}
	for _, n := range nets {
		out.Networks[n.name] = CRNetwork
		if n.provider != nil {
			out.Networks[n.name] = CRProviderNetwork
		}
	}
	return out, nil
}
