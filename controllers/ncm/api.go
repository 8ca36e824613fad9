package ncm

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/temco/temco/api"
	"github.com/temco/temco/internal/core/digstate"
	"github.com/temco/temco/internal/core/lifecycle"
	"github.com/temco/temco/internal/core/model"
	"github.com/temco/temco/internal/core/store"
)

// Kinds are ncm's REST resources below a cluster, with EMCO's paths and parameter names.
var Kinds = []api.ResourceKind{
	api.ClusterKind(api.KindDef[NetworkSpec]{Name: KindNetwork, Path: networksPath, Param: "network", Check: checkNetwork}, modifiable),
	api.ClusterKind(api.KindDef[ProviderNetworkSpec]{Name: KindProviderNetwork, Path: providerNetworksPath, Param: "providerNetwork",
		Check: checkProviderNetwork}, modifiable),
}

// modifiable refuses a change of a cluster's networks while they may be on the cluster
// (EMCO: "terminate before creating"); the 409 says what to do.
func modifiable(ctx context.Context, st *store.Store, cluster string) error {
	_, info, err := digstate.Load(ctx, st, cluster)
	if err != nil {
		return err
	}
	provider, name := clusterOf(cluster)
	t := lifecycle.Target{ClusterNetwork: lifecycle.ClusterKey(provider, name)}
	if _, err := lifecycle.ClusterNetworks.Machine.Start(t.String(), lifecycle.OpModify, info.Current()); err != nil {
		return api.Conflict("the network intents of cluster %s+%s are %s: terminate them (POST %s/terminate) before changing its networks",
			provider, name, info.Current(), cluster)
	}
	return nil
}

// clusterOf reads provider and cluster from a cluster's store id.
func clusterOf(id string) (provider, cluster string) {
	parts := strings.Split(strings.Trim(id, "/"), "/") // cluster-providers/p/clusters/c
	if len(parts) < 4 {
		return "", ""
	}
	return parts[1], parts[3]
}

const cniOVN4NFV = "ovn4nfv" // the only CNI EMCO's ncm knows

func checkNetwork(ctx context.Context, r *api.Request[NetworkSpec]) error {
	res := r.Resource()
	if err := checkSubnets(res.Spec.CniType, res.Spec.Ipv4Subnets, res.Spec.Ipv6Subnets); err != nil {
		return api.BadRequest("network %q: %v", res.Metadata.Name, err)
	}
	return disjoint(ctx, r.Store(), r.Parent(), r.ID(), res.Spec.Ipv4Subnets, res.Spec.Ipv6Subnets)
}

func checkProviderNetwork(ctx context.Context, r *api.Request[ProviderNetworkSpec]) error {
	res := r.Resource()
	sp := &res.Spec
	err := checkSubnets(sp.CniType, sp.Ipv4Subnets, sp.Ipv6Subnets)
	if err == nil {
		err = checkProvider(sp)
	}
	if err != nil {
		return api.BadRequest("provider network %q: %v", res.Metadata.Name, err)
	}
	return disjoint(ctx, r.Store(), r.Parent(), r.ID(), sp.Ipv4Subnets, sp.Ipv6Subnets)
}

// checkSubnets validates a network's CNI type and subnets as EMCO does, and also the IPv6
// subnets (which EMCO passes unchecked) and overlaps among the network's own subnets.
func checkSubnets(cni string, v4, v6 []Subnet) error {
	if cni != cniOVN4NFV {
		return fmt.Errorf("spec.cniType %q is not supported: use %q", cni, cniOVN4NFV)
	}
	if len(v4) == 0 && len(v6) == 0 {
		return fmt.Errorf("spec needs ipv4Subnets or ipv6Subnets")
	}
	for i, s := range v4 {
		if err := checkSubnet(fmt.Sprintf("spec.ipv4Subnets[%d]", i), s, true); err != nil {
			return err
		}
	}
	for i, s := range v6 {
		if err := checkSubnet(fmt.Sprintf("spec.ipv6Subnets[%d]", i), s, false); err != nil {
			return err
		}
	}
	all := append(append([]Subnet(nil), v4...), v6...)
	for i := range all {
		for j := i + 1; j < len(all); j++ {
			if overlap(all[i].Subnet, all[j].Subnet) {
				return fmt.Errorf("subnets %q (%s) and %q (%s) overlap", all[i].Name, all[i].Subnet, all[j].Name, all[j].Subnet)
			}
		}
	}
	return nil
}

func checkSubnet(where string, s Subnet, v4 bool) error {
	family := "IPv6"
	if v4 {
		family = "IPv4"
	}
	if err := model.ValidateName(where+".name", s.Name); err != nil {
		return err
	}
	if !isCIDR(s.Subnet, v4) {
		return fmt.Errorf("%s.subnet %q is not an %s CIDR (e.g. %s)", where, s.Subnet, family, example(v4, "0/24", ":/64"))
	}
	if s.Gateway != "" && !isCIDR(s.Gateway, v4) {
		return fmt.Errorf("%s.gateway %q is not an %s address in CIDR notation (e.g. %s)", where, s.Gateway, family, example(v4, "1/24", ":1/64"))
	}
	for _, f := range strings.Fields(s.Exclude) {
		for _, ip := range strings.SplitN(f, "..", 2) {
			if a, err := netip.ParseAddr(ip); err != nil || a.Is4() != v4 {
				return fmt.Errorf("%s.excludeIps %q: %q is not an %s address (a list of addresses and ranges a..b)", where, s.Exclude, ip, family)
			}
		}
	}
	return nil
}

func example(v4 bool, a, b string) string {
	if v4 {
		return "172.16.33." + a
	}
	return "2001:db8:1:" + b
}

func isCIDR(s string, v4 bool) bool {
	ip, _, err := net.ParseCIDR(s)
	return err == nil && (ip.To4() != nil) == v4
}

// overlap reports whether two CIDRs share an address (false when either is invalid).
func overlap(a, b string) bool {
	pa, err1 := netip.ParsePrefix(a)
	pb, err2 := netip.ParsePrefix(b)
	return err1 == nil && err2 == nil && pa.Overlaps(pb)
}

// checkProvider validates a provider network's type and VLAN as EMCO does; the type is
// stored in upper case, as Nodus compares it.
func checkProvider(sp *ProviderNetworkSpec) error {
	switch t := strings.ToUpper(sp.ProviderNetType); t {
	case "VLAN", "DIRECT":
		sp.ProviderNetType = t
	default:
		return fmt.Errorf("spec.providerNetType %q is invalid: use VLAN or DIRECT", sp.ProviderNetType)
	}
	v := &sp.Vlan
	if n, err := strconv.Atoi(v.VlanID); err != nil || n < 0 || n > 4095 {
		return fmt.Errorf("spec.vlan.vlanID %q is not a VLAN ID (0 to 4095, as a string)", v.VlanID)
	}
	switch sel := strings.ToLower(v.VlanNodeSelector); sel {
	case "any", "specific":
		v.VlanNodeSelector = sel
	default:
		return fmt.Errorf("spec.vlan.vlanNodeSelector %q is invalid: use any or specific", v.VlanNodeSelector)
	}
	for _, l := range v.NodeLabelList {
		if err := checkLabel(l); err != nil {
			return fmt.Errorf("spec.vlan.nodeLabelList: %q is not a node label (key=value): %v", l, err)
		}
	}
	if v.VlanNodeSelector == "specific" && len(v.NodeLabelList) == 0 {
		return fmt.Errorf(`spec.vlan.nodeLabelList needs at least one label when vlanNodeSelector is "specific"`)
	}
	return nil
}

// checkLabel accepts EMCO's label forms: [prefix/]name=value, or a value alone.
func checkLabel(l string) error {
	k, v, ok := strings.Cut(l, "=")
	if !ok {
		k, v = "", l
	}
	var errs []string
	if ok {
		errs = validation.IsQualifiedName(k)
	}
	errs = append(errs, validation.IsValidLabelValue(v)...)
	if len(errs) > 0 {
		return fmt.Errorf("%s", strings.Join(errs, "; "))
	}
	return nil
}

// disjoint refuses subnets that overlap another network's or provider network's of the
// same cluster (temco's check: Nodus would route them ambiguously; EMCO accepts them).
func disjoint(ctx context.Context, st *store.Store, cluster, self string, v4, v6 []Subnet) error {
	others, err := load(ctx, st, cluster)
	if err != nil {
		return err
	}
	for _, o := range others {
		if o.id == self {
			continue
		}
		for _, s := range append(append([]Subnet(nil), v4...), v6...) {
			for _, os := range o.subnets() {
				if overlap(s.Subnet, os.Subnet) {
					return api.Conflict("subnet %q (%s) overlaps subnet %q (%s) of %s %q on this cluster",
						s.Name, s.Subnet, os.Name, os.Subnet, o.what(), o.name)
				}
			}
		}
	}
	return nil
}
