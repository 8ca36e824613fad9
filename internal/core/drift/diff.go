// Package drift compares a live Kubernetes object with the manifest temco applied: which
// fields the manifest sets that the live object no longer has as set. It is plain data in,
// plain data out (no I/O), so the rules are tested case by case.
//
// What counts: every field the manifest sets, at any depth, except status and
// server-managed metadata (only metadata's name, namespace, labels and annotations are
// compared). What does not: fields only the live object has (defaults, other managers'
// fields), and null or empty values in the manifest (server-side apply sets nothing for
// them). Lists of objects that all have a name are matched by name, other lists of
// objects by position; lists of scalars are compared whole. Numbers compare by value and
// resource quantities by amount ("0.5" = "500m"). A Secret's data is compared (its
// stringData as the data it becomes) but its values are never reported.
package drift

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
)

// Field is one field the manifest sets that the live object does not have as set.
type Field struct {
	Path string `json:"path" bson:"path"` // e.g. spec.template.spec.containers[name=main].image
	// Live and Desired are JSON values; Live is empty when the live object lacks the
	// field. Both are empty when Redacted (a Secret's data).
	Live     string `json:"live,omitempty" bson:"live,omitempty"`
	Desired  string `json:"desired,omitempty" bson:"desired,omitempty"`
	Redacted bool   `json:"redacted,omitempty" bson:"redacted,omitempty"`
}

// maxValue bounds a reported value: a drift report names what changed, it is no copy of
// the object.
const maxValue = 512

// comparedMetadata are the metadata fields a manifest sets and the server leaves alone.
var comparedMetadata = []string{"name", "namespace", "labels", "annotations"}

// Compare lists the fields desired (a manifest temco applied) sets that live (the object
// as read from its cluster) does not have as set, sorted by path.
func Compare(desired, live map[string]any) []Field {
	secret := desired["kind"] == "Secret"
	if secret {
		desired = secretData(desired)
	}
	var out []Field
	for _, k := range sortedKeys(desired) {
		switch k {
		case "apiVersion", "kind", "status":
			continue
		case "metadata":
			dm, _ := desired[k].(map[string]any)
			lm, _ := live[k].(map[string]any)
			for _, mk := range comparedMetadata {
				if v, ok := dm[mk]; ok {
					lv, present := lm[mk]
					out = compare(out, join("metadata", mk), v, lv, present)
				}
			}
			continue
		}
		lv, present := live[k]
		out = compare(out, join("", k), desired[k], lv, present)
	}
	if secret {
		for i, f := range out {
			if f.Path == "data" || strings.HasPrefix(f.Path, "data.") || strings.HasPrefix(f.Path, "data[") {
				out[i] = Field{Path: f.Path, Redacted: true}
			}
		}
	}
	slices.SortStableFunc(out, func(a, b Field) int { return strings.Compare(a.Path, b.Path) })
	return out
}

// compare appends the differences of one desired value at path.
func compare(out []Field, path string, desired, live any, present bool) []Field {
	if isEmpty(desired) {
		return out
	}
	if !present || live == nil {
		return append(out, Field{Path: path, Desired: show(desired)})
	}
	switch d := desired.(type) {
	case map[string]any:
		l, ok := live.(map[string]any)
		if !ok {
			return append(out, Field{Path: path, Live: show(live), Desired: show(desired)})
		}
		for _, k := range sortedKeys(d) {
			lv, has := l[k]
			out = compare(out, join(path, k), d[k], lv, has)
		}
		return out
	case []any:
		l, ok := live.([]any)
		if !ok {
			return append(out, Field{Path: path, Live: show(live), Desired: show(desired)})
		}
		return compareList(out, path, d, l)
	}
	if !equalScalar(desired, live) {
		return append(out, Field{Path: path, Live: show(live), Desired: show(desired)})
	}
	return out
}

// compareList matches list elements: objects by name when all have one, else by position;
// a list of scalars is one value.
func compareList(out []Field, path string, desired, live []any) []Field {
	if !allObjects(desired) {
		if !equalList(desired, live) {
			out = append(out, Field{Path: path, Live: show(live), Desired: show(desired)})
		}
		return out
	}
	if named(desired) {
		for _, d := range desired {
			name := d.(map[string]any)["name"].(string)
			i := slices.IndexFunc(live, func(l any) bool { m, ok := l.(map[string]any); return ok && m["name"] == name })
			if i < 0 {
				out = compare(out, fmt.Sprintf("%s[name=%s]", path, name), d, nil, false)
				continue
			}
			out = compare(out, fmt.Sprintf("%s[name=%s]", path, name), d, live[i], true)
		}
		return out
	}
	for i, d := range desired {
		at := fmt.Sprintf("%s[%d]", path, i)
		if i >= len(live) {
			out = compare(out, at, d, nil, false)
			continue
		}
		out = compare(out, at, d, live[i], true)
	}
	return out
}

func allObjects(l []any) bool {
	for _, e := range l {
		if _, ok := e.(map[string]any); !ok {
			return false
		}
	}
	return len(l) > 0
}

func named(l []any) bool {
	for _, e := range l {
		if n, ok := e.(map[string]any)["name"].(string); !ok || n == "" {
			return false
		}
	}
	return true
}

func equalList(desired, live []any) bool {
	if len(desired) != len(live) {
		return false
	}
	for i := range desired {
		if !equalScalar(desired[i], live[i]) {
			return false
		}
	}
	return true
}

// equalScalar compares two leaf values: numbers by value, strings also as resource
// quantities (the server writes "0.5" back as "500m").
func equalScalar(desired, live any) bool {
	if a, ok := number(desired); ok {
		b, ok := number(live)
		return ok && a == b
	}
	ds, dok := desired.(string)
	ls, lok := live.(string)
	if dok && lok {
		if ds == ls {
			return true
		}
		dq, err1 := resource.ParseQuantity(ds)
		lq, err2 := resource.ParseQuantity(ls)
		return err1 == nil && err2 == nil && dq.Cmp(lq) == 0
	}
	// Anything else (bools, nested values in a scalar list): as JSON.
	return show(desired) == show(live)
}

func number(v any) (float64, bool) {
	switch n := v.(type) {
	case float64:
		return n, true
	case float32:
		return float64(n), true
	case int:
		return float64(n), true
	case int32:
		return float64(n), true
	case int64:
		return float64(n), true
	case json.Number:
		f, err := n.Float64()
		return f, err == nil
	}
	return 0, false
}

// isEmpty: a value server-side apply does not set (null, {} or []).
func isEmpty(v any) bool {
	switch x := v.(type) {
	case nil:
		return true
	case map[string]any:
		return len(x) == 0
	case []any:
		return len(x) == 0
	}
	return false
}

// secretData is a Secret manifest with its stringData turned into the data it becomes on
// the server (base64, overriding data's keys of the same name).
func secretData(m map[string]any) map[string]any {
	sd, ok := m["stringData"].(map[string]any)
	if !ok {
		return m
	}
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	data := map[string]any{}
	if d, ok := m["data"].(map[string]any); ok {
		for k, v := range d {
			data[k] = v
		}
	}
	for k, v := range sd {
		if s, ok := v.(string); ok {
			data[k] = base64.StdEncoding.EncodeToString([]byte(s))
		}
	}
	out["data"] = data
	delete(out, "stringData")
	return out
}

// join appends map key k to path: .k, or ["k"] when k has dots or brackets (labels such
// as app.kubernetes.io/name).
func join(path, k string) string {
	if strings.ContainsAny(k, ".[]\"") {
		b, _ := json.Marshal(k)
		return path + "[" + string(b) + "]"
	}
	if path == "" {
		return k
	}
	return path + "." + k
}

// show is v as JSON, cut at maxValue.
func show(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	if len(b) > maxValue {
		return string(b[:maxValue]) + "…"
	}
	return string(b)
}

func sortedKeys(m map[string]any) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}
