package ncm

import (
	"context"
	"fmt"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.temporal.io/sdk/temporal"

	"github.com/temco/temco/internal/core/appctx"
	"github.com/temco/temco/internal/core/lifecycle"
	"github.com/temco/temco/internal/core/store"
)

// App is the name of the one app of a cluster's network-intents context (EMCO's).
const App = "network-intents"

// Activities build the contexts of clusters' network intents.
type Activities struct {
	Store    *store.Store
	Contexts *appctx.Store
}

// PrepareClusterNetwork builds the context of a cluster's network intents: one app on the
// one cluster holding its networks' objects (none is fine: EMCO installs an empty
// context too). Overlapping subnets fail it before anything is applied.
func (a *Activities) PrepareClusterNetwork(ctx context.Context, in lifecycle.ContextRef) (lifecycle.Plan, error) {
	cluster, id := in.Target.ClusterNetwork, in.Target.ID()
	nets, err := load(ctx, a.Store, id)
	if err != nil {
		return lifecycle.Plan{}, err
	}
	if msg := overlapping(nets); msg != "" {
		return lifecycle.Plan{}, temporal.NewNonRetryableApplicationError(fmt.Sprintf("%s: %s", in.Target, msg), lifecycle.ErrInvalidInput, nil)
	}
	withNAD, err := multus(ctx, a.Store, id)
	if err != nil {
		return lifecycle.Plan{}, err
	}
	header, err := a.Contexts.Get(ctx, in.ContextID)
	if err != nil {
		return lifecycle.Plan{}, err
	}
	objs, err := objects(nets, withNAD, map[string]string{lifecycle.DeploymentIDLabel: header.Instance + "-" + App})
	if err != nil {
		return lifecycle.Plan{}, err
	}
	if err := a.Contexts.PutApps(ctx, in.ContextID, []*appctx.App{{Name: App, Objects: objs}}); err != nil {
		return lifecycle.Plan{}, err
	}
	res := make([]appctx.ResourceStatus, len(objs))
	for i, o := range objs {
		res[i] = appctx.ResourceStatus{Ref: o.Ref, Status: lifecycle.ResPending}
	}
	placed := []*appctx.ClusterApp{{App: App, Cluster: cluster, Resources: res}}
	if err := a.Contexts.PutPlacement(ctx, in.ContextID, placed, map[string]int{cluster: 0}); err != nil {
		return lifecycle.Plan{}, err
	}
	if err := a.Contexts.Set(ctx, in.ContextID, bson.D{{Key: "apps", Value: []string{App}}}); err != nil {
		return lifecycle.Plan{}, err
	}
	return lifecycle.Plan{Apps: 1, Clusters: 1, Batches: 1, FirstBatch: []string{cluster}}, nil
}
