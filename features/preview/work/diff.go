package work

import (
	"cmp"
	"maps"
	"slices"

	"github.com/temco/temco/features/preview/flow"
	"github.com/temco/temco/internal/adapters/gitops/layout"
	"github.com/temco/temco/internal/core/appctx"
	"github.com/temco/temco/internal/core/lifecycle"
)

// A preview compares, per cluster, what an operation would apply with what the running
// revision has applied, as the update's apply and prune decide it (activities/cluster's
// diff.go): an object the running revision applied with the same content is left alone,
// one it has in another content or did not get to apply is applied again (changed), one it
// does not have is added, and what it has that the new revision lacks is deleted. These
// functions do no I/O.

// side is one revision on one cluster: its placements, and the apps as that cluster gets
// them (controllers may have edited its objects alone).
type side struct {
	placed []*appctx.ClusterApp
	apps   map[string]*appctx.App
}

// objectKey identifies an object on a cluster across revisions, as the apply does: its
// API version may change, its identity may not.
func objectKey(group, kind, namespace, name string) string {
	return group + "/" + kind + "/" + namespace + "/" + name
}

// display names an object for the answer: Kind/namespace/name, or Kind/name.
func display(kind, namespace, name string) string {
	if namespace == "" {
		return kind + "/" + name
	}
	return kind + "/" + namespace + "/" + name
}

// scope tells where an object of the new revision lands without asking the cluster: its
// own namespace or the context's, or none for cluster-scoped kinds — Kubernetes' own,
// those whose definition the deployment carries, and those the running revision applied
// without a namespace (the apply asked the cluster then).
type scope struct {
	namespace     string
	dep           layout.Deployment // the deployment's CRDs, for layout.NamespaceOf
	clusterScoped map[string]bool   // group/Kind
}

func newScope(namespace string, next map[string]*appctx.App) *scope {
	s := &scope{namespace: namespace, dep: layout.Deployment{Namespace: namespace}, clusterScoped: map[string]bool{}}
	var crds []layout.Object
	for _, name := range slices.Sorted(maps.Keys(next)) {
		for _, o := range next[name].Objects {
			if o.Group == "apiextensions.k8s.io" && o.Kind == "CustomResourceDefinition" {
				crds = append(crds, layout.Object{Group: o.Group, Version: o.Version, Kind: o.Kind, Name: o.Name, Manifest: []byte(o.Manifest)})
			}
		}
	}
	if len(crds) > 0 {
		s.dep.Apps = []layout.App{{Name: "crds", Objects: crds}}
	}
	return s
}

// learn notes the kinds the running revision applied without a namespace on a cluster.
func (s *scope) learn(prev side) {
	for _, p := range prev.placed {
		for _, r := range p.Resources {
			if r.Status == lifecycle.ResApplied && r.Namespace == "" {
				s.clusterScoped[r.Group+"/"+r.Kind] = true
			}
		}
	}
}

func (s *scope) namespaceOf(r appctx.Ref) string {
	if s.clusterScoped[r.Group+"/"+r.Kind] {
		return ""
	}
	return layout.NamespaceOf(s.dep, r.Group, r.Kind, cmp.Or(r.Namespace, s.namespace))
}

// previous is what the running revision has on a cluster, by objectKey.
type previous struct {
	name    string
	applied bool   // Applied, with hash
	hash    string // of the applied manifest
}

// onCluster indexes the running revision's objects on a cluster that may be there:
// everything but what it never applied (Pending) or has deleted.
func onCluster(prev side) (map[string]previous, []string) {
	out := map[string]previous{}
	var order []string
	for _, p := range prev.placed {
		app := prev.apps[p.App]
		for i, r := range p.Resources {
			if r.Status == lifecycle.ResPending || r.Status == lifecycle.ResDeleted {
				continue
			}
			k := objectKey(r.Group, r.Kind, r.Namespace, r.Name)
			if _, seen := out[k]; seen {
				continue
			}
			e := previous{name: display(r.Kind, r.Namespace, r.Name), applied: r.Status == lifecycle.ResApplied}
			if e.applied && app != nil && i < len(app.Objects) {
				e.hash = app.Objects[i].Hash
			}
			out[k] = e
			order = append(order, k)
		}
	}
	return out, order
}

// diffCluster is what the new revision (next) changes on a cluster where the running one
// has prev (empty for an instantiate or a cluster it does not use).
func diffCluster(cluster string, next, prev side, sc *scope) flow.ClusterPreview {
	had, order := onCluster(prev)
	out := flow.ClusterPreview{Cluster: cluster, Added: []string{}, Changed: []string{}, Removed: []string{}}
	keep := map[string]bool{}
	for _, p := range next.placed {
		app := next.apps[p.App]
		if app == nil {
			continue
		}
		for i, o := range app.Objects {
			ns := sc.namespaceOf(o.Ref)
			k := objectKey(o.Group, o.Kind, ns, o.Name)
			if keep[k] {
				continue
			}
			keep[k] = true
			h, ok := had[k]
			switch {
			case !ok:
				out.Added = append(out.Added, display(o.Kind, ns, o.Name))
			case h.applied && h.hash == app.Objects[i].Hash:
				out.Same++
			default:
				out.Changed = append(out.Changed, display(o.Kind, ns, o.Name))
			}
		}
	}
	for _, k := range order {
		if !keep[k] {
			out.Removed = append(out.Removed, had[k].name)
		}
	}
	slices.Sort(out.Added)
	slices.Sort(out.Changed)
	slices.Sort(out.Removed)
	out.Unchanged = len(out.Added)+len(out.Changed)+len(out.Removed) == 0
	out.Dropped = len(next.placed) == 0
	return out
}

// stage is a stage's name and its clusters in the order it changes them.
type stage struct {
	name     string
	clusters []string
}

// summarize lays the clusters' previews out in the stages, detailing at most limit
// clusters per stage and counting all of them, then adds the pseudo-stage of the
// clusters only the running revision uses (dropped, in name order) when there are any.
func summarize(stages []stage, dropped []string, limit int, preview func(cluster string) flow.ClusterPreview) ([]flow.PreviewStage, flow.PreviewCounts) {
	var out []flow.PreviewStage
	var total flow.PreviewCounts
	add := func(name string, removed bool, clusters []string) {
		st := flow.PreviewStage{Name: name, Removed: removed, Clusters: []flow.ClusterPreview{}}
		for _, cl := range clusters {
			p := preview(cl)
			st.Counts.Add(p)
			if len(st.Clusters) < limit {
				st.Clusters = append(st.Clusters, p)
			} else {
				st.More++
			}
		}
		total.Sum(st.Counts)
		out = append(out, st)
	}
	for _, s := range stages {
		add(s.name, false, s.clusters)
	}
	if len(dropped) > 0 {
		add(flow.PreviewRemovedStage, true, dropped)
	}
	return out, total
}
