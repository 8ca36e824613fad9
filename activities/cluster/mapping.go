// Where an object lives on a cluster: its API resource, namespace and REST path.

package cluster

import (
	"cmp"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/temco/temco/internal/core/appctx"
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

// unservedGrace is how long a kind discovery does not find is looked for again.
const unservedGrace = 5 * time.Second

// mapping resolves the API resource of ref and the namespace to use for it.
func (c *client) mapping(ref appctx.Ref, defaultNS string) (mapped, error) {
	gvk := schema.GroupVersionKind{Group: ref.Group, Version: ref.Version, Kind: ref.Kind}
	m, err := c.restMapping(gvk)
	// Discovery may predate a CRD, and an API server that has just started serves its
	// CRDs' kinds a moment after it answers: look again for a few seconds (less than the
	// activity's heartbeat timeout) before calling the kind unserved.
	for deadline := time.Now().Add(unservedGrace); meta.IsNoMatchError(err) && time.Now().Before(deadline); {
		c.resetMapper()
		if m, err = c.restMapping(gvk); meta.IsNoMatchError(err) {
			time.Sleep(unservedGrace / 10)
		}
	}
	if err != nil {
		if meta.IsNoMatchError(err) {
			return mapped{}, unservedErr{gvk}
		}
		return mapped{}, fmt.Errorf("discover %s: %w", gvk, err)
	}
	if m.Scope.Name() != meta.RESTScopeNameNamespace {
		return mapped{gvr: m.Resource}, nil
	}
	return mapped{gvr: m.Resource, namespace: cmp.Or(ref.Namespace, defaultNS)}, nil
}

// restMapping is the mapper's answer for gvk, kept once found: every object of every
// cluster on the endpoint asks it, and the mapper answers each from the whole discovery,
// under a lock (an eighth of a terminate's CPU).
func (e *endpoint) restMapping(gvk schema.GroupVersionKind) (*meta.RESTMapping, error) {
	if m, ok := e.mapped.Load(gvk); ok {
		return m.(*meta.RESTMapping), nil
	}
	m, err := e.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err == nil {
		e.mapped.Store(gvk, m)
	}
	return m, err
}

// resetMapper has the endpoint's APIs read again (a CRD applied, a kind not found).
func (e *endpoint) resetMapper() {
	e.mapper.Reset()
	e.mapped.Clear()
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
