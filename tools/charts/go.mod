// Public Helm charts that ship inside Go modules on the module proxy: tools/build.sh
// copies each chart's folder (listed in charts.txt here) into .bin/charts/<name>/, and
// tests/wildcharts instantiates them on the local clusters (BENCHMARKS.md, "Charts in the
// wild").
module temco/tools/charts

go 1.26

require (
	github.com/bitnami-labs/sealed-secrets v0.40.0
	github.com/cert-manager/cert-manager v1.20.3
	github.com/k8snetworkplumbingwg/whereabouts v0.9.2
	github.com/rancher/local-path-provisioner v0.0.30
	github.com/stefanprodan/podinfo v1.8.1-0.20250910200901-e86405a8674e
	go.universe.tf/metallb v0.16.2
	k8s.io/ingress-nginx v0.0.0-20240708192948-52c50467d67d
	sigs.k8s.io/descheduler v0.36.0
	sigs.k8s.io/external-dns v0.20.0
	sigs.k8s.io/kube-network-policies v0.8.0
	sigs.k8s.io/kueue v0.17.0
	sigs.k8s.io/kwok v0.7.0
	sigs.k8s.io/metrics-server v0.8.0
	sigs.k8s.io/node-feature-discovery v0.18.3
)
