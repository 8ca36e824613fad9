package store

import (
	"context"
	"slices"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
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

// Documents written before ancestors (as the code of before wrote them: no anc, no ancv)
// are still in their subtrees, and get their ancestors at their next update.
func TestSubtreeFindsDocumentsWrittenBeforeAncestors(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	ids := []string{"/projects/p", "/projects/p/apps", "/projects/p/apps/a", "/projects/p/apps/a/x", "/projects/p/clouds"}
	for i, id := range ids {
		d := &Doc{ID: id, Parent: parentOfID(id), Scope: topOf(id), Kind: "k", Name: id, Body: `{}`}
		if err := s.Create(ctx, d); err != nil {
			t.Fatal(err)
		}
		if i%2 == 1 { // as written before
			if _, err := s.coll.UpdateOne(ctx, bson.D{{Key: "_id", Value: id}}, bson.D{{Key: "$unset", Value: bson.D{{Key: "anc", Value: ""}, {Key: "ancv", Value: ""}}}}); err != nil {
				t.Fatal(err)
			}
		}
	}
	legacy := func() int {
		n, err := s.coll.CountDocuments(ctx, bson.D{{Key: "ancv", Value: bson.D{{Key: "$ne", Value: int32(1)}}}})
		if err != nil {
			t.Fatal(err)
		}
		return int(n)
	}
	if n := legacy(); n != 2 {
		t.Fatalf("%d documents without ancestors, want 2", n)
	}
	subtree := func(when string) {
		t.Helper()
		docs, err := s.Subtree(ctx, "/projects/p/apps")
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, d := range docs {
			got = append(got, d.ID)
		}
		if want := []string{"/projects/p/apps/a", "/projects/p/apps/a/x"}; !slices.Equal(got, want) {
			t.Errorf("%s: subtree %v, want %v", when, got, want)
		}
	}
	subtree("before any write")
	d, err := s.Get(ctx, "/projects/p/apps/a/x")
	if err != nil {
		t.Fatal(err)
	}
	d.Body = `{"v":2}`
	if err := s.Update(ctx, d); err != nil {
		t.Fatal(err)
	}
	if n := legacy(); n != 1 {
		t.Errorf("%d documents without ancestors after one was updated, want 1", n)
	}
	subtree("after an update")
}
