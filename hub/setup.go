package hub

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	v1 "github.com/temco/temco/hubapi/v1alpha1"
)

// setup registers one controller per kind. Only spec (generation) and annotation
// changes wake one: the hub's own status writes do not.
func setup(mgr ctrl.Manager, r *Reconciler) error {
	changes := builder.WithPredicates(predicate.Or(predicate.GenerationChangedPredicate{}, predicate.AnnotationChangedPredicate{}))
	add := func(obj client.Object, name string, rec interface {
		Reconcile(context.Context, ctrl.Request) (ctrl.Result, error)
	}) error {
		b := ctrl.NewControllerManagedBy(mgr).For(obj, changes).Named(name)
		if newList, ok := reading[name]; ok {
			_, clusterScoped := obj.(*v1.Cluster)
			b = b.Watches(&corev1.ConfigMap{}, handler.EnqueueRequestsFromMapFunc(r.readers("ConfigMap", newList, clusterScoped))).
				Watches(&corev1.Secret{}, handler.EnqueueRequestsFromMapFunc(r.readers("Secret", newList, clusterScoped)))
		}
		if newList, ok := bound[name]; ok {
			// A namespace bound or unbound (a Project's spec.namespaces) changes whom its
			// objects act as.
			b = b.Watches(&v1.Project{}, handler.EnqueueRequestsFromMapFunc(r.boundObjects(newList)),
				builder.WithPredicates(predicate.GenerationChangedPredicate{}))
		}
		if _, ok := obj.(*v1.DeploymentIntentGroup); ok {
			// A DIG deploys its composite app: a change there (a chart's version) is an
			// update of the DIGs that use it, once the composite app took it.
			b = b.Watches(&v1.CompositeApp{}, handler.EnqueueRequestsFromMapFunc(r.digsUsing))
		}
		return b.Complete(rec)
	}
	steps := []error{
		add(&v1.ClusterProvider{}, "clusterprovider", &generic[*v1.ClusterProvider]{r, kindOps[*v1.ClusterProvider]{kind: "ClusterProvider",
			new: func() *v1.ClusterProvider { return &v1.ClusterProvider{} },
			build: func(_ context.Context, _ *Reconciler, o *v1.ClusterProvider, _ string) (*node, error) {
				return providerNode(o), nil
			},
			finalize: removeTree[*v1.ClusterProvider]("ClusterProvider")}}),
		add(&v1.Cluster{}, "cluster", &generic[*v1.Cluster]{r, kindOps[*v1.Cluster]{kind: "Cluster",
			new: func() *v1.Cluster { return &v1.Cluster{} },
			build: func(ctx context.Context, r *Reconciler, o *v1.Cluster, _ string) (*node, error) {
				return clusterNode(ctx, r.filesFor(o), o)
			},
			finalize: removeTree[*v1.Cluster]("Cluster")}}),
		add(&v1.Project{}, "project", &generic[*v1.Project]{r, projectOps}),
		add(&v1.LogicalCloud{}, "logicalcloud", &generic[*v1.LogicalCloud]{r, cloudOps}),
		add(&v1.CompositeApp{}, "compositeapp", &generic[*v1.CompositeApp]{r, compositeAppOps}),
		add(&v1.DeploymentIntentGroup{}, "deploymentintentgroup", &generic[*v1.DeploymentIntentGroup]{r, digOps}),
	}
	for _, err := range steps {
		if err != nil {
			return err
		}
	}
	return nil
}

// reading lists, by controller, the kinds whose objects read ConfigMaps and Secrets.
var reading = map[string]func() client.ObjectList{
	"cluster":               func() client.ObjectList { return &v1.ClusterList{} },
	"compositeapp":          func() client.ObjectList { return &v1.CompositeAppList{} },
	"deploymentintentgroup": func() client.ObjectList { return &v1.DeploymentIntentGroupList{} },
}

// bound lists, by controller, the namespaced kinds: their objects act as the project
// their namespace is bound to.
var bound = map[string]func() client.ObjectList{
	"compositeapp":          func() client.ObjectList { return &v1.CompositeAppList{} },
	"deploymentintentgroup": func() client.ObjectList { return &v1.DeploymentIntentGroupList{} },
}

var projectOps = kindOps[*v1.Project]{kind: "Project",
	new: func() *v1.Project { return &v1.Project{} },
	build: func(_ context.Context, _ *Reconciler, o *v1.Project, _ string) (*node, error) {
		return projectNode(o), nil
	},
	project:  func(o *v1.Project) string { return nameOf(o.Spec.Named, o.Name) },
	finalize: removeTree[*v1.Project]("Project")}

var cloudOps = kindOps[*v1.LogicalCloud]{kind: "LogicalCloud",
	new: func() *v1.LogicalCloud { return &v1.LogicalCloud{} },
	build: func(_ context.Context, _ *Reconciler, o *v1.LogicalCloud, _ string) (*node, error) {
		return logicalCloudNode(o), nil
	},
	project:  func(o *v1.LogicalCloud) string { return o.Spec.Project },
	after:    cloudAfter,
	finalize: cloudFinalize}

var compositeAppOps = kindOps[*v1.CompositeApp]{kind: "CompositeApp",
	new: func() *v1.CompositeApp { return &v1.CompositeApp{} },
	build: func(ctx context.Context, r *Reconciler, o *v1.CompositeApp, project string) (*node, error) {
		return compositeAppNode(ctx, r.filesFor(o), project, o)
	},
	finalize: removeTree[*v1.CompositeApp]("CompositeApp")}

var digOps = kindOps[*v1.DeploymentIntentGroup]{kind: "DeploymentIntentGroup",
	new: func() *v1.DeploymentIntentGroup { return &v1.DeploymentIntentGroup{} },
	build: func(ctx context.Context, r *Reconciler, o *v1.DeploymentIntentGroup, project string) (*node, error) {
		n, err := digNode(ctx, r.filesFor(o), project, o)
		if err == nil && o.DeletionTimestamp.IsZero() { // a delete needs only the paths
			n.uses, err = r.compositeAppHash(ctx, project, o)
		}
		return n, err
	},
	after:    digAfter,
	finalize: digFinalize}
