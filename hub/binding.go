package hub

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	temco "github.com/temco/temco/client"
	v1 "github.com/temco/temco/hubapi/v1alpha1"
)

// A namespace's objects are a project's only when an admin says so: a Project object
// (cluster-scoped, so written only by whoever administers the hub) lists the namespace in
// spec.namespaces. A namespace's name means nothing: on hubs where tenants create their
// own namespaces, anyone could otherwise write into the project of that name. Everything
// the hub asks temco for a bound namespace's object carries the project's authority
// (api.HeaderActAs), so the API applies exactly the tenant's rules to it.

// bindings lists, for namespace ns, the temco names of the Projects that list it.
func (r *Reconciler) bindings(ctx context.Context, ns string) ([]string, error) {
	var list v1.ProjectList
	if err := r.Kube.List(ctx, &list); err != nil {
		return nil, err
	}
	var out []string
	for _, p := range list.Items {
		if slices.Contains(p.Spec.Namespaces, ns) {
			out = append(out, nameOf(p.Spec.Named, p.Name))
		}
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

// projectOf is the project a namespaced object acts as: a Refusal when its namespace is
// bound to none, or to more than one.
func (r *Reconciler) projectOf(ctx context.Context, ns string) (string, error) {
	projects, err := r.bindings(ctx, ns)
	switch {
	case err != nil:
		return "", err
	case len(projects) == 0:
		return "", &Refusal{Code: http.StatusForbidden, Message: fmt.Sprintf(
			"namespace %s is bound to no temco project: an admin lists it in a Project's spec.namespaces", ns)}
	case len(projects) > 1:
		return "", &Refusal{Code: http.StatusConflict, Message: fmt.Sprintf(
			"namespace %s is bound to projects %s: an admin lists it in one Project only", ns, strings.Join(projects, ", "))}
	}
	return projects[0], nil
}

// namespacesOf lists the namespaces bound to project alone (a namespace two Projects
// list is neither's).
func (r *Reconciler) namespacesOf(ctx context.Context, project string) ([]string, error) {
	var list v1.ProjectList
	if err := r.Kube.List(ctx, &list); err != nil {
		return nil, err
	}
	owners := map[string][]string{}
	for _, p := range list.Items {
		for _, ns := range p.Spec.Namespaces {
			owners[ns] = append(owners[ns], nameOf(p.Spec.Named, p.Name))
		}
	}
	var out []string
	for ns, projects := range owners {
		if slices.Sort(projects); len(slices.Compact(projects)) == 1 && projects[0] == project {
			out = append(out, ns)
		}
	}
	slices.Sort(out)
	return out, nil
}

// boundObjects maps a Project to the objects of one namespaced kind in the namespaces it
// lists (before and after a change: controller-runtime maps both), so that a namespace
// bound or unbound is taken at once.
func (r *Reconciler) boundObjects(newList func() client.ObjectList) func(context.Context, client.Object) []reconcile.Request {
	return func(ctx context.Context, obj client.Object) []reconcile.Request {
		p, ok := obj.(*v1.Project)
		if !ok {
			return nil
		}
		var out []reconcile.Request
		for _, ns := range p.Spec.Namespaces {
			list := newList()
			if err := r.Kube.List(ctx, list, client.InNamespace(ns)); err != nil {
				return nil // the periodic recheck comes anyway
			}
			out = append(out, requestsOf(list)...)
		}
		return out
	}
}

// projectCtxKey carries the project a reconcile acts as to every request it makes.
type projectCtxKey struct{}

// actingAs makes every request of ctx carry project's authority ("": the hub's own).
func actingAs(ctx context.Context, project string) context.Context {
	return context.WithValue(ctx, projectCtxKey{}, project)
}

func actingProject(ctx context.Context) string {
	p, _ := ctx.Value(projectCtxKey{}).(string)
	return p
}

// as is api narrowed to the project ctx acts as.
func as(ctx context.Context, api *temco.Client) *temco.Client {
	return api.ActingAs(actingProject(ctx))
}

// requestsOf is a request for each object of list.
func requestsOf(list client.ObjectList) []reconcile.Request {
	items, err := meta.ExtractList(list)
	if err != nil {
		return nil
	}
	out := make([]reconcile.Request, 0, len(items))
	for _, it := range items {
		if o, ok := it.(client.Object); ok {
			out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(o)})
		}
	}
	return out
}
