package cacerts

import (
	"context"
	"errors"
	"fmt"

	"github.com/temco/temco/api"
	"github.com/temco/temco/internal/core/appctx"
	"github.com/temco/temco/internal/core/digstate"
	"github.com/temco/temco/internal/core/lifecycle"
	"github.com/temco/temco/internal/core/store"
)

// Kinds are ca-certs' REST resources, with EMCO's paths: certificate intents of a
// cluster provider with their cluster groups, and of a project with the logical clouds
// taking part and their cluster groups. Enrolment and distribution are lifecycle routes
// of the api (lifecycle.Target.CACert).
var Kinds = KindsWith(Policy{})

func kindsWith(p Policy) []api.ResourceKind {
	return []api.ResourceKind{
		certKind(providerCerts, p),
		api.OwnKind[ClusterGroupSpec]{KindDef: api.KindDef[ClusterGroupSpec]{Name: KindClusterGroup,
			Path: providerCerts + "/:" + certParam + clusterGroups, Param: "cluster", Check: checkClusterGroup}}.Mount(),
		certKind(projectCerts, p),
		api.OwnKind[LogicalCloudSpec]{KindDef: api.KindDef[LogicalCloudSpec]{Name: KindLogicalCloud,
			Path: projectCerts + "/:" + certParam + logicalClouds, Param: "logicalCloud", Check: checkLogicalCloud}}.Mount(),
		api.OwnKind[ClusterGroupSpec]{KindDef: api.KindDef[ClusterGroupSpec]{Name: KindClusterGroup,
			Path: projectCerts + "/:" + certParam + logicalClouds + "/:logicalCloud" + clusterGroups, Param: "cluster", Check: checkClusterGroup}}.Mount(),
	}
}

func certKind(path string, p Policy) api.ResourceKind {
	return api.OwnKind[CertSpec]{KindDef: api.KindDef[CertSpec]{Name: KindCert, Path: path, Param: certParam, Check: certCheck(p)},
		Guard: unused, Changed: withStages, Remove: removeCert}.Mount()
}

var stages = []string{lifecycle.CertEnrollment, lifecycle.CertDistribution}

// withStages gives a new certificate intent the state histories of its enrolment and
// distribution, Created (EMCO creates both with the intent); it leaves existing ones be.
func withStages(ctx context.Context, st *store.Store, id string, _ *appctx.Store) error {
	if ok, err := st.Exists(ctx, id); err != nil || !ok {
		return err // deleted: nothing to add
	}
	for _, stage := range stages {
		t := targetOf(id, stage)
		err := st.Create(ctx, &store.Doc{ID: t.ID(), Parent: id, Scope: t.CertOwner(), Kind: stageKind(stage), Name: stage,
			Body: fmt.Sprintf(`{"metadata":{"name":%q},"spec":{}}`, stage), State: digstate.NewHistory()})
		if err != nil && store.CodeOf(err) != store.ErrExists {
			return err
		}
	}
	return nil
}

func stageKind(stage string) string {
	if stage == lifecycle.CertDistribution {
		return KindDistribution
	}
	return KindEnrollment
}

// unused refuses to change or delete a certificate intent while its enrolment or its
// distribution may have objects on clusters (409 saying which to terminate).
func unused(ctx context.Context, st *store.Store, id string, contexts *appctx.Store) error {
	for _, stage := range stages {
		t := targetOf(id, stage)
		d, err := st.Get(ctx, t.ID())
		if store.CodeOf(err) == store.ErrNotFound {
			continue
		}
		if err != nil {
			return err
		}
		if err := settled(ctx, t, d, contexts); err != nil {
			return err
		}
	}
	return nil
}

// settled refuses while the lifecycle d (of t) has, or may still have, objects on clusters.
func settled(ctx context.Context, t lifecycle.Target, d *store.Doc, contexts *appctx.Store) error {
	info, err := digstate.Parse(d)
	if err != nil {
		return err
	}
	tr, err := lifecycle.CACerts.Machine.Start(t.String(), lifecycle.OpModify, info.Current())
	if err == nil && tr.Unless != "" {
		status := ""
		if c, cerr := contexts.Get(ctx, info.ContextID()); cerr == nil {
			status = c.Status
		} else if !errors.Is(cerr, appctx.ErrNotFound) {
			return cerr
		}
		err = tr.Settle(status)
	}
	if err != nil {
		return api.Conflict("%v; terminate it first (POST %s/terminate)", err, t.ID())
	}
	return nil
}

// removeCert deletes a certificate intent with the state of its lifecycles and their
// contexts, once nothing of it is on clusters and it has no cluster groups or logical
// clouds left.
func removeCert(ctx context.Context, st *store.Store, contexts *appctx.Store, id string) error {
	for _, kind := range []string{KindClusterGroup, KindLogicalCloud} {
		children, err := st.List(ctx, store.Query{Parent: id, Kind: kind})
		if err != nil {
			return err
		}
		if len(children) > 0 {
			return &store.Error{Code: store.ErrHasChildren, ID: id, Other: children[0].ID}
		}
	}
	var ctxIDs []string
	for _, stage := range stages {
		t := targetOf(id, stage)
		err := st.DeleteIf(ctx, t.ID(), func(ctx context.Context, d *store.Doc) error {
			if err := settled(ctx, t, d, contexts); err != nil {
				return err
			}
			info, _ := digstate.Parse(d)
			for _, a := range info.Actions {
				if a.ContextID != "" {
					ctxIDs = append(ctxIDs, a.ContextID)
				}
			}
			return nil
		})
		if err != nil && store.CodeOf(err) != store.ErrNotFound {
			return err
		}
	}
	if err := st.Delete(ctx, id); err != nil {
		return err
	}
	for _, c := range ctxIDs {
		_ = contexts.DeleteContext(context.WithoutCancel(ctx), c) // best effort: an orphan context is harmless
	}
	return nil
}
