package dtc

import (
	"context"
	"fmt"

	"github.com/temco/temco/api"
	"github.com/temco/temco/contract"
	"github.com/temco/temco/controllers"
	"github.com/temco/temco/internal/core/lifecycle"
	"github.com/temco/temco/internal/core/seal"
	"github.com/temco/temco/internal/core/store"
)

// TrafficGroup is a traffic group intent with everything below it, each list in creation
// order (EMCO: database order).
type TrafficGroup struct {
	Name    string
	Inbound []Inbound
}

// Inbound is an inbound intent with its clients.
type Inbound struct {
	ID   string // store id, for PrivateKey
	Name string
	Spec InboundSpec // ExternalCerts.ServicePrivateKey is the mask when a key is stored
	// Clients may reach the server.
	Clients []Client
}

// Client is a client of an inbound intent with its access points.
type Client struct {
	Name         string
	Spec         ClientSpec
	AccessPoints []controllers.Named[AccessPointSpec]
}

// DIG is the store id of the DIG a sub-controller runs for.
func DIG(in contract.Input) string {
	return lifecycle.Target{Project: in.Project, CompositeApp: in.CompositeApp, Version: in.CompositeAppVersion,
		DIG: in.DeploymentIntentGroup}.ID()
}

// Load reads the traffic group intent a sub-controller runs for (in.Intent); one the DIG
// does not have is refused.
func Load(ctx context.Context, st controllers.Docs, in contract.Input) (*TrafficGroup, error) {
	id := DIG(in) + groupsPrefix + in.Intent
	if _, err := st.Get(ctx, id); store.CodeOf(err) == store.ErrNotFound {
		return nil, contract.Refuse("the DIG's intents name traffic group intent %q for dtc, which the DIG does not have", in.Intent)
	} else if err != nil {
		return nil, err
	}
	inbound, err := controllers.List[InboundSpec](ctx, st, store.Query{Parent: id, Kind: KindInbound})
	if err != nil {
		return nil, err
	}
	g := &TrafficGroup{Name: in.Intent, Inbound: make([]Inbound, len(inbound))}
	for i, isi := range inbound {
		isiID := id + "/inbound-intents/" + isi.Name
		g.Inbound[i] = Inbound{ID: isiID, Name: isi.Name, Spec: isi.Spec}
		clients, err := controllers.List[ClientSpec](ctx, st, store.Query{Parent: isiID, Kind: KindClient})
		if err != nil {
			return nil, err
		}
		for _, c := range clients {
			aps, err := controllers.List[AccessPointSpec](ctx, st, store.Query{Parent: isiID + "/clients/" + c.Name, Kind: KindAccessPoint})
			if err != nil {
				return nil, err
			}
			g.Inbound[i].Clients = append(g.Inbound[i].Clients, Client{Name: c.Name, Spec: c.Spec, AccessPoints: aps})
		}
	}
	return g, nil
}

const groupsPrefix = groupsPath + "/"

// PrivateKey opens the external service's private key stored with an inbound intent (nil
// when none was sent).
func PrivateKey(ctx context.Context, st controllers.Docs, keys *seal.Keyring, isi Inbound) ([]byte, error) {
	d, err := st.Get(ctx, isi.ID)
	if err != nil {
		return nil, err
	}
	key, err := api.OpenSealed(keys, d)
	if err != nil {
		return nil, fmt.Errorf("open the private key of inbound intent %s: %w", isi.Name, err)
	}
	return key, nil
}
