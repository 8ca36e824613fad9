package api

import (
	"context"
	"strings"

	"github.com/labstack/echo/v4"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/temco/temco/internal/core/digstate"
	"github.com/temco/temco/internal/core/lifecycle"
	"github.com/temco/temco/internal/core/model"
)

// routeLC is a logical cloud (dcm).
const routeLC = lifecycle.RouteLogicalCloud

func (s *Server) registerDcm(g *echo.Group) {
	register(g, s, kind[model.LogicalCloudSpec]{name: model.KindLogicalCloud, check: checkLogicalCloud,
		coll: "/projects/:project/logical-clouds", item: routeLC,
		remove: s.deleteOperated(routeLC, lifecycle.LogicalClouds.Machine), state: digstate.NewHistory})
	register(g, s, clusterRefKind)
	register(g, s, kind[model.UserPermissionSpec]{name: model.KindUserPermission, check: checkUserPermission,
		coll: routeLC + "/user-permissions", item: routeLC + "/user-permissions/:userPermission"})
	register(g, s, kind[model.ClusterQuotaSpec]{name: model.KindClusterQuota, check: checkClusterQuota,
		coll: routeLC + "/cluster-quotas", item: routeLC + "/cluster-quotas/:clusterQuota"})
	register(g, s, kind[model.KVSpec]{name: model.KindLogicalCloudKV,
		coll: routeLC + "/kv-pairs", item: routeLC + "/kv-pairs/:kvPair"})
}

func namespaceErr(field, ns string) error {
	if errs := validation.IsDNS1123Label(ns); len(errs) > 0 {
		return badRequest("%s %q is not a valid namespace: %s", field, ns, strings.Join(errs, "; "))
	}
	return nil
}

func checkLogicalCloud(_ context.Context, _ *Server, r *request[model.LogicalCloudSpec]) error {
	sp := &r.res.Spec
	if sp.Level == "" {
		sp.Level = model.LevelStandard // as dcm: a cloud that names no level is a standard one
	}
	switch sp.Level {
	case model.LevelAdmin:
		if sp.Namespace != "" {
			return namespaceErr("spec.namespace", sp.Namespace)
		}
	case model.LevelStandard:
		if sp.Namespace == "" {
			return badRequest("spec.namespace is required for a level 1 (standard or privileged) logical cloud")
		}
		if err := namespaceErr("spec.namespace", sp.Namespace); err != nil {
			return err
		}
		// No user is accepted, as dcm accepts it: the credential's user then has a name
		// temco derives from the cloud (activities/logicalcloud).
		if len(sp.User.UserName) > 20 { // dcm's limit
			return badRequest("spec.user.userName %q is longer than 20 characters", sp.User.UserName)
		}
	default:
		return badRequest("spec.level %q is invalid: use \"0\" (admin) or \"1\" (standard or privileged)", sp.Level)
	}
	for k, v := range sp.Labels {
		if errs := validation.IsQualifiedName(k); len(errs) > 0 {
			return badRequest("spec.labels key %q is invalid: %s", k, strings.Join(errs, "; "))
		}
		if errs := validation.IsValidLabelValue(v); len(errs) > 0 {
			return badRequest("spec.labels[%q] value %q is invalid: %s", k, v, strings.Join(errs, "; "))
		}
	}
	return nil
}

// clusterRefKind is a logical cloud's reference to a cluster.
var clusterRefKind = kind[model.ClusterReferenceSpec]{name: model.KindClusterReference, check: checkClusterReference,
	coll: routeLC + "/cluster-references", item: routeLC + "/cluster-references/:clusterReference"}

func checkClusterReference(_ context.Context, _ *Server, r *request[model.ClusterReferenceSpec]) error {
	sp := r.res.Spec
	if err := model.ValidateName("spec.clusterProvider", sp.ClusterProvider); err != nil {
		return badRequest("%v", err)
	}
	if err := model.ValidateName("spec.cluster", sp.Cluster); err != nil {
		return badRequest("%v", err)
	}
	r.ref("/cluster-providers/" + sp.ClusterProvider + "/clusters/" + sp.Cluster)
	r.field("cluster", lifecycle.ClusterKey(sp.ClusterProvider, sp.Cluster))
	return nil
}

func checkUserPermission(_ context.Context, _ *Server, r *request[model.UserPermissionSpec]) error {
	sp := r.res.Spec
	if sp.Namespace != "" {
		if err := namespaceErr("spec.namespace", sp.Namespace); err != nil {
			return err
		}
	}
	if len(sp.Verbs) == 0 || len(sp.Resources) == 0 {
		return badRequest("spec.resources and spec.verbs must each name at least one entry")
	}
	return nil
}

func checkClusterQuota(ctx context.Context, s *Server, r *request[model.ClusterQuotaSpec]) error {
	if len(r.res.Spec) == 0 {
		return badRequest("spec must set at least one quota, e.g. {\"pods\": \"10\"}")
	}
	for k, v := range r.res.Spec {
		if _, err := resource.ParseQuantity(v); err != nil {
			return badRequest("spec.%s %q is not a quantity: %v", k, v, err)
		}
	}
	cloud, err := s.Store.Get(ctx, r.parent)
	if err != nil {
		return fromStore(err)
	}
	lc, err := model.Decode[model.LogicalCloudSpec](cloud.Body)
	if err != nil {
		return err
	}
	if lc.Spec.Level == model.LevelAdmin { // dcm's rule: an admin cloud has the clusters' own limits
		return badRequest("cluster quotas are not allowed in a level 0 (admin) logical cloud")
	}
	return nil
}
