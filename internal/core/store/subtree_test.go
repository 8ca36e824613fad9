package store

import (
	"context"
	"slices"
	"testing"
)

// A subtree is every committed document below a prefix, in _id order: not the prefix
// itself, not a sibling whose name begins the same, not another project's.
func TestSubtreeIsWhatLiesBelowAPrefix(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	for _, id := range []string{"/projects/p", "/projects/p/apps", "/projects/p/apps/a", "/projects/p/apps/a/x",
		"/projects/p/apps/b", "/projects/p/appsx", "/projects/p/appsx/c", "/projects/q", "/projects/q/apps", "/projects/q/apps/a"} {
		d := &Doc{ID: id, Parent: parentOfID(id), Scope: topOf(id), Kind: "k", Name: id, Body: `{}`}
		if err := s.Create(ctx, d); err != nil {
			t.Fatal(err)
		}
	}
	docs, err := s.Subtree(ctx, "/projects/p/apps")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, d := range docs {
		got = append(got, d.ID)
	}
	if want := []string{"/projects/p/apps/a", "/projects/p/apps/a/x", "/projects/p/apps/b"}; !slices.Equal(got, want) {
		t.Errorf("subtree %v, want %v", got, want)
	}
}

// parentOfID is the document above id ("" at the top, "/projects/p").
func parentOfID(id string) string {
	i := len(id) - 1
	for i > 0 && id[i] != '/' {
		i--
	}
	if topOf(id) == id {
		return ""
	}
	return id[:i]
}

// topOf is the API's scope of id: its top-level ancestor.
func topOf(id string) string {
	n := 0
	for i, r := range id {
		if r == '/' {
			if n++; n == 3 {
				return id[:i]
			}
		}
	}
	return id
}
