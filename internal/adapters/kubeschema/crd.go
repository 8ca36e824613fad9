package kubeschema

import (
	"encoding/json"
	"fmt"
)

// CRDDocument is the OpenAPI v3 document of the kinds a CustomResourceDefinition (decoded
// from JSON) defines, as an API server serving it would publish one: what prunes custom
// objects whose definition is not on the cluster yet (a GitOps cluster gets both in one
// commit), or whose schema the cluster has not published (yet, or at all). Object
// metadata is taken as it comes (its schema is the server's own).
func CRDDocument(crd map[string]any) ([]byte, error) {
	spec, _ := crd["spec"].(map[string]any)
	group, _ := spec["group"].(string)
	names, _ := spec["names"].(map[string]any)
	kind, _ := names["kind"].(string)
	versions, _ := spec["versions"].([]any)
	if group == "" || kind == "" {
		return nil, fmt.Errorf("a CustomResourceDefinition without spec.group or spec.names.kind")
	}
	schemas := map[string]any{}
	for _, v := range versions {
		v, _ := v.(map[string]any)
		name, _ := v["name"].(string)
		sch, _ := v["schema"].(map[string]any)
		root, _ := sch["openAPIV3Schema"].(map[string]any)
		if name == "" || root == nil {
			continue
		}
		root = deepCopy(root).(map[string]any)
		withObjectFields(root)
		root["x-kubernetes-group-version-kind"] = []any{map[string]any{"group": group, "version": name, "kind": kind}}
		schemas[group+"."+name+"."+kind] = root
	}
	return json.Marshal(map[string]any{"openapi": "3.0.0", "components": map[string]any{"schemas": schemas}})
}

// withObjectFields declares apiVersion, kind and metadata on an object's schema (the
// server adds them to a definition's root and to every embedded resource), and walks on.
func withObjectFields(s map[string]any) {
	addObjectFields(s)
	walkSchema(s, func(n map[string]any) {
		if n["x-kubernetes-embedded-resource"] == true {
			addObjectFields(n)
		}
	})
}

func addObjectFields(s map[string]any) {
	props, _ := s["properties"].(map[string]any)
	if props == nil {
		if s["x-kubernetes-preserve-unknown-fields"] == true {
			return // everything is declared already
		}
		props = map[string]any{}
		s["properties"] = props
	}
	for _, f := range []string{"apiVersion", "kind"} {
		if _, ok := props[f]; !ok {
			props[f] = map[string]any{"type": "string"}
		}
	}
	props["metadata"] = map[string]any{"type": "object", "x-kubernetes-preserve-unknown-fields": true}
}

// walkSchema calls fn on every schema below s (properties, items, additionalProperties,
// and the alternatives of allOf, anyOf, oneOf).
func walkSchema(s map[string]any, fn func(map[string]any)) {
	visit := func(v any) {
		if m, ok := v.(map[string]any); ok {
			fn(m)
			walkSchema(m, fn)
		}
	}
	if props, ok := s["properties"].(map[string]any); ok {
		for _, p := range props {
			visit(p)
		}
	}
	visit(s["items"])
	visit(s["additionalProperties"])
	for _, k := range []string{"allOf", "anyOf", "oneOf"} {
		if l, ok := s[k].([]any); ok {
			for _, v := range l {
				visit(v)
			}
		}
	}
}

func deepCopy(v any) any {
	switch v := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, x := range v {
			out[k] = deepCopy(x)
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, x := range v {
			out[i] = deepCopy(x)
		}
		return out
	}
	return v
}
