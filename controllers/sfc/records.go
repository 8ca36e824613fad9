package sfc

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/temco/temco/internal/model"
	"github.com/temco/temco/internal/store"
)

// Docs is what sfc and sfcclient read of the resource store.
type Docs interface {
	Get(ctx context.Context, id string) (*store.Doc, error)
	List(ctx context.Context, q store.Query) ([]*store.Doc, error)
}

// loadChains reads the DIG's network chains with their links, client selectors and
// provider networks.
func loadChains(ctx context.Context, st Docs, dig string) ([]chain, error) {
	chains, err := List[ChainSpec](ctx, st, store.Query{Parent: dig, Kind: KindChain})
	if err != nil {
		return nil, err
	}
	out := make([]chain, len(chains))
	for i, c := range chains {
		id := ChainID(dig, c.Name)
		out[i] = chain{Name: c.Name, Spec: c.Spec}
		if out[i].Links, err = List[LinkSpec](ctx, st, store.Query{Parent: id, Kind: KindLink}); err != nil {
			return nil, err
		}
		if out[i].Selectors, err = List[ClientSelectorSpec](ctx, st, store.Query{Parent: id, Kind: KindClientSelector}); err != nil {
			return nil, err
		}
		if out[i].Networks, err = List[ProviderNetworkSpec](ctx, st, store.Query{Parent: id, Kind: KindProviderNetwork}); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// ClientSelectors returns the client selectors of one end of the chain whose id is
// chainID, in creation order; none when the chain does not exist.
func ClientSelectors(ctx context.Context, st Docs, chainID, end string) ([]Named[ClientSelectorSpec], error) {
	return List[ClientSelectorSpec](ctx, st, store.Query{Parent: chainID, Kind: KindClientSelector,
		Fields: map[string]string{FieldChainEnd: end}})
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
