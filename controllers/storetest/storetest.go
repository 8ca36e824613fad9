// Package storetest is an in-memory resource store for controllers' unit tests.
package storetest

import (
	"context"
	"slices"
	"strings"

	"github.com/temco/temco/internal/core/store"
)

// Docs is an in-memory controllers.Docs: documents by ID.
type Docs map[string]*store.Doc

// Get returns the document id, or a store.ErrNotFound error.
func (m Docs) Get(_ context.Context, id string) (*store.Doc, error) {
	if d, ok := m[id]; ok {
		return d, nil
	}
	return nil, &store.Error{Code: store.ErrNotFound, ID: id}
}

// List returns the documents of kind q.Kind under q.Parent whose Fields hold q.Fields,
// sorted by ID as the store does.
func (m Docs) List(_ context.Context, q store.Query) ([]*store.Doc, error) {
	var out []*store.Doc
	for _, d := range m {
		matches := d.Parent == q.Parent && d.Kind == q.Kind
		for k, v := range q.Fields {
			matches = matches && d.Fields[k] == v
		}
		if matches {
			out = append(out, d)
		}
	}
	slices.SortFunc(out, func(a, b *store.Doc) int { return strings.Compare(a.ID, b.ID) })
	return out, nil
}
