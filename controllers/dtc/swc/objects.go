package swc

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/temco/temco/contract"
	"github.com/temco/temco/controllers/dtc"
	"github.com/temco/temco/internal/core/lifecycle"
	"github.com/temco/temco/internal/core/model"
)

// EMCO's SD-EWAN objects and the kv-pairs they are made from.
const (
	APIVersion     = "batch.sdewan.akraino.org/v1alpha1"
	KindService    = "CNFService"
	KindApp        = "SdewanApplication"
	EdgeCNF        = "sdewan" // the inbound intents' edgeCNF that swc serves
	KVCnfPort      = "SdewanCnfPort"
	KVServicePort  = "SdewanServicePort"
	KVAllowedCIDR  = "SdewanServiceAllowedCidr"
	purposeLabel   = "sdewanPurpose"
	purposeDefault = "base"
)

// ports are a server cluster's SD-EWAN settings, as its kv-pairs give them.
type ports struct {
	CNF, Service, CIDR string
}

// serverClusters are the clusters whose kv-pairs the plan needs, sorted.
func serverClusters(g *dtc.TrafficGroup, placed map[string][]string) []string {
	var out []string
	for _, isi := range g.Inbound {
		if isi.Spec.EdgeCNF == EdgeCNF {
			out = append(out, placed[isi.Spec.App]...)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// portsOf reads a cluster's SD-EWAN kv-pairs as EMCO does: each key from the first entry
// holding it, over the cluster's kv-pair resources in order; the keys it lacks are
// returned.
func portsOf(kvs []model.KVSpec) (ports, []string) {
	var p ports
	var missing []string
	for _, k := range []struct {
		key string
		to  *string
	}{{KVCnfPort, &p.CNF}, {KVServicePort, &p.Service}, {KVAllowedCIDR, &p.CIDR}} {
		v, ok := kvValue(kvs, k.key)
		if !ok {
			missing = append(missing, k.key)
		}
		*k.to = v
	}
	return p, missing
}

func kvValue(kvs []model.KVSpec, key string) (string, bool) {
	for _, kv := range kvs {
		for _, pair := range kv.KV {
			if v, ok := pair[key]; ok {
				return fmt.Sprint(v), true
			}
		}
	}
	return "", false
}

// plan makes the edits: the CNFService of each sdewan inbound intent on each cluster of
// its server app, then the SdewanApplication on each cluster of each client app. kvs holds
// the kv-pairs of every server cluster; ns is the logical cloud's namespace.
func plan(g *dtc.TrafficGroup, placed map[string][]string, kvs map[string][]model.KVSpec, ns string) ([]contract.Edit, error) {
	var edits []contract.Edit
	added := map[string]bool{} // cluster kind namespace/name: one object per cluster
	add := func(app, cluster string, obj map[string]any) error {
		meta := obj["metadata"].(map[string]any)
		key := fmt.Sprint(cluster, " ", obj["kind"], " ", meta["namespace"], "/", meta["name"])
		if added[key] {
			return nil
		}
		added[key] = true
		data, err := json.Marshal(obj)
		if err != nil {
			return err
		}
		edits = append(edits, contract.Edit{Op: contract.EditAddResource, App: app, Clusters: []string{cluster}, Data: data})
		return nil
	}
	for _, isi := range g.Inbound {
		sp := isi.Spec
		if sp.EdgeCNF != EdgeCNF {
			continue
		}
		where := fmt.Sprintf("traffic group intent %q, inbound intent %q", g.Name, isi.Name)
		servers, ok := placed[sp.App]
		if !ok {
			return nil, contract.Refuse("%s: server app %q is not an app of the composite app", where, sp.App)
		}
		servers = slices.Sorted(slices.Values(servers))
		var first *ports
		for _, cluster := range servers {
			p, missing := portsOf(kvs[cluster])
			if len(missing) > 0 {
				provider, name := lifecycle.SplitClusterKey(cluster)
				return nil, contract.Refuse("%s (edgeCNF sdewan): cluster %s, where server app %q runs, lacks kv-pair %s: "+
					"add it under /v2/cluster-providers/%s/clusters/%s/kv-pairs", where, cluster, sp.App,
					strings.Join(missing, ", "), provider, name)
			}
			if first == nil {
				first = &p
			}
			if err := add(sp.App, cluster, cnfService(sp.ServiceName, ns, p)); err != nil {
				return nil, err
			}
		}
		for _, cl := range isi.Clients {
			clients, ok := placed[cl.Spec.App]
			if !ok {
				return nil, contract.Refuse("%s, client %q: app %q is not an app of the composite app", where, cl.Name, cl.Spec.App)
			}
			if first == nil { // the server is placed nowhere: no ports to reach it by
				continue
			}
			key, value, err := dtc.ParseLabel("spec.appLabel", sp.AppLabel)
			if err != nil {
				return nil, contract.Refuse("%s: %v", where, err)
			}
			for _, cluster := range slices.Sorted(slices.Values(clients)) {
				if err := add(cl.Spec.App, cluster, sdewanApplication(sp.ServiceName, ns, map[string]string{key: value}, *first)); err != nil {
					return nil, err
				}
			}
		}
	}
	return edits, nil
}

// cnfService is EMCO's CNFService of a server's service: named by the service's cluster
// FQDN, forwarding the CNF's port to the service port for the allowed CIDR.
func cnfService(service, ns string, p ports) map[string]any {
	fqdn := service + "." + ns + ".svc.cluster.local"
	return object(KindService, fqdn, ns, map[string]any{"fullname": fqdn, "port": p.CNF, "dport": p.Service, "cidr": p.CIDR})
}

// sdewanApplication is EMCO's SdewanApplication on a client's cluster: named after the
// server's service, selecting the server's pods by its appLabel.
func sdewanApplication(service, ns string, podLabels map[string]string, p ports) map[string]any {
	return object(KindApp, service, ns, map[string]any{"appNamespace": ns,
		"podSelector": map[string]any{"matchLabels": podLabels}, "servicePort": p.Service, "cnfPort": p.CNF})
}

func object(kind, name, ns string, spec map[string]any) map[string]any {
	return map[string]any{"apiVersion": APIVersion, "kind": kind,
		"metadata": map[string]any{"name": name, "namespace": ns, "labels": map[string]any{purposeLabel: purposeDefault}},
		"spec":     spec}
}
