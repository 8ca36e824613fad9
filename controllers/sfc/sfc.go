// Package sfc is EMCO's service function chaining action controller: a DIG's
// network-chains describe chains of network functions (the DIG's apps, joined by networks)
// and the clients at either end, and sfc turns each chain into one Nodus NetworkChaining
// object (k8s.plugin.opnfv.org/v1alpha1) on the clusters that run every function of the
// chain, and labels each function's pods with its link label so Nodus finds them.
//
// As in EMCO, sfc works on every network chain of the DIG, whatever intent name the DIG
// gives it, recomputes everything on each instantiate and update, labels the functions'
// pods only on the chain's clusters, and reads records in the order they were created
// (MongoDB's natural order; those created in the same millisecond by name). The
// NetworkChaining's ends are "left" and "right", as Nodus's Go type, which EMCO
// marshals, names them. Where temco departs from EMCO:
//   - A pod template without labels gets them (EMCO panics).
//   - What cannot be deployed is refused before anything is applied, with a message
//     naming the cause: links that do not form one linear chain, a chain end with neither
//     client selector nor provider network, a link naming an app the deployment does not
//     have, no cluster running every app of a chain, a link whose workload is missing on
//     one of those clusters, or a link label contradicting the workload's selector (the
//     API server would refuse the workload mid-apply). EMCO fails on most of these too,
//     less specifically, and ignores failures to write the labels.
//   - The API refuses link resource types without a pod template (EMCO accepts them and
//     adds no label), a link joining a network to itself and a namespace Kubernetes would
//     refuse; it accepts a provider network without subnet, as EMCO's schema means (EMCO's
//     validation of the re-marshalled body refuses it).
//
// As in EMCO, the NetworkChainings go in an app sfc adds, "network-chain-intents", after
// the DIG's apps, on the clusters of the chains (each chain's on its own clusters).
package sfc

import (
	"github.com/temco/temco/api"
	"github.com/temco/temco/contract"
	"github.com/temco/temco/controllers"
)

// Stored kinds; "sfc-" keeps them apart from every other kind in temco. sfcclient reads
// the chains and their client selectors.
const (
	KindChain           = "sfc-intent"
	KindLink            = "sfc-link"
	KindClientSelector  = "sfc-client-selector"
	KindProviderNetwork = "sfc-provider-network"
)

// Routes below the DIG, with EMCO's path parameter names.
const (
	chainsPath           = "/network-chains"
	chainPath            = chainsPath + "/:sfcIntent"
	linksPath            = chainPath + "/links"
	clientSelectorsPath  = chainPath + "/client-selectors"
	providerNetworksPath = chainPath + "/provider-networks"
)

// ChainID is the store id of the network chain name of the DIG whose id is dig.
func ChainID(dig, name string) string { return dig + chainsPath + "/" + name }

// FieldChainEnd is the queryable field holding a client selector's chain end.
const FieldChainEnd = "chainEnd"

// Controller is sfc as built into temco. EMCO deploys it as service sfc.
var Controller = controllers.Builtin{
	Name:  "sfc",
	Type:  contract.TypeAction,
	Hosts: []string{"sfc"},
	Kinds: []api.ResourceKind{
		api.DIGKind(api.KindDef[ChainSpec]{Name: KindChain, Path: chainsPath, Param: "sfcIntent", Check: checkChain}),
		api.DIGKind(api.KindDef[LinkSpec]{Name: KindLink, Path: linksPath, Param: "sfcLink", Check: checkLink}),
		api.DIGKind(api.KindDef[ClientSelectorSpec]{Name: KindClientSelector, Path: clientSelectorsPath, Param: "sfcClientSelector",
			Check: checkClientSelector}),
		api.DIGKind(api.KindDef[ProviderNetworkSpec]{Name: KindProviderNetwork, Path: providerNetworksPath, Param: "sfcProviderNetwork",
			Check: checkProviderNetwork}),
	},
	New: func(d controllers.Deps) contract.Controller { return &controller{store: d.Store} },
}
