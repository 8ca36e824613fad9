// Where an object lives on a cluster: its API resource, namespace and REST path.

package cluster

import (
	"cmp"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/temco/temco/internal/appctx"
)

// mapped is where an object lives on a cluster.
type mapped struct {
	gvr       schema.GroupVersionResource
	namespace string // "" for cluster-scoped objects
}

// path is the REST path of the named object.
func (m mapped) path(name string) []string {
	p := []string{"/apis", m.gvr.Group, m.gvr.Version}
	if m.gvr.Group == "" {
		p = []string{"/api", m.gvr.Version}
	}
	if m.namespace != "" {
		p = append(p, "namespaces", m.namespace)
	}
	return append(p, m.gvr.Resource, name)
}

// mapping resolves the API resource of ref and the namespace to use for it.
func (c *client) mapping(ref appctx.Ref, defaultNS string) (mapped, error) {
	gvk := schema.GroupVersionKind{Group: ref.Group, Version: ref.Version, Kind: ref.Kind}
	m, err := c.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if meta.IsNoMatchError(err) {
		c.mapper.Reset() // discovery may predate a CRD: look once more
		m, err = c.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	}
	if err != nil {
		if meta.IsNoMatchError(err) {
			return mapped{}, permanentErr{fmt.Errorf("the cluster does not serve %s", gvk)}
		}
		return mapped{}, fmt.Errorf("discover %s: %w", gvk, err)
	}
	if m.Scope.Name() != meta.RESTScopeNameNamespace {
		return mapped{gvr: m.Resource}, nil
	}
	return mapped{gvr: m.Resource, namespace: cmp.Or(ref.Namespace, defaultNS)}, nil
}

// resource is the dynamic client of ref's resource (reads and deletes decode objects).
func (c *client) resource(ref appctx.Ref) (dynamic.ResourceInterface, error) {
	m, err := c.mapping(ref, ref.Namespace)
	if err != nil {
		return nil, err
	}
	if m.namespace == "" {
		return c.dyn.Resource(m.gvr), nil
	}
	return c.dyn.Resource(m.gvr).Namespace(m.namespace), nil
}
