package store

import (
	"context"
	"maps"
	"testing"
)

// FerretDB 1.x skips a $set whose embedded document has the old one's values under other
// keys: a resource's fields renamed, their values kept, must be stored all the same.
func TestFieldsRenamedWithTheSameValuesAreStored(t *testing.T) {
	forEachBackend(t, "", func(t *testing.T, s *Store) {
		ctx := context.Background()
		d := doc("/p", "")
		d.Fields = map[string]string{"a": "1"}
		if err := s.Create(ctx, d); err != nil {
			t.Fatal(err)
		}
		d.Fields = map[string]string{"b": "1"}
		if err := s.Update(ctx, d); err != nil {
			t.Fatal(err)
		}
		got, err := s.Get(ctx, "/p")
		if err != nil {
			t.Fatal(err)
		}
		if !maps.Equal(got.Fields, map[string]string{"b": "1"}) {
			t.Errorf("fields %v, want b=1", got.Fields)
		}
	})
}
