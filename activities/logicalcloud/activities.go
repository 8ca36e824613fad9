// Package logicalcloud sets logical clouds up on their clusters and tears them down:
// the namespace, quota and RBAC objects (applied like any AppContext, with the clusters'
// registered credentials, or committed to git for GitOps clusters) and, for standard and
// privileged clouds, a user credential — a key temco generates, a
// CertificateSigningRequest the cluster signs, and a kubeconfig kept sealed for the
// deployments into the cloud — or, on a GitOps cluster, as dcm does there, a
// ServiceAccount the cloud's roles are bound to, whose name (nothing secret) is kept as the
// credential: on fluxcd the cloud's own, which Flux impersonates to apply the cloud's
// deployments; on anthos the reconciler Config Sync runs the cloud's RepoSync as.
package logicalcloud

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.temporal.io/sdk/temporal"

	"github.com/temco/temco/activities/cluster"
	"github.com/temco/temco/internal/adapters/credentials"
	"github.com/temco/temco/internal/core/appctx"
	"github.com/temco/temco/internal/core/lifecycle"
	"github.com/temco/temco/internal/core/model"
	"github.com/temco/temco/internal/core/store"
)

// App is the name of the one "app" of a logical cloud's AppContext.
const App = "logical-cloud"

// Activities work on logical clouds.
type Activities struct {
	Store       *store.Store
	Contexts    *appctx.Store
	Credentials *credentials.Store
	Clients     *cluster.Clients
	Cluster     *cluster.Activities // applies and deletes the cloud's objects
}

func invalid(format string, args ...any) error {
	return temporal.NewNonRetryableApplicationError(fmt.Sprintf(format, args...), lifecycle.ErrInvalidInput, nil)
}

// load reads a logical cloud and what belongs to it.
func (a *Activities) load(ctx context.Context, id string) (cloud, []string, error) {
	d, err := a.Store.Get(ctx, id)
	if err != nil {
		return cloud{}, nil, err
	}
	r, err := model.Decode[model.LogicalCloudSpec](d.Body)
	if err != nil {
		return cloud{}, nil, err
	}
	c := cloud{project: projectOf(id), name: r.Metadata.Name, spec: r.Spec, permissions: map[string]model.UserPermissionSpec{}, quotas: map[string]model.ClusterQuotaSpec{}}
	perms, err := a.Store.List(ctx, store.Query{Parent: id, Kind: model.KindUserPermission})
	if err != nil {
		return c, nil, err
	}
	for _, p := range perms {
		pr, err := model.Decode[model.UserPermissionSpec](p.Body)
		if err != nil {
			return c, nil, err
		}
		c.permissions[p.Name] = pr.Spec
	}
	quotas, err := a.Store.List(ctx, store.Query{Parent: id, Kind: model.KindClusterQuota})
	if err != nil {
		return c, nil, err
	}
	for _, q := range quotas {
		qr, err := model.Decode[model.ClusterQuotaSpec](q.Body)
		if err != nil {
			return c, nil, err
		}
		c.quotas[q.Name] = qr.Spec
	}
	clusters, err := Clusters(ctx, a.Store, id)
	return c, clusters, err
}

// Clusters lists the clusters a logical cloud references ("provider+cluster", sorted).
func Clusters(ctx context.Context, st *store.Store, cloudID string) ([]string, error) {
	// Kept while the cloud's members stay as they are: one read per placement otherwise.
	refs, err := st.ListCurrent(ctx, store.Query{Parent: cloudID, Kind: model.KindClusterReference})
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(refs))
	for _, r := range refs {
		out = append(out, r.Fields["cluster"])
	}
	sort.Strings(out)
	return out, nil
}

// PrepareLogicalCloud builds the context of a logical cloud: its objects placed on every
// cluster it references (none for an admin cloud, which changes nothing on clusters).
func (a *Activities) PrepareLogicalCloud(ctx context.Context, in lifecycle.ContextRef) (lifecycle.Plan, error) {
	c, clusters, err := a.load(ctx, in.Target.ID())
	if err != nil {
		return lifecycle.Plan{}, err
	}
	if len(clusters) == 0 {
		return lifecycle.Plan{}, invalid("%s references no cluster: add cluster-references first", in.Target)
	}
	header, err := a.Contexts.Get(ctx, in.ContextID)
	if err != nil {
		return lifecycle.Plan{}, err
	}
	if c.spec.Level == model.LevelAdmin {
		return lifecycle.Plan{Clusters: len(clusters)}, nil
	}
	labels := map[string]string{lifecycle.DeploymentIDLabel: header.Instance + "-" + App}
	objs, err := c.objects(labels, nil)
	if err != nil {
		return lifecycle.Plan{}, invalid("%s: %v", in.Target, err)
	}
	if err := a.Contexts.PutApps(ctx, in.ContextID, []*appctx.App{{Name: App, Objects: objs}}); err != nil {
		return lifecycle.Plan{}, err
	}
	placed := make([]*appctx.ClusterApp, 0, len(clusters))
	batchOf := map[string]int{}
	for i, cl := range clusters {
		// A GitOps cluster gets the cloud's account there too (a ServiceAccount, or a
		// RepoSync), and role bindings to it: its objects of its own (the placement's,
		// index-aligned with its statuses).
		access, err := a.Clients.GitOpsAccess(ctx, cl)
		if err != nil {
			return lifecycle.Plan{}, err
		}
		p := &appctx.ClusterApp{App: App, Cluster: cl}
		on := objs
		if access != nil {
			if on, err = c.objects(labels, access); err != nil {
				return lifecycle.Plan{}, invalid("%s: %v", in.Target, err)
			}
			p.Objects = on
		}
		p.Resources = make([]appctx.ResourceStatus, len(on))
		for j, o := range on {
			p.Resources[j] = appctx.ResourceStatus{Ref: o.Ref, Status: lifecycle.ResPending}
		}
		placed = append(placed, p)
		batchOf[cl] = i / batchSize
	}
	if err := a.Contexts.PutPlacement(ctx, in.ContextID, placed, batchOf); err != nil {
		return lifecycle.Plan{}, err
	}
	batches := (len(clusters) + batchSize - 1) / batchSize
	err = a.Contexts.Set(ctx, in.ContextID, bson.D{{Key: "apps", Value: []string{App}}})
	plan := lifecycle.Plan{Apps: 1, Clusters: len(clusters), Batches: batches}
	if batches == 1 {
		plan.FirstBatch = clusters
	}
	return plan, err
}

// batchSize: logical clouds span few clusters compared to deployments; one size fits.
const batchSize = 50

// SetUpLogicalCloud applies the cloud's objects to one cluster, then makes sure the
// cloud's user has a credential there.
func (a *Activities) SetUpLogicalCloud(ctx context.Context, in lifecycle.ClusterInput) (lifecycle.ClusterResult, error) {
	res, err := a.Cluster.ApplyCluster(ctx, in)
	if err != nil || res.Failed > 0 {
		return res, err
	}
	header, err := a.Contexts.Get(ctx, in.ContextID)
	if err != nil {
		return res, err
	}
	c, _, err := a.load(ctx, header.DIG)
	if err != nil {
		return res, err
	}
	return res, a.issue(ctx, header.DIG, c, in.Cluster)
}

// TearDownLogicalCloud deletes the cloud's objects from one cluster and forgets its
// credential there.
func (a *Activities) TearDownLogicalCloud(ctx context.Context, in lifecycle.ClusterInput) (lifecycle.ClusterResult, error) {
	res, err := a.Cluster.DeleteCluster(ctx, in)
	if err != nil || res.Failed > 0 {
		return res, err
	}
	header, err := a.Contexts.Get(ctx, in.ContextID)
	if err != nil {
		return res, err
	}
	return res, a.revoke(ctx, header.DIG, in.Cluster)
}

// PruneLogicalCloud removes, after an update of the cloud, what the previous revision
// had on a cluster and the next no longer has; a cluster the cloud left loses its
// credential too.
func (a *Activities) PruneLogicalCloud(ctx context.Context, in lifecycle.ClusterInput) (lifecycle.ClusterResult, error) {
	res, err := a.Cluster.PruneCluster(ctx, in)
	if err != nil || res.Failed > 0 {
		return res, err
	}
	next, err := a.Contexts.ClusterApps(ctx, in.Next, in.Cluster)
	if err != nil || len(next) > 0 {
		return res, err
	}
	header, err := a.Contexts.Get(ctx, in.ContextID)
	if err != nil {
		return res, err
	}
	return res, a.revoke(ctx, header.DIG, in.Cluster)
}

// projectOf is the project of a logical cloud: "/projects/p/logical-clouds/lc" -> "p".
func projectOf(cloudID string) string { return strings.Split(strings.Trim(cloudID, "/"), "/")[1] }

// csrName names the CertificateSigningRequest of a cloud (cluster-scoped, so it carries
// the project too).
func csrName(cloudID string) string {
	// "/projects/p/logical-clouds/lc" -> "temco-p-lc"
	parts := strings.Split(strings.Trim(cloudID, "/"), "/")
	return "temco-" + parts[1] + "-" + parts[3]
}
