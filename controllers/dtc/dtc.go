// Package dtc is EMCO's distributed traffic controller: a DIG's traffic group intent says
// which server apps (inbound intents) may be reached by which client apps, across
// clusters, and which requests a client may make (access points). dtc itself produces
// nothing: it is a fan-out controller. Its step of an instantiate or update runs the
// sub-controllers registered in /v2/dtc-controllers, each as its own controller step
// through the public contract (built in — nps, its, sds, swc, in the folders below — or
// external on its own task queue), with dtc's intent, the traffic group intent's name.
// They read the traffic group with Load.
//
// Where temco departs from EMCO, deliberately:
//   - A sub-controller's failure fails the operation before anything is applied, with its
//     message; EMCO logs it and reports success, and the traffic rules are silently missing.
//   - Sub-controllers get the terminate and finished hooks of the contract like any other
//     controller (EMCO's dtc forwards neither).
//   - appLabel must be one "key=value" label (EMCO's schema also takes "app", which
//     no sub-controller can turn into a selector).
//   - The external service's private key is stored sealed and answered as "********"; a
//     PUT that sends the mask back keeps the stored key.
package dtc

import (
	"github.com/temco/temco/api"
	"github.com/temco/temco/contract"
	"github.com/temco/temco/controllers"
	"github.com/temco/temco/internal/core/model"
)

// Stored kinds. Sub-controller registrations have the kind and ids that
// lifecycle.SubcontrollerKind and lifecycle.RegistrationID derive from the name dtc.
const (
	KindTrafficGroup  = "dtc-traffic-group-intent"
	KindInbound       = "dtc-inbound-intent"
	KindClient        = "dtc-inbound-client"
	KindAccessPoint   = "dtc-access-point"
	KindSubcontroller = "dtcController"
)

// Routes below the DIG, with EMCO's path parameter names.
const (
	groupsPath       = "/traffic-group-intents"
	inboundPath      = groupsPath + "/:trafficGroupIntent/inbound-intents"
	clientsPath      = inboundPath + "/:inboundServerIntent/clients"
	accessPointsPath = clientsPath + "/:inboundClientsIntent/access-points"
)

// Controller is dtc as built into temco; EMCO's files register it as dtc.
var Controller = controllers.Builtin{
	Name:   "dtc",
	Type:   contract.TypeAction,
	Hosts:  []string{"dtc"},
	FanOut: true,
	Kinds: []api.ResourceKind{
		api.DIGKind(api.KindDef[model.Empty]{Name: KindTrafficGroup, Path: groupsPath, Param: "trafficGroupIntent"}),
		api.DIGKind(api.KindDef[InboundSpec]{Name: KindInbound, Path: inboundPath, Param: "inboundServerIntent", Check: checkInbound}),
		api.DIGKind(api.KindDef[ClientSpec]{Name: KindClient, Path: clientsPath, Param: "inboundClientsIntent", Check: checkClient}),
		api.DIGKind(api.KindDef[AccessPointSpec]{Name: KindAccessPoint, Path: accessPointsPath, Param: "inboundClientsAccessIntent",
			Check: checkAccessPoint}),
		api.OwnKind[model.ControllerSpec]{KindDef: api.KindDef[model.ControllerSpec]{Name: KindSubcontroller, Path: "/dtc-controllers",
			Param: "dtcController", Check: checkSubcontroller}}.Mount(),
	},
}
