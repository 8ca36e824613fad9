package snapshot

import (
	"encoding/json"
	"reflect"
	"testing"
)

func docOf(specs map[string]string) Document {
	d := Document{DIG: "/dig", Resources: map[string]Resource{}}
	for id, spec := range specs {
		d.Resources[id] = Resource{Kind: "k", Spec: json.RawMessage(spec)}
	}
	return d
}

// change builds an expected Change, its values as Diff gives them (numbers as
// json.Number).
func change(resource, path, op string, from, to any) Change {
	num := func(v any) any {
		if n, ok := v.(int); ok {
			b, _ := json.Marshal(n)
			return json.Number(b)
		}
		return v
	}
	return Change{Resource: resource, Path: path, Op: op, From: num(from), To: num(to)}
}

func TestDiff(t *testing.T) {
	for _, tc := range []struct {
		name     string
		from, to map[string]string
		want     []Change
	}{
		{name: "equal documents: no change",
			from: map[string]string{"/a": `{"x":1,"y":[1,2]}`}, to: map[string]string{"/a": `{"y":[1,2],"x":1.0}`},
			want: []Change{}},
		{name: "a scalar changed",
			from: map[string]string{"/a": `{"intent":{"allOf":[{"cluster":"c1"}]}}`},
			to:   map[string]string{"/a": `{"intent":{"allOf":[{"cluster":"c2"}]}}`},
			want: []Change{change("/a", "spec.intent.allOf[0].cluster", Changed, "c1", "c2")}},
		{name: "fields added and removed, in key order",
			from: map[string]string{"/a": `{"b":1,"c":{"d":true}}`},
			to:   map[string]string{"/a": `{"a":"new","c":{}}`},
			want: []Change{
				change("/a", "spec.a", Added, nil, "new"),
				change("/a", "spec.b", Removed, 1, nil),
				change("/a", "spec.c.d", Removed, true, nil),
			}},
		{name: "lists by position, extra elements at the end",
			from: map[string]string{"/a": `{"l":[1,2,3]}`},
			to:   map[string]string{"/a": `{"l":[1,5]}`},
			want: []Change{change("/a", "spec.l[1]", Changed, 2, 5), change("/a", "spec.l[2]", Removed, 3, nil)}},
		{name: "a list grown",
			from: map[string]string{"/a": `{"l":[]}`},
			to:   map[string]string{"/a": `{"l":["x"]}`},
			want: []Change{change("/a", "spec.l[0]", Added, nil, "x")}},
		{name: "a value of another type",
			from: map[string]string{"/a": `{"v":{"k":"1"}}`},
			to:   map[string]string{"/a": `{"v":"1"}`},
			want: []Change{change("/a", "spec.v", Changed, map[string]any{"k": "1"}, "1")}},
		{name: "keys that are not plain names are quoted",
			from: map[string]string{"/a": `{"values":{"app.kubernetes.io/name":"a"}}`},
			to:   map[string]string{"/a": `{"values":{"app.kubernetes.io/name":"b"}}`},
			want: []Change{change("/a", `spec.values["app.kubernetes.io/name"]`, Changed, "a", "b")}},
		{name: "whole resources added and removed, by id",
			from: map[string]string{"/a": `{}`, "/b": `{"x":1}`},
			to:   map[string]string{"/a": `{}`, "/c": `{"y":2}`},
			want: []Change{
				change("/b", "", Removed, map[string]any{"kind": "k", "spec": map[string]any{"x": json.Number("1")}}, nil),
				change("/c", "", Added, nil, map[string]any{"kind": "k", "spec": map[string]any{"y": json.Number("2")}}),
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Diff(docOf(tc.from), docOf(tc.to))
			if !reflect.DeepEqual(got, tc.want) {
				g, _ := json.Marshal(got)
				w, _ := json.Marshal(tc.want)
				t.Errorf("Diff\n= %s\nwant %s", g, w)
			}
		})
	}
}

// A changed archive shows as its digest, the only trace of its bytes in a snapshot.
func TestDiffNamesAChangedBlobByDigest(t *testing.T) {
	from := Document{Resources: map[string]Resource{"/apps/web": {Kind: "app", Blob: "sha256:aa"}}}
	to := Document{Resources: map[string]Resource{"/apps/web": {Kind: "app", Blob: "sha256:bb"}}}
	want := []Change{{Resource: "/apps/web", Path: "blob", Op: Changed, From: "sha256:aa", To: "sha256:bb"}}
	if got := Diff(from, to); !reflect.DeepEqual(got, want) {
		t.Errorf("Diff = %+v, want %+v", got, want)
	}
}
