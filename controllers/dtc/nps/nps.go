// Package nps is EMCO's network policy sub-controller of dtc. For each inbound intent of
// the traffic group intent that dtc runs it for, it adds one networking.k8s.io/v1
// NetworkPolicy, named "<traffic group intent>-<inbound intent>", to the server app on
// those of its clusters whose registration carries the label networkpolicy-supported:
// the server's pods (spec.appLabel) accept traffic on spec.port and spec.protocol only
// from pods carrying a client's appLabel and, when spec.externalSupport is set, from the
// clients' CIDRs. The object has no namespace, as in EMCO, so it goes to the namespace of
// the DIG's logical cloud, where the apps' own objects go. Each instantiate and update
// builds the policies afresh from the intents, so an update that adds or removes a client
// changes the live policy, and terminate deletes it with the server app.
//
// As in EMCO, an inbound intent without clients gets no policy, a client is selected by
// its appLabel only (its app may be outside the deployment and its namespaces are not
// used), and a server cluster without the label gets nothing.
//
// Where temco departs from EMCO, deliberately:
//   - Without externalSupport EMCO also admits 0.0.0.0/0, which opens the port to every
//     source and defeats the policy; temco admits only the clients.
//   - EMCO writes the protocol and the port as two separate port entries, which opens
//     every port of that protocol; temco writes one entry with both.
//   - What would not give a valid policy is refused before anything is applied, naming
//     the traffic group and inbound intent: an inbound intent whose app the deployment
//     does not have, a protocol other than TCP, UDP or SCTP, a policy name Kubernetes
//     would refuse. EMCO logs these and dtc reports success, or the apply fails midway.
package nps

import (
	"github.com/temco/temco/contract"
	"github.com/temco/temco/controllers"
)

// SupportedLabel is the cluster label that marks a cluster able to enforce
// NetworkPolicies, as EMCO names it.
const SupportedLabel = "networkpolicy-supported"

// Controller is nps as built into temco, registered in /v2/dtc-controllers; EMCO's
// examples register it as nps with the host's address, its deployments with host nps.
var Controller = controllers.Builtin{
	Name:   "nps",
	Type:   contract.TypeAction,
	Hosts:  []string{"nps"},
	Parent: "dtc",
	New:    func(d controllers.Deps) contract.Controller { return &controller{store: d.Store} },
}
