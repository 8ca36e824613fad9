package controllers

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/temco/temco/internal/core/model"
	"github.com/temco/temco/internal/core/store"
)

// Docs is what controllers read of the resource store.
type Docs interface {
	Get(ctx context.Context, id string) (*store.Doc, error)
	List(ctx context.Context, q store.Query) ([]*store.Doc, error)
}

// Named is a stored intent's name and spec.
type Named[S any] struct {
	Name string
	Spec S
}

// List reads records in the order they were created, as EMCO reads them from MongoDB
// (its natural order is insertion order); records created at the same moment by name.
func List[S any](ctx context.Context, st Docs, q store.Query) ([]Named[S], error) {
	docs, err := st.List(ctx, q)
	if err != nil {
		return nil, fmt.Errorf("read %ss of %s: %w", q.Kind, q.Parent, err)
	}
	slices.SortStableFunc(docs, func(a, b *store.Doc) int {
		return cmp.Or(a.Created.Compare(b.Created), strings.Compare(a.Name, b.Name))
	})
	out := make([]Named[S], len(docs))
	for i, d := range docs {
		r, err := model.Decode[S](d.Body)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", d.ID, err)
		}
		out[i] = Named[S]{Name: d.Name, Spec: r.Spec}
	}
	return out, nil
}
