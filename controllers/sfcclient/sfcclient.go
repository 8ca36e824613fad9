// Package sfcclient is EMCO's sfc client action controller: a DIG's sfc-clients attach
// one of its workloads to an end of a network chain that another DIG of the project
// defines (controllers/sfc). sfcclient picks the first client selector of that end whose
// namespace labels the client DIG's logical cloud carries, and gives the workload's pods
// the selector's pod labels, on every cluster of the workload's app, so Nodus finds them.
//
// As in EMCO, sfcclient works on every sfc-client of the DIG, whatever intent name the
// DIG gives it, recomputes everything on each instantiate and update, matches only the
// selectors' matchLabels, and tries selectors in the order they were created (MongoDB's
// natural order). Where temco departs from EMCO:
//   - A pod template without labels gets them (EMCO panics).
//   - What cannot be deployed is refused before anything is applied, with a message
//     naming the cause: a missing chain, no client selector of that end matching the
//     logical cloud's labels, an app the deployment does not have, a workload missing on
//     one of its app's clusters, or pod labels contradicting the workload's selector. EMCO
//     fails on most of these too, less specifically, and ignores failures to write the
//     labels.
//   - The API refuses resource types without a pod template (EMCO accepts them and adds
//     no label).
package sfcclient

import (
	"github.com/temco/temco/api"
	"github.com/temco/temco/contract"
	"github.com/temco/temco/controllers"
)

// KindClient is the stored kind of an sfc client.
const KindClient = "sfc-client"

// Controller is sfcclient as built into temco. EMCO deploys it as service sfcclient.
var Controller = controllers.Builtin{
	Name:  "sfcclient",
	Type:  contract.TypeAction,
	Hosts: []string{"sfcclient"},
	Kinds: []api.ResourceKind{
		api.DIGKind(api.KindDef[ClientSpec]{Name: KindClient, Path: "/sfc-clients", Param: "sfcClientIntent", Check: checkClient}),
	},
	New: func(d controllers.Deps) contract.Controller { return &controller{store: d.Store} },
}
