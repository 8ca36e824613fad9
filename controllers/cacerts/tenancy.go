package cacerts

import (
	"context"
	"fmt"
	"slices"

	"github.com/temco/temco/api"
	"github.com/temco/temco/internal/core/lifecycle"
	"github.com/temco/temco/internal/core/model"
	"github.com/temco/temco/internal/core/store"
)

// What a tenant's certificate intents may sign is bound to its project: a request is
// signed on the issuing cluster with that cluster's registered (admin) credentials, and
// with its own signer the subject's organizations become Kubernetes groups there
// ("system:masters" is cluster-admin). So a tenant's intent names only an issuing cluster
// of its project's logical clouds, and only the subject organizations an admin allowed
// (Policy). An admin's may name any registered issuing cluster and any organization, as
// in EMCO, whose example signs a project's certificates on an issuing cluster of no
// cloud. Cluster providers' intents are admin-only by route.
//
// Enrolment checks the issuing cluster again (the clouds may have changed since), and so
// must know who wrote the intent: an admin's is marked so when stored (fieldWriter). The
// mark goes with what was written, not with who asks for the enrolment: a tenant may
// enrol the intent an admin wrote for its project, and a tenant's rewrite of it is
// checked, and marked, as the tenant's. Intents stored without the mark are bound.

// Policy is what tenants' certificate intents may ask for, set by an admin.
type Policy struct {
	// Organizations are the subject organizations (names and units) tenants may name;
	// none when empty. Admins' intents may name any.
	Organizations []string
}

// KindsWith are Kinds with tenants' intents checked against p.
func KindsWith(p Policy) []api.ResourceKind {
	return kindsWith(p)
}

// fieldWriter is the stored field of a project's certificate intent that an admin wrote
// (writerAdmin); a tenant's has none.
const (
	fieldWriter = "writer"
	writerAdmin = "admin"
)

// writtenByAdmin reports whether a stored certificate intent is an admin's.
func writtenByAdmin(d *store.Doc) bool { return d.Fields[fieldWriter] == writerAdmin }

// checkTenancy refuses a tenant's project certificate intent that reaches beyond the
// project: a subject organization p does not allow, or an issuing cluster none of its
// logical clouds references. An admin's passes.
func checkTenancy(ctx context.Context, st *store.Store, project string, sp *CertSpec, admin bool, p Policy) error {
	if admin {
		return nil
	}
	org := sp.CSRInfo.Subject.Organization
	for field, values := range map[string][]string{"names": org.Names, "units": org.Units} {
		for i, v := range values {
			if !slices.Contains(p.Organizations, v) {
				return api.Forbidden("spec.csrInfo.subject.organization.%s[%d] %q is not an organization an admin allowed tenants' certificates to name (%v)",
					field, i, v, p.Organizations)
			}
		}
	}
	issuing := lifecycle.ClusterKey(sp.IssuingCluster.ClusterProvider, sp.IssuingCluster.Cluster)
	ok, err := inProjectClouds(ctx, st, project, issuing)
	if err != nil {
		return err
	}
	if !ok {
		return api.Forbidden("spec.issuingCluster %s is not a cluster of a logical cloud of project %q: a tenant's certificates are signed only on its project's clusters (an admin may name any)",
			issuing, project)
	}
	return nil
}

// inProjectClouds reports whether a logical cloud of project references cluster
// ("provider+cluster").
func inProjectClouds(ctx context.Context, st *store.Store, project, cluster string) (bool, error) {
	refs, err := st.List(ctx, store.Query{Scope: "/projects/" + project, Kind: model.KindClusterReference,
		Fields: map[string]string{"cluster": cluster}})
	if err != nil {
		return false, fmt.Errorf("cluster references of project %s: %w", project, err)
	}
	return len(refs) > 0, nil
}
