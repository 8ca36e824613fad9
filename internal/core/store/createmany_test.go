package store

import (
	"context"
	"fmt"
	"testing"
)

// An import is all or nothing: a document that exists, a parent or reference missing
// outside the import, or a name given twice leaves nothing behind; a parent may be
// another document of the import; what it creates is committed, as Create's.
func TestCreateManyIsAllOrNothing(t *testing.T) {
	forEachBackend(t, "", func(t *testing.T, s *Store) {
		ctx := context.Background()
		if err := s.Create(ctx, doc("/p", "")); err != nil {
			t.Fatal(err)
		}
		if err := s.Create(ctx, doc("/p/taken", "/p")); err != nil {
			t.Fatal(err)
		}
		var docs []*Doc
		for i := range 100 { // 200 documents: an import's lease/2 (15 s) is far off even on a loaded machine
			c := fmt.Sprintf("/p/c%d", i)
			docs = append(docs, doc(c, "/p"), doc(c+"/labels/l", c))
		}
		for _, c := range []struct {
			name  string
			extra *Doc
			want  Code
		}{
			{"exists", doc("/p/taken", "/p"), ErrExists},
			{"named twice", doc("/p/c7", "/p"), ErrExists},
			{"parent missing", doc("/nope/c", "/nope"), ErrParentMissing},
			{"reference missing", doc("/p/r", "/p", "/p/gone"), ErrRefMissing},
		} {
			wantCode(t, s.CreateMany(ctx, append(docs[:len(docs):len(docs)], c.extra)), c.want)
			for _, id := range []string{"/p/c0", "/p/c99/labels/l", "/p/r"} {
				if _, err := s.Get(ctx, id); CodeOf(err) != ErrNotFound {
					t.Fatalf("%s: a refused import left %s behind: %v", c.name, id, err)
				}
			}
		}
		if err := s.CreateMany(ctx, append(docs, doc("/p/r", "/p", "/p/taken", "/p/c1"))); err != nil {
			t.Fatal(err)
		}
		labels, err := s.List(ctx, Query{Parent: "/p/c99", Kind: "k"})
		if err != nil || len(labels) != 1 || labels[0].Rev != 1 || labels[0].PendingSince != nil {
			t.Fatalf("after the import: %+v, %v", labels, err)
		}
		wantCode(t, s.Delete(ctx, "/p/c1"), ErrHasChildren) // committed: a real parent
		wantCode(t, s.Delete(ctx, "/p/taken"), ErrReferenced)
	})
}
