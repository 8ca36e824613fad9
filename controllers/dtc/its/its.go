// Package its is EMCO's Istio traffic sub-controller of dtc: for every inbound intent of
// the traffic group that says serviceMesh "istio" it adds the Istio objects that let the
// server's clients reach it across clusters through the clusters' ingress gateways, expose
// it outside the mesh, and limit what clients may ask of it:
//   - on each client cluster the server is not on: ServiceEntries <svc>-se-client0 (hosts
//     <svc>.<namespace>.<provider>.<cluster> of the server clusters) and <svc>-se-client1
//     (host <svc>), with a VIP from 240.0.0.2 upward, and DestinationRules
//     <svc>-dr-client<i> and <svc>-dr-client-svcname (ISTIO_MUTUAL), in the logical
//     cloud's namespace, to the first client app there;
//   - on each server cluster some client is away from: Gateway <svc>-gateway (TLS
//     AUTO_PASSTHROUGH on kv-pair istioIngressGatewayInternalPort), ServiceEntry
//     <svc>-se-server and DestinationRule <svc>-se-server-dr, in istio-system;
//   - with externalSupport and sidecarProxy yes, on each server cluster: Gateway
//     <svc>-ext-<mutual|simple|http>-gateway and VirtualService <svc>-vs-<that gateway> for
//     spec.externalName, and for MUTUAL and SIMPLE TLS Secret <svc>-credential in
//     istio-system with the certificates and the sealed private key;
//   - with access points: AuthorizationPolicy <server app> on each server cluster.
//
// Cluster kv-pairs say where each ingress gateway is (istioIngressGatewayAddress, ...Port,
// ...InternalPort, ...HttpsPort, ...HttpPort). VIPs are handed out in a fixed order
// (inbound intents and clients in creation order, client clusters by name), so a retry
// or an update that adds intents keeps the ones given before; removing one renumbers
// those after it, as in EMCO.
//
// Where temco departs from EMCO, deliberately:
//   - Client ServiceEntries list the ingress gateway of every server cluster as endpoints;
//     EMCO's take the gateway of the server cluster at the client's index, so a second
//     client gets the wrong one or none (EMCO's bug).
//   - An inbound intent whose serviceMesh is not "istio" is skipped and the others get
//     their objects; EMCO silently adds nothing for the whole traffic group.
//   - A kv-pair an object needs that is missing or not a port, an external service
//     without externalName, tlsType or certificates, or certificates that are not base64
//     refuse the operation with the reason before anything is applied; EMCO reports
//     success without the objects. Kv-pairs no object needs are not asked for (EMCO
//     wants all three gateway keys on every server cluster).
//   - Access points become one AuthorizationPolicy per server app and cluster, a rule per
//     access point, selecting the server's pods by its appLabel. EMCO writes one object
//     per access point, all with the same name (the last one wins), lists the hosts again
//     for every access point, and selects no pods: an ALLOW policy for the whole
//     namespace, which denies every other workload there all traffic.
//   - The plain HTTP external gateway has no tls block (EMCO names a credential there),
//     and the SIMPLE TLS Secret no empty ca.crt.
package its

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/temco/temco/contract"
	"github.com/temco/temco/controllers"
	"github.com/temco/temco/controllers/dtc"
	"github.com/temco/temco/internal/core/lifecycle"
	"github.com/temco/temco/internal/core/model"
	"github.com/temco/temco/internal/core/store"
)

// Controller is its as built into temco, registered in /v2/dtc-controllers as EMCO's
// files register it.
var Controller = controllers.Builtin{
	Name:   "its",
	Type:   contract.TypeAction,
	Hosts:  []string{"its"},
	Parent: "dtc",
	New: func(d controllers.Deps) contract.Controller {
		return &controller{store: d.Store, privateKey: func(ctx context.Context, isi dtc.Inbound) ([]byte, error) {
			return dtc.PrivateKey(ctx, d.Store, d.Keys, isi)
		}}
	},
}

type controller struct {
	store controllers.Docs
	// privateKey opens an inbound intent's sealed private key.
	privateKey func(ctx context.Context, isi dtc.Inbound) ([]byte, error)
}

// Run reads the traffic group, the clusters' kv-pairs and the keys, plans every object
// and records them at once; a refusal records nothing. The objects go with the
// deployment on terminate.
func (c *controller) Run(ctx context.Context, v contract.Context) error {
	in := v.Input()
	if in.Operation == contract.OpTerminate {
		return nil
	}
	g, err := dtc.Load(ctx, c.store, in)
	if err != nil {
		return err
	}
	w, err := c.world(ctx, v, g)
	if err != nil {
		return err
	}
	objs, err := plan(w, g)
	if err != nil || len(objs) == 0 {
		return err
	}
	edits := make([]contract.Edit, len(objs))
	for i, o := range objs {
		data, err := json.Marshal(o.obj)
		if err != nil {
			return err
		}
		edits[i] = contract.Edit{Op: contract.EditAddResource, App: o.app, Clusters: []string{o.cluster}, Data: data}
	}
	return v.Edit(edits...)
}

// world reads what planning needs: the apps' clusters, the namespace, the Istio kv-pairs
// of every cluster and the private keys of the external services with TLS.
func (c *controller) world(ctx context.Context, v contract.Context, g *dtc.TrafficGroup) (world, error) {
	w := world{clusters: map[string][]string{}, kv: map[string]map[string]string{}, keys: map[string][]byte{}}
	apps, err := v.Apps(ctx)
	if err != nil {
		return w, err
	}
	for _, a := range apps {
		w.clusters[a.Name] = slices.Sorted(slices.Values(a.Clusters))
		for _, cl := range a.Clusters {
			if _, ok := w.kv[cl]; ok {
				continue
			}
			if w.kv[cl], err = istioKV(ctx, c.store, cl); err != nil {
				return w, err
			}
		}
	}
	if w.namespace, err = namespace(ctx, c.store, v.Input()); err != nil {
		return w, err
	}
	for _, isi := range g.Inbound {
		if isi.Spec.ServiceMesh == "istio" && isi.Spec.External.ExternalCerts.ServicePrivateKey == dtc.KeyMask {
			if w.keys[isi.Name], err = c.privateKey(ctx, isi); err != nil {
				return w, err
			}
		}
	}
	return w, nil
}

// istioKV reads the cluster's Istio kv-pairs as EMCO does: the first entry holding a key,
// over the cluster's kv-pairs resources in creation order.
func istioKV(ctx context.Context, st controllers.Docs, cluster string) (map[string]string, error) {
	kvs, err := controllers.List[model.KVSpec](ctx, st, store.Query{Parent: lifecycle.ClusterID(cluster), Kind: model.KindClusterKV})
	if err != nil {
		return nil, fmt.Errorf("kv-pairs of cluster %s: %w", cluster, err)
	}
	out := map[string]string{}
	for _, kv := range kvs {
		for _, pair := range kv.Spec.KV {
			for _, key := range []string{kvAddress, kvPort, kvInternalPort, kvHTTPSPort, kvHTTPPort} {
				if val, ok := pair[key]; ok {
					if _, seen := out[key]; !seen {
						out[key] = fmt.Sprint(val)
					}
				}
			}
		}
	}
	return out, nil
}

// namespace is the DIG's logical cloud's namespace, where the objects of its apps go.
func namespace(ctx context.Context, st controllers.Docs, in contract.Input) (string, error) {
	d, err := st.Get(ctx, dtc.DIG(in))
	if err != nil {
		return "", err
	}
	dig, err := model.Decode[model.DIGSpec](d.Body)
	if err != nil {
		return "", err
	}
	d, err = st.Get(ctx, lifecycle.LogicalCloudID(in.Project, dig.Spec.LogicalCloud))
	if store.CodeOf(err) == store.ErrNotFound {
		return "", contract.Refuse("the deployment intent group's logical cloud %q does not exist", dig.Spec.LogicalCloud)
	}
	if err != nil {
		return "", err
	}
	lc, err := model.Decode[model.LogicalCloudSpec](d.Body)
	if err != nil {
		return "", err
	}
	return cmp.Or(lc.Spec.Namespace, "default"), nil
}
