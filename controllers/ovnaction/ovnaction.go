// Package ovnaction is EMCO's OVN action controller. A DIG's network-controller-intent
// lists workload intents (an app's workload, named by resource name and kind), each with
// its interfaces (the pod's interface name, a network of the cluster, optionally a fixed IP
// and MAC address and whether it is the default gateway). On every cluster of the app,
// the controller writes them into the workload's pod template as the annotation Nodus
// (ovn4nfv) reads, k8s.plugin.opnfv.org/nfn-network, and, where Multus wraps the CNI (the
// cluster's kv-pairs say), attaches the pods to Multus's ovn-networkobj through
// k8s.v1.cni.cncf.io/networks. Annotations already in the chart are kept and merged.
//
// Where temco departs from EMCO, deliberately:
//   - A workload intent whose workload (workloadResource of kind type) is on none of its
//     app's clusters, or whose app the deployment does not have, is refused before anything
//     is applied, naming the intent, app and workload; EMCO skips it silently and the pods
//     start without their interfaces.
//   - An interface whose network (spec.name) is not a network or provider network of a
//     cluster the workload goes to, or whose cluster's network intents are not applied, is
//     refused naming the interface, network and cluster; EMCO annotates the pods anyway and
//     they cannot start there.
//   - Errors are errors: a workload or annotation that cannot be decoded is refused with
//     the reason, and kv-pairs or networks that cannot be read fail the step (retried);
//     EMCO skips the cluster or falls back to its defaults.
//   - A network-controller-intent the DIG names that does not exist is refused (EMCO
//     annotates nothing), and so is a workload kind without a pod template (EMCO leaves
//     known kinds such as a Service unchanged, and replaces unknown ones by "null").
//   - A CronJob of any version is annotated in spec.jobTemplate.spec.template (EMCO only
//     annotates batch/v1beta1 CronJobs).
//   - Entries already in k8s.v1.cni.cncf.io/networks are kept as written (EMCO decodes and
//     re-encodes them, dropping fields its client library does not know); the text form
//     ("ns/net@eth1,net2") becomes JSON, as in EMCO.
//
// Workload intents and interfaces are taken in name order (EMCO: database order), so
// several workload intents on one workload merge deterministically.
package ovnaction

import (
	"context"

	"github.com/temco/temco/api"
	"github.com/temco/temco/contract"
	"github.com/temco/temco/controllers"
	"github.com/temco/temco/controllers/ncm"
	"github.com/temco/temco/internal/core/model"
)

// Stored kinds.
const (
	KindIntent         = "ovnaction-intent"
	KindWorkloadIntent = "ovnaction-workload-intent"
	KindInterface      = "ovnaction-interface"
)

// Routes below the DIG, with EMCO's path parameter names.
const (
	intentsPath    = "/network-controller-intent"
	workloadsPath  = intentsPath + "/:netControllerIntent/workload-intents"
	interfacesPath = workloadsPath + "/:workloadIntent/interfaces"
)

// Controller is ovnaction as built into temco. EMCO deploys it as service ovnaction (Helm
// and docker compose), the host its examples register.
var Controller = controllers.Builtin{
	Name:  "ovnaction",
	Type:  contract.TypeAction,
	Hosts: []string{"ovnaction"},
	Kinds: []api.ResourceKind{
		api.DIGKind(api.KindDef[model.Empty]{Name: KindIntent, Path: intentsPath, Param: "netControllerIntent"}),
		api.DIGKind(api.KindDef[WorkloadIntentSpec]{Name: KindWorkloadIntent, Path: workloadsPath, Param: "workloadIntent",
			Check: checkWorkloadIntent}),
		api.DIGKind(api.KindDef[InterfaceSpec]{Name: KindInterface, Path: interfacesPath, Param: "interfaceIntent",
			Check: checkInterface}),
	},
	New: func(d controllers.Deps) contract.Controller {
		return &controller{store: d.Store, networks: func(ctx context.Context, cluster string) (ncm.ClusterNetworks, error) {
			return ncm.Networks(ctx, d.Store, cluster)
		}}
	},
}
