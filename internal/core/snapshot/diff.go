package snapshot

import (
	"encoding/json"
	"regexp"
	"slices"
	"strconv"
)

// Change is one difference between two snapshots: a resource added or removed (Path
// empty, the whole resource in To or From), or one field of a resource added, removed
// or changed. Path names the field as spec.intent.allOf[0].cluster; a key that is not a
// plain name is quoted: spec.values["app.kubernetes.io/name"].
type Change struct {
	Resource string `json:"resource"`
	Path     string `json:"path"`
	Op       string `json:"op"`
	From     any    `json:"from,omitempty"`
	To       any    `json:"to,omitempty"`
}

// The operations of a Change.
const (
	Added   = "added"
	Removed = "removed"
	Changed = "changed"
)

// Diff lists what changed from one snapshot to another: by resource id, then field by
// field in key order. Objects are compared key by key; lists position by position (an
// element inserted in front changes every one after it), extra elements added or
// removed at the end; values of different types, or scalars that differ, are changed.
func Diff(from, to Document) []Change {
	ids := make([]string, 0, len(from.Resources)+len(to.Resources))
	for id := range from.Resources {
		ids = append(ids, id)
	}
	for id := range to.Resources {
		if _, ok := from.Resources[id]; !ok {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	changes := []Change{}
	for _, id := range ids {
		a, inFrom := from.Resources[id]
		b, inTo := to.Resources[id]
		switch {
		case !inTo:
			changes = append(changes, Change{Resource: id, Op: Removed, From: generic(a)})
		case !inFrom:
			changes = append(changes, Change{Resource: id, Op: Added, To: generic(b)})
		default:
			changes = compare(changes, id, "", generic(a), generic(b))
		}
	}
	return changes
}

// generic turns a resource into plain JSON values (numbers as json.Number).
func generic(r Resource) any {
	data, err := Canonical(r)
	if err != nil {
		return nil
	}
	v, _ := decode(data)
	return v
}

func compare(changes []Change, id, path string, a, b any) []Change {
	switch a := a.(type) {
	case map[string]any:
		if b, ok := b.(map[string]any); ok {
			keys := make([]string, 0, len(a)+len(b))
			for k := range a {
				keys = append(keys, k)
			}
			for k := range b {
				if _, ok := a[k]; !ok {
					keys = append(keys, k)
				}
			}
			slices.Sort(keys)
			for _, k := range keys {
				av, inA := a[k]
				bv, inB := b[k]
				p := field(path, k)
				switch {
				case !inB:
					changes = append(changes, Change{Resource: id, Path: p, Op: Removed, From: av})
				case !inA:
					changes = append(changes, Change{Resource: id, Path: p, Op: Added, To: bv})
				default:
					changes = compare(changes, id, p, av, bv)
				}
			}
			return changes
		}
	case []any:
		if b, ok := b.([]any); ok {
			for i := range max(len(a), len(b)) {
				p := path + "[" + strconv.Itoa(i) + "]"
				switch {
				case i >= len(b):
					changes = append(changes, Change{Resource: id, Path: p, Op: Removed, From: a[i]})
				case i >= len(a):
					changes = append(changes, Change{Resource: id, Path: p, Op: Added, To: b[i]})
				default:
					changes = compare(changes, id, p, a[i], b[i])
				}
			}
			return changes
		}
	}
	if !equal(a, b) {
		changes = append(changes, Change{Resource: id, Path: path, Op: Changed, From: a, To: b})
	}
	return changes
}

// equal compares two scalars (or values of different kinds, which differ).
func equal(a, b any) bool {
	switch a := a.(type) {
	case json.Number:
		b, ok := b.(json.Number)
		if !ok {
			return false
		}
		na, errA := number(a)
		nb, errB := number(b)
		return errA == nil && errB == nil && na == nb
	case map[string]any, []any:
		return false // b is of another kind: compare would have walked two of a kind
	}
	return a == b
}

var plainKey = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_-]*$`)

// field appends key to path: .key, or ["key"] for a key that is not a plain name.
func field(path, key string) string {
	if !plainKey.MatchString(key) {
		q, _ := json.Marshal(key)
		return path + "[" + string(q) + "]"
	}
	if path == "" {
		return key
	}
	return path + "." + key
}
