// The Prometheus operator's ServiceMonitor CRD, installed into a local cluster by the
// Helm chart's e2e test so that the chart's ServiceMonitor meets its real schema.
// tools/build.sh copies it from the module source pinned here.
module temco/tools/crds

go 1.26

require github.com/prometheus-operator/prometheus-operator v0.85.0
