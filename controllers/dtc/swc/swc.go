// Package swc is EMCO's SD-EWAN sub-controller of dtc: for every inbound intent of the
// traffic group whose edgeCNF is "sdewan" it adds a CNFService to the server app on each
// of its clusters — the SD-EWAN CNF then opens the server's service to the cluster's
// allowed CIDR — and a SdewanApplication to each client app on each of its clusters
// (batch.sdewan.akraino.org/v1alpha1, as EMCO writes them). The ports and the CIDR come
// from the server clusters' kv-pairs SdewanCnfPort, SdewanServicePort and
// SdewanServiceAllowedCidr. The objects are part of the apps, so they are applied,
// updated, pruned and deleted with them. Their names are those EMCO's swc gives: the
// CNFService is named by the service's cluster FQDN (<serviceName>.<namespace>.svc.cluster.local),
// the SdewanApplication by the serviceName; where a client runs on a server cluster, both
// are there, each with its own app (EMCO's sdewan example's README lists http-service-se
// and http-client, which EMCO's code never makes).
//
// Where temco departs from EMCO, deliberately:
//   - A server cluster without one of the kv-pairs fails the operation before anything is
//     applied, naming the cluster and the keys (EMCO logs it and its dtc reports success,
//     with no SD-EWAN object anywhere).
//   - An inbound intent without edgeCNF "sdewan" is left out; EMCO stops at the first one
//     and adds nothing for the whole traffic group.
//   - A client's SdewanApplication takes its ports from the server's first cluster (by
//     name); EMCO takes the server cluster at the client's index, and fails when there are
//     more clients than server clusters.
//   - A cluster where several client apps of one inbound intent run gets one
//     SdewanApplication (EMCO adds the same object to each app).
//   - A server or client app the composite app does not have is refused with its name.
package swc

import (
	"context"
	"fmt"

	"github.com/temco/temco/contract"
	"github.com/temco/temco/controllers"
	"github.com/temco/temco/controllers/dtc"
	"github.com/temco/temco/internal/core/lifecycle"
	"github.com/temco/temco/internal/core/model"
	"github.com/temco/temco/internal/core/store"
)

// Controller is swc as built into temco, registered in /v2/dtc-controllers; EMCO's files
// register it as swc with host swc.
var Controller = controllers.Builtin{
	Name:   "swc",
	Type:   contract.TypeAction,
	Hosts:  []string{"swc"},
	Parent: "dtc",
	New: func(d controllers.Deps) contract.Controller {
		return &controller{src: storeSources{docs: d.Store, namespace: func(ctx context.Context, id string) (string, error) {
			c, err := d.Contexts.Get(ctx, id)
			if err != nil {
				return "", err
			}
			return c.Namespace, nil
		}}}
	},
}

// sources is what swc reads besides the context.
type sources interface {
	Group(ctx context.Context, in contract.Input) (*dtc.TrafficGroup, error)
	// Namespace is the namespace of the context's logical cloud.
	Namespace(ctx context.Context, contextID string) (string, error)
	KVPairs(ctx context.Context, cluster string) ([]model.KVSpec, error)
}

type controller struct{ src sources }

// Run adds the SD-EWAN objects of the traffic group's sdewan inbound intents.
func (c *controller) Run(ctx context.Context, v contract.Context) error {
	in := v.Input()
	if in.Operation == contract.OpTerminate {
		return nil // the objects go with the apps
	}
	g, err := c.src.Group(ctx, in)
	if err != nil {
		return err
	}
	apps, err := v.Apps(ctx)
	if err != nil {
		return err
	}
	placed := map[string][]string{}
	for _, a := range apps {
		placed[a.Name] = a.Clusters
	}
	ns, err := c.src.Namespace(ctx, in.ContextID)
	if err != nil {
		return fmt.Errorf("namespace of context %s: %w", in.ContextID, err)
	}
	kvs := map[string][]model.KVSpec{}
	for _, cluster := range serverClusters(g, placed) {
		if kvs[cluster], err = c.src.KVPairs(ctx, cluster); err != nil {
			return fmt.Errorf("kv-pairs of cluster %s: %w", cluster, err)
		}
	}
	edits, err := plan(g, placed, kvs, ns)
	if err != nil || len(edits) == 0 {
		return err
	}
	return v.Edit(edits...)
}

// storeSources reads the resource store and the context's header.
type storeSources struct {
	docs      controllers.Docs
	namespace func(ctx context.Context, contextID string) (string, error)
}

func (s storeSources) Group(ctx context.Context, in contract.Input) (*dtc.TrafficGroup, error) {
	return dtc.Load(ctx, s.docs, in)
}

func (s storeSources) Namespace(ctx context.Context, contextID string) (string, error) {
	return s.namespace(ctx, contextID)
}

func (s storeSources) KVPairs(ctx context.Context, cluster string) ([]model.KVSpec, error) {
	kvs, err := controllers.List[model.KVSpec](ctx, s.docs, store.Query{Parent: lifecycle.ClusterID(cluster), Kind: model.KindClusterKV})
	if err != nil {
		return nil, err
	}
	out := make([]model.KVSpec, len(kvs))
	for i, kv := range kvs {
		out[i] = kv.Spec
	}
	return out, nil
}
