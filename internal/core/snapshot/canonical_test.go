package snapshot

import (
	"encoding/json"
	"testing"
)

// Canonical JSON depends on what a value means, never on how it was written: key order,
// whitespace, number spelling and HTML-safe escapes all encode to the same bytes.
func TestCanonicalEncodesEqualValuesAlike(t *testing.T) {
	for _, tc := range []struct {
		name, in, want string
	}{
		{"keys sorted at every depth", `{"b":1,"a":{"d":[{"z":1,"y":2}],"c":null}}`, `{"a":{"c":null,"d":[{"y":2,"z":1}]},"b":1}`},
		{"whitespace dropped", "{ \"a\" : [ 1 , true , false ] }", `{"a":[1,true,false]}`},
		{"integers in one spelling", `[1.0, 1e2, -0, 100E-2, 12345678901234]`, `[1,100,0,1,12345678901234]`},
		{"fractions in their shortest form", `[0.50, 1.25e-1, 1e300]`, `[0.5,0.125,1e+300]`},
		{"no HTML escapes", `{"a":"<b>&amp;</b>"}`, `{"a":"<b>&amp;</b>"}`},
		{"escapes JSON requires kept", `{"a":"quote \" backslash \\ newline \n"}`, `{"a":"quote \" backslash \\ newline \n"}`},
		{"keys by bytes, not by case", `{"b":1,"B":2,"a":3}`, `{"B":2,"a":3,"b":1}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Canonical(json.RawMessage(tc.in))
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tc.want {
				t.Errorf("Canonical(%s)\n= %s\nwant %s", tc.in, got, tc.want)
			}
		})
	}
}

// A snapshot's id is its content's: the same document, whatever order its resources
// were added in, has the same id; one changed field gives another.
func TestIDDependsOnContentOnly(t *testing.T) {
	a := Document{DIG: "/d", Resources: map[string]Resource{
		"/d/x": {Kind: "k", Spec: json.RawMessage(`{"n":1,"m":"v"}`)},
		"/d/y": {Kind: "k", Blob: "sha256:00"},
	}}
	b := Document{DIG: "/d", Resources: map[string]Resource{
		"/d/y": {Kind: "k", Blob: "sha256:00"},
		"/d/x": {Kind: "k", Spec: json.RawMessage(`{"m": "v", "n": 1.0}`)},
	}}
	c := Document{DIG: "/d", Resources: map[string]Resource{
		"/d/y": {Kind: "k", Blob: "sha256:00"},
		"/d/x": {Kind: "k", Spec: json.RawMessage(`{"m": "v", "n": 2}`)},
	}}
	id := func(d Document) string {
		data, err := Canonical(d)
		if err != nil {
			t.Fatal(err)
		}
		return IDOf(data)
	}
	if id(a) != id(b) {
		t.Errorf("the same configuration written otherwise has ids %s and %s", id(a), id(b))
	}
	if id(a) == id(c) {
		t.Errorf("a changed field kept the id %s", id(a))
	}
	if !ValidID(id(a)) {
		t.Errorf("id %q is not 16 hex digits", id(a))
	}
	for _, bad := range []string{"", "0123456789abcde", "0123456789abcdef0", "0123456789ABCDEF", "0123456789abcdeg"} {
		if ValidID(bad) {
			t.Errorf("ValidID(%q) = true", bad)
		}
	}
}

// Canonical JSON round-trips: parsing it and encoding it again gives the same bytes.
func TestParseKeepsTheCanonicalForm(t *testing.T) {
	doc := Document{DIG: "/d", Resources: map[string]Resource{
		"/d/x": {Kind: "k", Metadata: json.RawMessage(`{"name":"x"}`), Spec: json.RawMessage(`{"values":{"a.b":"1"}}`), Sealed: "sha256:ff"},
	}}
	data, err := Canonical(doc)
	if err != nil {
		t.Fatal(err)
	}
	back, err := Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	again, err := Canonical(back)
	if err != nil {
		t.Fatal(err)
	}
	if string(again) != string(data) {
		t.Errorf("round trip changed the document:\n%s\n%s", data, again)
	}
}
