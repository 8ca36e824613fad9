package kubeschema

import (
	"encoding/json"
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// doc is a small OpenAPI v3 group-version document shaped as an API server publishes one:
// a kind with declared fields, a string map (labels), a list of objects, a free-form
// subtree (x-kubernetes-preserve-unknown-fields) and an object without properties.
const doc = `{"openapi": "3.0.0", "components": {"schemas": {
  "example.v1.Widget": {
    "type": "object",
    "x-kubernetes-group-version-kind": [{"group": "example.com", "version": "v1", "kind": "Widget"}],
    "properties": {
      "apiVersion": {"type": "string"}, "kind": {"type": "string"},
      "metadata": {"allOf": [{"$ref": "#/components/schemas/example.v1.Meta"}]},
      "spec": {"type": "object", "properties": {
        "size": {"type": "integer"},
        "parts": {"type": "array", "items": {"allOf": [{"$ref": "#/components/schemas/example.v1.Part"}]}},
        "config": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
        "raw": {"type": "object"}
      }}
    }
  },
  "example.v1.Meta": {"type": "object", "properties": {
    "name": {"type": "string"},
    "labels": {"type": "object", "additionalProperties": {"type": "string"}}
  }},
  "example.v1.Part": {"type": "object", "properties": {"name": {"type": "string"}}}
}}}`

var widget = schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Widget"}

func TestPruneDropsWhatTheSchemaDoesNotDeclare(t *testing.T) {
	s, err := Parse([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	var obj map[string]any
	if err := json.Unmarshal([]byte(`{"apiVersion": "example.com/v1", "kind": "Widget",
	  "metadata": {"name": "w", "labels": {"any": "label"}, "stray": 1},
	  "spec": {"size": 3, "replicas": 2,
	    "parts": [{"name": "a"}, {"name": "b", "colour": "red", "extra": {"x": 1}}],
	    "config": {"anything": {"goes": [1, 2]}}, "raw": {"free": "form"}},
	  "extra": true}`), &obj); err != nil {
		t.Fatal(err)
	}
	dropped := s.Prune(widget, obj)
	want := []string{"extra", "metadata.stray", "spec.parts[1].colour", "spec.parts[1].extra", "spec.replicas"}
	if !slices.Equal(dropped, want) {
		t.Errorf("dropped %v, want %v", dropped, want)
	}
	got, _ := json.Marshal(obj)
	const kept = `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"labels":{"any":"label"},"name":"w"},` +
		`"spec":{"config":{"anything":{"goes":[1,2]}},"parts":[{"name":"a"},{"name":"b"}],"raw":{"free":"form"},"size":3}}`
	if string(got) != kept {
		t.Errorf("pruned object\n%s\nwant\n%s", got, kept)
	}
}

func TestPruneLeavesKindsItDoesNotKnowAndWrongTypesAlone(t *testing.T) {
	s, err := Parse([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	other := map[string]any{"spec": map[string]any{"anything": 1}}
	if d := s.Prune(schema.GroupVersionKind{Group: "example.com", Version: "v2", Kind: "Widget"}, other); d != nil || len(other["spec"].(map[string]any)) != 1 {
		t.Errorf("an unknown kind was pruned: %v %v", d, other)
	}
	if s.Knows(schema.GroupVersionKind{Group: "example.com", Version: "v2", Kind: "Widget"}) || !s.Knows(widget) {
		t.Error("Knows is wrong")
	}
	// spec is a string here: the API server reports the type; nothing is dropped.
	wrong := map[string]any{"spec": "not an object", "metadata": []any{"not", "a", "map"}}
	if d := s.Prune(widget, wrong); len(d) != 0 || wrong["spec"] != "not an object" {
		t.Errorf("a value of the wrong type was pruned: %v %v", d, wrong)
	}
}

func TestParseRefusesWhatIsNotAnOpenAPIDocument(t *testing.T) {
	if _, err := Parse([]byte(`not json`)); err == nil {
		t.Error("Parse accepted a document that is not JSON")
	}
	s, err := Parse([]byte(`{"openapi": "3.0.0"}`))
	if err != nil || s.Knows(widget) {
		t.Errorf("a document without components: %v", err)
	}
}

func TestCRDDocumentPrunesAsTheDefinitionDeclares(t *testing.T) {
	var crd map[string]any
	if err := json.Unmarshal([]byte(`{"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
	  "metadata": {"name": "gadgets.wild.example.com"},
	  "spec": {"group": "wild.example.com", "names": {"kind": "Gadget", "plural": "gadgets"}, "scope": "Namespaced",
	    "versions": [{"name": "v1", "served": true, "storage": true, "schema": {"openAPIV3Schema": {"type": "object",
	      "properties": {"spec": {"type": "object", "properties": {
	        "size": {"type": "integer"},
	        "template": {"type": "object", "x-kubernetes-embedded-resource": true, "properties": {"data": {"type": "string"}}},
	        "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}}}}}]}}`), &crd); err != nil {
		t.Fatal(err)
	}
	doc, err := CRDDocument(crd)
	if err != nil {
		t.Fatal(err)
	}
	s, err := Parse(doc)
	if err != nil {
		t.Fatal(err)
	}
	var obj map[string]any
	if err := json.Unmarshal([]byte(`{"apiVersion": "wild.example.com/v1", "kind": "Gadget",
	  "metadata": {"name": "g", "labels": {"a": "b"}},
	  "spec": {"size": 3, "colour": "red", "free": {"x": 1},
	    "template": {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": "d", "extra": 1}},
	  "status": {"ok": true}}`), &obj); err != nil {
		t.Fatal(err)
	}
	gadget := schema.GroupVersionKind{Group: "wild.example.com", Version: "v1", Kind: "Gadget"}
	if got, want := s.Prune(gadget, obj), []string{"spec.colour", "spec.template.extra", "status"}; !slices.Equal(got, want) {
		t.Errorf("dropped %v, want %v", got, want)
	}
	if _, err := CRDDocument(map[string]any{"spec": map[string]any{}}); err == nil {
		t.Error("a definition without group and kind was taken")
	}
}
