// CustomResourceDefinitions from the modules that ship them; tools/build.sh copies them
// into .bin/crds/ from the module sources pinned here:
//   - the Prometheus operator's ServiceMonitor (.bin/crds/), installed by the Helm chart's
//     e2e test so that the chart's ServiceMonitor meets its real schema;
//   - the kinds temco's controllers put on clusters, which every local cluster applies at
//     start (internal/devstack): Istio's (.bin/crds/istio/: its, ca-certs' ProxyConfig),
//     Multus' NetworkAttachmentDefinition (.bin/crds/multus/: ncm) and cert-manager's
//     (.bin/crds/cert-manager/: ca-certs' ClusterIssuer);
//   - the cluster inventory API's ClusterProfile and PlacementDecision
//     (.bin/crds/cluster-inventory/), so that any local cluster can be a hub.
module temco/tools/crds

go 1.26

require (
	github.com/cert-manager/cert-manager v1.20.3
	github.com/k8snetworkplumbingwg/network-attachment-definition-client v1.7.7
	github.com/prometheus-operator/prometheus-operator v0.85.0
	istio.io/api v1.32.0
	sigs.k8s.io/cluster-inventory-api v0.1.0
)
