package sfc

import (
	"context"

	"github.com/temco/temco/controllers"
	"github.com/temco/temco/internal/core/store"
)

// Docs is what sfc and sfcclient read of the resource store.
type Docs = controllers.Docs

// loadChains reads the DIG's network chains with their links, client selectors and
// provider networks.
func loadChains(ctx context.Context, st Docs, dig string) ([]chain, error) {
	chains, err := controllers.List[ChainSpec](ctx, st, store.Query{Parent: dig, Kind: KindChain})
	if err != nil {
		return nil, err
	}
	out := make([]chain, len(chains))
	for i, c := range chains {
		id := ChainID(dig, c.Name)
		out[i] = chain{Name: c.Name, Spec: c.Spec}
		if out[i].Links, err = controllers.List[LinkSpec](ctx, st, store.Query{Parent: id, Kind: KindLink}); err != nil {
			return nil, err
		}
		if out[i].Selectors, err = controllers.List[ClientSelectorSpec](ctx, st, store.Query{Parent: id, Kind: KindClientSelector}); err != nil {
			return nil, err
		}
		if out[i].Networks, err = controllers.List[ProviderNetworkSpec](ctx, st, store.Query{Parent: id, Kind: KindProviderNetwork}); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// ClientSelectors returns the client selectors of one end of the chain whose id is
// chainID, in creation order; none when the chain does not exist.
func ClientSelectors(ctx context.Context, st Docs, chainID, end string) ([]controllers.Named[ClientSelectorSpec], error) {
	return controllers.List[ClientSelectorSpec](ctx, st, store.Query{Parent: chainID, Kind: KindClientSelector,
		Fields: map[string]string{FieldChainEnd: end}})
}
