package store

import (
	"context"
	"slices"
	"testing"
	"time"
)

// Keyset pages: Limit and After are applied by the database after the parent, kind, IDs
// and visibility filters, so pages never hold another parent's documents or a pending
// one, and following the last _id walks the whole list once.
func TestListPagesByIDWithinTheQuery(t *testing.T) {
	forEachBackend(t, "", func(t *testing.T, s *Store) {
		ctx := context.Background()
		for _, id := range []string{"/p", "/q"} {
			if err := s.Create(ctx, doc(id, "")); err != nil {
				t.Fatal(err)
			}
		}
		for _, id := range []string{"/p/e", "/p/a", "/p/c", "/p/b", "/p/d", "/q/a0", "/q/z"} {
			if err := s.Create(ctx, doc(id, id[:2])); err != nil {
				t.Fatal(err)
			}
		}
		fresh := time.Now().UTC()
		if _, err := s.coll.InsertOne(ctx, &Doc{ID: "/p/bb", Parent: "/p", Kind: "k", PendingSince: &fresh}); err != nil {
			t.Fatal(err)
		}
		ids := func(q Query) []string {
			t.Helper()
			docs, err := s.List(ctx, q)
			if err != nil {
				t.Fatal(err)
			}
			out := []string{}
			for _, d := range docs {
				out = append(out, d.ID)
			}
			return out
		}
		var walked []string
		for after := ""; ; {
			page := ids(Query{Parent: "/p", Kind: "k", Limit: 2, After: after})
			if len(page) == 0 {
				break
			}
			if len(page) > 2 {
				t.Fatalf("page %v is over the limit of 2", page)
			}
			walked, after = append(walked, page...), page[len(page)-1]
		}
		if want := []string{"/p/a", "/p/b", "/p/c", "/p/d", "/p/e"}; !slices.Equal(walked, want) {
			t.Errorf("pages walked %v, want %v", walked, want)
		}
		// An _id of another parent as the start point reveals nothing of that parent.
		if got := ids(Query{Parent: "/p", Kind: "k", After: "/q/a0"}); len(got) != 0 {
			t.Errorf("after /q/a0 under /p: %v, want none", got)
		}
		if got := ids(Query{Parent: "/p", Kind: "k", After: "/o"}); len(got) != 5 {
			t.Errorf("after /o under /p: %v, want all five", got)
		}
		// After composes with IDs.
		if got := ids(Query{Parent: "/p", Kind: "k", IDs: []string{"/p/a", "/p/d", "/q/z"}, After: "/p/a", Limit: 5}); !slices.Equal(got, []string{"/p/d"}) {
			t.Errorf("IDs after /p/a: %v, want [/p/d]", got)
		}
	})
}
