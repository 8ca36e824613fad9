package ncm

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/temco/temco/internal/core/appctx"
	"github.com/temco/temco/internal/core/model"
	"github.com/temco/temco/internal/core/store"
)

// network is a stored network or provider network of a cluster.
type network struct {
	id, name string
	net      *NetworkSpec         // a network's spec, or
	provider *ProviderNetworkSpec // a provider network's
}

func (n network) what() string {
	if n.provider != nil {
		return "provider network"
	}
	return "network"
}

func (n network) subnets() []Subnet {
	if n.provider != nil {
		return append(append([]Subnet(nil), n.provider.Ipv4Subnets...), n.provider.Ipv6Subnets...)
	}
	return append(append([]Subnet(nil), n.net.Ipv4Subnets...), n.net.Ipv6Subnets...)
}

// load reads a cluster's networks, then its provider networks, each sorted by name.
func load(ctx context.Context, st *store.Store, cluster string) ([]network, error) {
	var out []network
	nets, err := st.List(ctx, store.Query{Parent: cluster, Kind: KindNetwork})
	if err != nil {
		return nil, err
	}
	for _, d := range nets {
		r, err := model.Decode[NetworkSpec](d.Body)
		if err != nil {
			return nil, err
		}
		out = append(out, network{id: d.ID, name: d.Name, net: &r.Spec})
	}
	pnets, err := st.List(ctx, store.Query{Parent: cluster, Kind: KindProviderNetwork})
	if err != nil {
		return nil, err
	}
	for _, d := range pnets {
		r, err := model.Decode[ProviderNetworkSpec](d.Body)
		if err != nil {
			return nil, err
		}
		out = append(out, network{id: d.ID, name: d.Name, provider: &r.Spec})
	}
	return out, nil
}

// overlapping names the first two subnets of different networks that overlap ("" when
// none do). The API refuses them; two creates racing can still store both.
func overlapping(nets []network) string {
	for i, a := range nets {
		for _, b := range nets[i+1:] {
			for _, sa := range a.subnets() {
				for _, sb := range b.subnets() {
					if overlap(sa.Subnet, sb.Subnet) {
						return fmt.Sprintf("subnet %q (%s) of %s %q overlaps subnet %q (%s) of %s %q",
							sa.Name, sa.Subnet, a.what(), a.name, sb.Name, sb.Subnet, b.what(), b.name)
					}
				}
			}
		}
	}
	return ""
}

// multusKey is the cluster kv-pair that asks for a NetworkAttachmentDefinition per
// network (ncm's key; ovnaction reads another).
const multusKey = "CNI-Networking-Multi-VM-CNI-Wrapper"

// multus reads whether the cluster's kv-pairs set multusKey to multus (any case); of
// several kv-pair resources naming it, the last by name wins.
func multus(ctx context.Context, st *store.Store, cluster string) (bool, error) {
	kvs, err := st.List(ctx, store.Query{Parent: cluster, Kind: model.KindClusterKV})
	if err != nil {
		return false, err
	}
	on := false
	for _, d := range kvs {
		r, err := model.Decode[model.KVSpec](d.Body)
		if err != nil {
			return false, err
		}
		for _, kv := range r.Spec.KV {
			if v, ok := kv[multusKey]; ok {
				on = strings.EqualFold(fmt.Sprint(v), "multus")
				break
			}
		}
	}
	return on, nil
}

// Object kinds ncm produces.
const (
	apiNodus = "k8s.plugin.opnfv.org/v1alpha1"
	apiNAD   = "k8s.cni.cncf.io/v1"
)

// objects renders what EMCO's ncm puts on the cluster, in its order: per network its
// Network (label net=<name>) and, with Multus, a NetworkAttachmentDefinition of the same
// name; then per provider network its ProviderNetwork (the VLAN ID as vlanId) and NAD.
// labels go on every object.
func objects(nets []network, withNAD bool, labels map[string]string) ([]appctx.Object, error) {
	var out []appctx.Object
	add := func(o map[string]any) error {
		u := &unstructured.Unstructured{Object: o}
		obj, err := appctx.NewObject(u)
		out = append(out, obj)
		return err
	}
	meta := func(name string, extra map[string]string) map[string]any {
		l := map[string]any{}
		for k, v := range extra {
			l[k] = v
		}
		for k, v := range labels {
			l[k] = v
		}
		return map[string]any{"name": name, "labels": l}
	}
	for _, n := range nets {
		var o map[string]any
		if n.provider != nil {
			o = map[string]any{"apiVersion": apiNodus, "kind": CRProviderNetwork, "metadata": meta(n.name, nil), "spec": providerCRSpec(*n.provider)}
		} else {
			o = map[string]any{"apiVersion": apiNodus, "kind": CRNetwork, "metadata": meta(n.name, map[string]string{"net": n.name}),
				"spec": toMap(*n.net)}
		}
		if err := add(o); err != nil {
			return nil, err
		}
		if withNAD {
			config, _ := json.Marshal(map[string]string{"cniVersion": "0.3.1", "type": "ovn4nfvk8s-cni", "nfn-network": n.name})
			if err := add(map[string]any{"apiVersion": apiNAD, "kind": "NetworkAttachmentDefinition", "metadata": meta(n.name, nil),
				"spec": map[string]any{"config": string(config)}}); err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}

// providerCRSpec is a provider network's spec as the CR spells it: vlanId, not vlanID.
func providerCRSpec(sp ProviderNetworkSpec) map[string]any {
	m := toMap(sp)
	vlan := m["vlan"].(map[string]any)
	vlan["vlanId"] = vlan["vlanID"]
	delete(vlan, "vlanID")
	if vlan["nodeLabelList"] == nil {
		vlan["nodeLabelList"] = []any{}
	}
	return m
}

// toMap turns a spec into the JSON object it marshals to.
func toMap(v any) map[string]any {
	b, _ := json.Marshal(v)
	var m map[string]any
	_ = json.Unmarshal(b, &m)
	return m
}
