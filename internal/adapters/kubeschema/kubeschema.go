// Package kubeschema finds, from a cluster's published OpenAPI v3 schema, the fields of an
// object that the cluster does not declare, and drops them.
//
// A create or update drops such fields with a warning, but server-side apply refuses the
// whole object ("failed to create typed patch object ... field not declared in schema"),
// whatever the field-validation setting. Charts in the wild carry them (a DaemonSet with
// replicas, a key left from a copied template), and kubectl and EMCO create them: temco
// drops them as a create would, and says which.
//
// The walk follows the schema the API server's own typed conversion uses (structured-merge-
// diff, built from the same OpenAPI by kube-openapi's schemaconv), so a field is dropped
// exactly when server-side apply would refuse it.
package kubeschema

import (
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/kube-openapi/pkg/schemaconv"
	"k8s.io/kube-openapi/pkg/spec3"
	smd "sigs.k8s.io/structured-merge-diff/v6/schema"
)

// Schema is one group-version's schema as a cluster publishes it (/openapi/v3/apis/<g>/<v>).
type Schema struct {
	types *smd.Schema
	kinds map[schema.GroupVersionKind]string // the type describing each kind
}

// Parse reads one OpenAPI v3 group-version document.
func Parse(doc []byte) (*Schema, error) {
	var api spec3.OpenAPI
	if err := json.Unmarshal(doc, &api); err != nil {
		return nil, fmt.Errorf("OpenAPI v3 document: %w", err)
	}
	if api.Components == nil {
		return &Schema{types: &smd.Schema{}}, nil
	}
	types, err := schemaconv.ToSchemaFromOpenAPI(api.Components.Schemas, false)
	if err != nil {
		return nil, fmt.Errorf("OpenAPI v3 schemas: %w", err)
	}
	s := &Schema{types: types, kinds: map[schema.GroupVersionKind]string{}}
	for name, sch := range api.Components.Schemas {
		gvks, _ := sch.Extensions["x-kubernetes-group-version-kind"].([]any)
		for _, g := range gvks {
			m, _ := g.(map[string]any)
			group, _ := m["group"].(string)
			version, _ := m["version"].(string)
			kind, _ := m["kind"].(string)
			if version != "" && kind != "" {
				s.kinds[schema.GroupVersionKind{Group: group, Version: version, Kind: kind}] = name
			}
		}
	}
	return s, nil
}

// Knows reports whether the schema describes kind gvk.
func (s *Schema) Knows(gvk schema.GroupVersionKind) bool {
	_, ok := s.kinds[gvk]
	return ok
}

// Prune removes from obj, an object of kind gvk decoded from JSON, every field the schema
// does not declare, and returns their paths (e.g. "spec.replicas",
// "spec.template.spec.containers[0].foo"), sorted. A kind the schema does not describe is
// left alone (nil).
func (s *Schema) Prune(gvk schema.GroupVersionKind, obj map[string]any) []string {
	name, ok := s.kinds[gvk]
	if !ok {
		return nil
	}
	w := walker{types: s.types}
	w.walk(smd.TypeRef{NamedType: &name}, obj)
	sort.Strings(w.dropped)
	return w.dropped
}

type walker struct {
	types   *smd.Schema
	path    []string // where the walk is: field names and "[i]" indices
	dropped []string
}

// walk drops the undeclared fields below v, of type tr. A value of another type than the
// schema's is left as it is: the API server reports it.
func (w *walker) walk(tr smd.TypeRef, v any) {
	atom, ok := w.types.Resolve(tr)
	if !ok {
		return
	}
	switch v := v.(type) {
	case map[string]any:
		if atom.Map != nil {
			w.walkMap(atom.Map, v)
		}
	case []any:
		if atom.List != nil {
			for i, item := range v {
				w.path = append(w.path, "["+strconv.Itoa(i)+"]")
				w.walk(atom.List.ElementType, item)
				w.path = w.path[:len(w.path)-1]
			}
		}
	}
}

func (w *walker) walkMap(m *smd.Map, v map[string]any) {
	for key, val := range v {
		tr := m.ElementType
		if f, ok := m.FindField(key); ok {
			tr = f.Type
		} else if tr == (smd.TypeRef{}) {
			delete(v, key) // deleting the current key during range is allowed
			w.dropped = append(w.dropped, w.at(key))
			continue
		}
		w.path = append(w.path, key)
		w.walk(tr, val)
		w.path = w.path[:len(w.path)-1]
	}
}

// at is the path of field key of the map being walked.
func (w *walker) at(key string) string {
	var b strings.Builder
	for _, p := range w.path {
		if b.Len() > 0 && !strings.HasPrefix(p, "[") {
			b.WriteByte('.')
		}
		b.WriteString(p)
	}
	if b.Len() > 0 {
		b.WriteByte('.')
	}
	b.WriteString(key)
	return b.String()
}
