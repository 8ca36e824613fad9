package cacerts

import (
	"context"
	"fmt"
	"slices"

	"github.com/temco/temco/internal/core/lifecycle"
	"github.com/temco/temco/internal/core/model"
	"github.com/temco/temco/internal/core/store"
)

// member is a cluster a certificate intent covers, and the namespaces of the logical
// clouds it takes part in there (none for a cluster provider's intent, or a cloud
// without a namespace).
type member struct {
	cluster    string // provider+cluster
	namespaces []string
}

// members resolves a certificate intent's member clusters as EMCO does, in the order of
// its cluster groups (and logical clouds), each cluster once: a cluster provider's groups
// select among the provider's clusters; a project's select, for each logical cloud, among
// the clusters the cloud references. A group naming a cluster that does not exist fails,
// as in EMCO (the error is for the user: invalid).
func members(ctx context.Context, st *store.Store, t lifecycle.Target) ([]member, error) {
	var out []member
	index := map[string]int{}
	add := func(cluster, namespace string) {
		i, ok := index[cluster]
		if !ok {
			i = len(out)
			index[cluster] = i
			out = append(out, member{cluster: cluster})
		}
		if namespace != "" && !slices.Contains(out[i].namespaces, namespace) {
			out[i].namespaces = append(out[i].namespaces, namespace)
		}
	}
	certID := t.CertID()
	if t.ClusterProvider != "" {
		clusters, err := groupsClusters(ctx, st, certID, nil)
		for _, c := range clusters {
			add(c, "")
		}
		return out, err
	}
	clouds, err := st.List(ctx, store.Query{Parent: certID, Kind: KindLogicalCloud})
	if err != nil {
		return nil, err
	}
	for _, d := range clouds {
		r, err := model.Decode[LogicalCloudSpec](d.Body)
		if err != nil {
			return nil, err
		}
		cloudID := lifecycle.LogicalCloudID(t.Project, r.Spec.LogicalCloud)
		cd, err := st.Get(ctx, cloudID)
		if store.CodeOf(err) == store.ErrNotFound {
			return nil, invalid("%s names logical cloud %q, which does not exist", t, r.Spec.LogicalCloud)
		}
		if err != nil {
			return nil, err
		}
		cloud, err := model.Decode[model.LogicalCloudSpec](cd.Body)
		if err != nil {
			return nil, err
		}
		refs, err := st.List(ctx, store.Query{Parent: cloudID, Kind: model.KindClusterReference})
		if err != nil {
			return nil, err
		}
		referenced := map[string]bool{}
		for _, ref := range refs {
			referenced[ref.Fields["cluster"]] = true
		}
		clusters, err := groupsClusters(ctx, st, d.ID, referenced)
		if err != nil {
			return nil, err
		}
		for _, c := range clusters {
			add(c, cloud.Spec.Namespace)
		}
	}
	return out, nil
}

// groupsClusters lists the clusters the cluster groups below parent select, in the
// groups' order; only those in within, when given.
func groupsClusters(ctx context.Context, st *store.Store, parent string, within map[string]bool) ([]string, error) {
	groups, err := st.List(ctx, store.Query{Parent: parent, Kind: KindClusterGroup})
	if err != nil {
		return nil, err
	}
	var out []string
	for _, g := range groups {
		r, err := model.Decode[ClusterGroupSpec](g.Body)
		if err != nil {
			return nil, err
		}
		sp, provider := r.Spec, "/cluster-providers/"+r.Spec.Provider
		var names []string
		switch sp.Scope {
		case "name":
			ok, err := st.Exists(ctx, provider+"/clusters/"+sp.Cluster)
			if err != nil {
				return nil, err
			}
			if !ok {
				return nil, invalid("cluster group %q names cluster %q of provider %q, which does not exist", g.Name, sp.Cluster, sp.Provider)
			}
			names = []string{sp.Cluster}
		case "label":
			labels, err := st.List(ctx, store.Query{Scope: provider, Kind: model.KindClusterLabel, Name: sp.Label})
			if err != nil {
				return nil, err
			}
			for _, l := range labels {
				names = append(names, splitID(l.Parent)[3])
			}
			slices.Sort(names)
		default:
			return nil, invalid("cluster group %q has scope %q", g.Name, sp.Scope)
		}
		for _, n := range names {
			if key := lifecycle.ClusterKey(sp.Provider, n); within == nil || within[key] {
				out = append(out, key)
			}
		}
	}
	return out, nil
}

// kvValue is the value of key in a cluster's kv-pairs resource named name ("" if none):
// EMCO reads per-cluster settings there (csrData.commonName, sgx.enabled).
func kvValue(ctx context.Context, st *store.Store, cluster, name, key string) (string, error) {
	d, err := st.Get(ctx, lifecycle.ClusterID(cluster)+"/kv-pairs/"+name)
	if store.CodeOf(err) == store.ErrNotFound {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	r, err := model.Decode[model.KVSpec](d.Body)
	if err != nil {
		return "", err
	}
	for _, kv := range r.Spec.KV {
		if v, ok := kv[key]; ok {
			return fmt.Sprint(v), nil
		}
	}
	return "", nil
}

// prepare reads what enrolment and distribution both start from: the intent's member
// clusters (none is the user's mistake) and the labels of app's objects in the context.
func (a *Activities) prepare(ctx context.Context, t lifecycle.Target, ctxID, app string) ([]member, map[string]string, error) {
	ms, err := members(ctx, a.Store, t)
	if err != nil {
		return nil, nil, err
	}
	if len(ms) == 0 {
		return nil, nil, invalid("%s selects no cluster: add cluster groups (and, for a project's intent, logical clouds referencing their clusters)", t)
	}
	header, err := a.Contexts.Get(ctx, ctxID)
	if err != nil {
		return nil, nil, err
	}
	return ms, map[string]string{lifecycle.DeploymentIDLabel: header.Instance + "-" + app}, nil
}
