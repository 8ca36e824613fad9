// Package hpa is EMCO's hardware platform aware placement as two built-in controllers:
// hpa-plc keeps an app only on clusters whose nodes carry the labels and have the free
// capacity its hpa intents ask for, and hpa-ac writes the same constraints into the
// Deployments so the clusters' schedulers honour them. The intents are REST resources
// under the DIG, served for hpa-plc and read by both.
package hpa

import (
	"github.com/temco/temco/contract"
	"github.com/temco/temco/controllers"
)

// Placement is hpa-plc. EMCO's examples register it with host "hpaplc", its service's
// name in EMCO's Helm charts.
var Placement = controllers.Builtin{
	Name:  "hpa-plc",
	Type:  contract.TypePlacement,
	Hosts: []string{"hpaplc"},
	Kinds: kinds,
	New: func(d controllers.Deps) contract.Controller {
		return &placement{intents: storeIntents{d.Store}, nodes: liveNodes{client: adminClients(d.Admin)}}
	},
}

// Action is hpa-ac (host "hpaac" in EMCO). Its resources are hpa-plc's.
var Action = controllers.Builtin{
	Name:  "hpa-ac",
	Type:  contract.TypeAction,
	Hosts: []string{"hpaac"},
	New: func(d controllers.Deps) contract.Controller {
		return &action{intents: storeIntents{d.Store}}
	},
}
