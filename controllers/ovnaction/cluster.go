package ovnaction

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/temco/temco/contract"
	"github.com/temco/temco/internal/core/lifecycle"
	"github.com/temco/temco/internal/core/model"
	"github.com/temco/temco/internal/core/store"
)

// The cluster kv-pairs that say whether Multus wraps the CNI (EMCO's keys for ovnaction;
// ncm reads another).
const (
	kvNodusForAll = "CNI-Networking-Nodus-CNI-For-all-interfaces"
	kvCNIWrapper  = "CNI-Networking-Multi-CNI-Wrapper"
	wrapperMultus = "multus"
)

// multusOn reads (once per run) whether a cluster's pods reach Nodus through Multus.
func (p *planner) multusOn(ctx context.Context, cluster string) (bool, error) {
	if on, ok := p.multus[cluster]; ok {
		return on, nil
	}
	docs, err := p.ctrl.store.List(ctx, store.Query{Parent: lifecycle.ClusterID(cluster), Kind: model.KindClusterKV})
	if err != nil {
		return false, fmt.Errorf("kv-pairs of cluster %s: %w", cluster, err)
	}
	kvs := make([]model.KVSpec, len(docs))
	for i, d := range docs {
		r, err := model.Decode[model.KVSpec](d.Body)
		if err != nil {
			return false, fmt.Errorf("%s: %w", d.ID, err)
		}
		kvs[i] = r.Spec
	}
	p.multus[cluster] = multusFrom(kvs)
	return p.multus[cluster], nil
}

// multusFrom is EMCO's choice: no Multus when Nodus serves every interface
// (kvNodusForAll parses as true), else Multus when kvCNIWrapper is multus (any case),
// which it is by default. Each kv-pair resource is read up to its first entry holding
// either key (kvNodusForAll first), later resources overriding earlier ones.
func multusFrom(kvs []model.KVSpec) bool {
	forAll, wrapper := "false", wrapperMultus
	for _, kv := range kvs {
		for _, pair := range kv.KV {
			if v, ok := pair[kvNodusForAll]; ok {
				forAll = fmt.Sprint(v)
				break
			}
			if v, ok := pair[kvCNIWrapper]; ok {
				wrapper = fmt.Sprint(v)
				break
			}
		}
	}
	if nodus, _ := strconv.ParseBool(forAll); nodus {
		return false
	}
	return strings.EqualFold(wrapper, wrapperMultus)
}

// checkNetworks refuses interfaces whose network the cluster does not have, or has but
// has not applied (ncm): the pods would not start there.
func (p *planner) checkNetworks(ctx context.Context, where string, ifs []namedInterface, cluster string) error {
	nets, ok := p.nets[cluster]
	if !ok {
		var err error
		if nets, err = p.ctrl.networks(ctx, cluster); err != nil {
			return fmt.Errorf("networks of cluster %s: %w", cluster, err)
		}
		p.nets[cluster] = nets
	}
	for _, i := range ifs {
		network := i.spec.Network
		if _, ok := nets.Networks[network]; !ok {
			return contract.Refuse("%s, interface %q: network %q is not a network or provider network of cluster %s (it has %s)",
				where, i.name, network, cluster, networkList(nets.Networks))
		}
		if !nets.Applied {
			provider, name := lifecycle.SplitClusterKey(cluster)
			return contract.Refuse("%s, interface %q: the network intents of cluster %s, which has network %q, are %s, not applied: "+
				"apply them first (POST /v2/cluster-providers/%s/clusters/%s/apply)", where, i.name, cluster, network, nets.State, provider, name)
		}
	}
	return nil
}

func networkList(nets map[string]string) string {
	if len(nets) == 0 {
		return "none"
	}
	return strings.Join(slices.Sorted(maps.Keys(nets)), ", ")
}
