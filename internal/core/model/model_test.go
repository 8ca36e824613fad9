package model

import (
	"strings"
	"testing"
)

func TestResourceValidateBoundsFreeText(t *testing.T) {
	long := func(n int) string { return strings.Repeat("é", n) } // characters, not bytes
	for _, tc := range []struct {
		name string
		res  Resource[KVSpec]
		want string // "" for valid
	}{
		{"at every limit", Resource[KVSpec]{
			Metadata: Metadata{Name: "r", Description: long(MaxDescriptionLen), UserData1: long(MaxUserDataLen), UserData2: long(MaxUserDataLen)},
			Spec:     KVSpec{KV: []map[string]any{{strings.Repeat("k", MaxKVKeyLen): long(MaxKVValueLen)}}}}, ""},
		{"bad name first", Resource[KVSpec]{Metadata: Metadata{Name: "a/b", Description: long(MaxDescriptionLen + 1)}}, "metadata.name"},
		{"description", Resource[KVSpec]{Metadata: Metadata{Name: "r", Description: long(MaxDescriptionLen + 1)}},
			"metadata.description is 1025 characters long: the limit is 1024"},
		{"userData1", Resource[KVSpec]{Metadata: Metadata{Name: "r", UserData1: long(513)}}, "metadata.userData1 is 513 characters long: the limit is 512"},
		{"userData2", Resource[KVSpec]{Metadata: Metadata{Name: "r", UserData2: long(513)}}, "metadata.userData2 is 513 characters long: the limit is 512"},
		{"kv value", Resource[KVSpec]{Metadata: Metadata{Name: "r"},
			Spec: KVSpec{KV: []map[string]any{{"a": "x"}, {"a": "x", "url": long(129)}}}}, "spec.kv[1].url is 129 characters long: the limit is 128"},
		{"kv key", Resource[KVSpec]{Metadata: Metadata{Name: "r"},
			Spec: KVSpec{KV: []map[string]any{{strings.Repeat("k", 129): "v"}}}}, `spec.kv[0] key "kkkkkkkkkkkkkkkkkkkk"... is 129 characters long: the limit is 128`},
		{"kv values that are not text", Resource[KVSpec]{Metadata: Metadata{Name: "r"},
			Spec: KVSpec{KV: []map[string]any{{"n": 12345, "list": []any{long(200)}}}}}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.res.Validate()
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("error %v, want one saying %q", err, tc.want)
			}
		})
	}
}

// Specs without free text of their own are checked on their metadata alone.
func TestResourceValidateOtherSpecs(t *testing.T) {
	r := Resource[DIGSpec]{Metadata: Metadata{Name: "dig", UserData2: strings.Repeat("x", MaxUserDataLen+1)}}
	if err := r.Validate(); err == nil || !strings.Contains(err.Error(), "metadata.userData2") {
		t.Fatalf("error %v, want metadata.userData2's", err)
	}
	r.Metadata.UserData2 = ""
	if err := r.Validate(); err != nil {
		t.Fatal(err)
	}
}
