#!/usr/bin/env bash
# Builds the pinned development binaries into $BIN (default .bin/) from the Go module
# proxy only. Each tool's version is pinned by the go.mod in its folder here; a tool
# is skipped when $BIN/.stamp/<tool> already records that version (idempotent).
#   tools/build.sh [tool ...]    tools: temporal temporal_server ferretdb etcd kube kwok crds charts flux certmanager registry jaeger controllergen (default: all)
set -euo pipefail
TOOLS="$(cd "$(dirname "$0")" && pwd)"
BIN="${BIN:-$TOOLS/../.bin}"
mkdir -p "$BIN/.stamp" && BIN="$(cd "$BIN" && pwd)"
export CGO_ENABLED=0 GOFLAGS=-mod=readonly
LDFLAGS="-s -w"

version() { (cd "$TOOLS/$1" && go list -m -f '{{.Version}}' "$2"); }
fresh() { [ -f "$BIN/.stamp/$1" ] && [ "$(cat "$BIN/.stamp/$1")" = "$2" ]; }
stamp() { echo "$2" > "$BIN/.stamp/$1"; }
timed() { local t0=$SECONDS; "$@"; echo "tools: $1 done in $((SECONDS - t0))s" >&2; }

build_temporal() {
  local v; v=$(version temporal github.com/temporalio/cli)
  fresh temporal "$v" && return
  (cd "$TOOLS/temporal" && go build -trimpath -ldflags "$LDFLAGS" -o "$BIN/temporal" github.com/temporalio/cli/cmd/temporal)
  stamp temporal "$v"
}

# The production server (PostgreSQL persistence, several history shards) and its schema
# tool, of the version the CLI's dev server embeds: the scale benchmark and its smoke test.
build_temporal_server() {
  local v; v=$(version temporal go.temporal.io/server)
  fresh temporal-server "$v" && return
  (cd "$TOOLS/temporal" && go build -trimpath -ldflags "$LDFLAGS" -o "$BIN/temporal-server" go.temporal.io/server/cmd/server &&
    go build -trimpath -ldflags "$LDFLAGS" -o "$BIN/temporal-sql-tool" go.temporal.io/server/cmd/tools/sql)
  stamp temporal-server "$v"
}

build_kwok() {
  local v; v=$(version kwok sigs.k8s.io/kwok)
  fresh kwok "$v" && return
  (cd "$TOOLS/kwok" && go build -trimpath -ldflags "$LDFLAGS" -o "$BIN/kwok" sigs.k8s.io/kwok/cmd/kwok)
  stamp kwok "$v"
}

build_etcd() {
  local v; v=$(version etcd go.etcd.io/etcd/server/v3)
  fresh etcd "$v" && return
  (cd "$TOOLS/etcd" && go build -trimpath -ldflags "$LDFLAGS" -o "$BIN/etcd" go.etcd.io/etcd/server/v3)
  stamp etcd "$v"
}

build_kube() {
  local v minor; v=$(version kube k8s.io/kubernetes); minor=$(echo "$v" | cut -d. -f2)
  fresh kube "$v" && return
  # Stamp the version so /version reports it (otherwise v0.0.0-master and skew warnings).
  local x="-X k8s.io/component-base/version.gitVersion=$v -X k8s.io/component-base/version.gitMajor=1"
  x="$x -X k8s.io/component-base/version.gitMinor=$minor -X k8s.io/client-go/pkg/version.gitVersion=$v"
  x="$x -X k8s.io/client-go/pkg/version.gitMajor=1 -X k8s.io/client-go/pkg/version.gitMinor=$minor"
  (cd "$TOOLS/kube" && go build -trimpath -ldflags "$LDFLAGS $x" -o "$BIN/" \
    k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager \
    k8s.io/kubernetes/cmd/kube-scheduler k8s.io/kubernetes/cmd/kubectl)
  stamp kube "$v"
}

build_ferretdb() {
  local v dir src; v=$(version ferretdb github.com/FerretDB/FerretDB)
  fresh ferretdb "$v" && return
  dir=$(cd "$TOOLS/ferretdb" && go mod download -json github.com/FerretDB/FerretDB | sed -n 's/.*"Dir": "\(.*\)".*/\1/p')
  src=$(mktemp -d)
  cp -r "$dir/." "$src" && chmod -R u+w "$src"
  echo "$v" > "$src/build/version/version.txt"
  (cd "$src" && GOTOOLCHAIN=local go build -trimpath -ldflags "$LDFLAGS" -o "$BIN/ferretdb" ./cmd/ferretdb)
  rm -rf "$src"
  stamp ferretdb "$v"
}

# CRDs from the modules that ship them (tools/crds/go.mod): the ServiceMonitor for the Helm
# chart's e2e test, and in a folder each the kinds temco's controllers produce, which every
# local cluster applies at start (internal/dev/devstack): Istio's, Multus' and cert-manager's,
# and the cluster inventory API's ClusterProfile and PlacementDecision (a hub's kinds).
CRD_MODULES="github.com/prometheus-operator/prometheus-operator istio.io/api
  github.com/k8snetworkplumbingwg/network-attachment-definition-client github.com/cert-manager/cert-manager
  sigs.k8s.io/cluster-inventory-api"
build_crds() {
  local v; v=$(cd "$TOOLS/crds" && go list -m -f '{{.Path}}@{{.Version}}' $CRD_MODULES | paste -sd ' ')
  fresh crds "$v" && return
  mkdir -p "$BIN/crds"
  install -m 0644 "$(crd_module github.com/prometheus-operator/prometheus-operator)/example/prometheus-operator-crd/monitoring.coreos.com_servicemonitors.yaml" "$BIN/crds/"
  crd_folder istio "$(crd_module istio.io/api)"/kubernetes/customresourcedefinitions.gen.yaml
  crd_folder multus "$(crd_module github.com/k8snetworkplumbingwg/network-attachment-definition-client)"/artifacts/networks-crd.yaml
  crd_folder cert-manager "$(crd_module github.com/cert-manager/cert-manager)"/deploy/crds/*.yaml
  crd_folder cluster-inventory "$(crd_module sigs.k8s.io/cluster-inventory-api)"/config/crd/bases/*.yaml
  stamp crds "$v"
}
crd_module() { (cd "$TOOLS/crds" && go mod download -json "$1" | sed -n 's/.*"Dir": "\(.*\)".*/\1/p'); }
# crd_folder NAME FILE...: $BIN/crds/NAME holds exactly FILE...
crd_folder() { local d="$BIN/crds/$1"; shift; rm -rf "$d" && mkdir -p "$d" && install -m 0644 "$@" "$d/"; }

# Public charts for tests/wildcharts: each chart folder tools/charts/charts.txt lists, copied
# from its module (pinned by tools/charts/go.mod) into $BIN/charts/<name>. The stamp holds
# the list with each module's version, so an edit of either copies them again.
build_charts() {
  local list v name mod dir
  list=$(grep -v '^#' "$TOOLS/charts/charts.txt" | awk 'NF')
  v=$(cd "$TOOLS/charts" && echo "$list" | while read -r name mod dir; do
    echo "$name $(go list -m -f '{{.Path}}@{{.Version}}' "$mod") $dir"; done)
  fresh charts "$v" && return
  rm -rf "$BIN/charts" && mkdir -p "$BIN/charts"
  echo "$list" | while read -r name mod dir; do
    src=$(cd "$TOOLS/charts" && go mod download -json "$mod" | sed -n 's/.*"Dir": "\(.*\)".*/\1/p')
    cp -r "$src/$dir" "$BIN/charts/$name" && chmod -R u+w "$BIN/charts/$name"
    if [ "$name" = cert-manager ]; then # its release tool writes Chart.yaml from this template
      local cv; cv=$(cd "$TOOLS/charts" && go list -m -f '{{.Version}}' "$mod")
      sed -e "s/^version: v0.0.0/version: $cv/" -e "s/^appVersion: v0.0.0/appVersion: $cv/" \
        -e 's/{{IS_PRERELEASE}}/false/' "$BIN/charts/$name/Chart.template.yaml" > "$BIN/charts/$name/Chart.yaml"
    fi
  done
  stamp charts "$v"
}

# Flux's controllers: their go.mods replace their api module with ./api, which the module
# zip lacks, so each is built from a copy of its source that requires the api module at
# the same version; their CRDs go to $BIN/crds/flux. Built one after the other at the
# lowest priority: a cold compile takes minutes and about 1.6 GB each.
build_flux() {
  local c v
  for c in source-controller kustomize-controller; do
    v=$(version flux "github.com/fluxcd/$c")
    fresh "flux-$c" "$v" && continue
    build_flux_controller "$c" "$v"
    stamp "flux-$c" "$v"
  done
}

build_flux_controller() {
  local c=$1 v=$2 dir src
  dir=$(cd "$TOOLS/flux" && go mod download -json "github.com/fluxcd/$c" | sed -n 's/.*"Dir": "\(.*\)".*/\1/p')
  src=$(mktemp -d)
  cp -r "$dir/." "$src" && chmod -R u+w "$src"
  (cd "$src" && export GOTOOLCHAIN=local GOFLAGS= &&
    go mod edit -dropreplace="github.com/fluxcd/$c/api" -require="github.com/fluxcd/$c/api@$v" &&
    go mod download "github.com/fluxcd/$c/api" && go mod download &&
    nice -n 19 go build -trimpath -ldflags "$LDFLAGS" -o "$BIN/$c" .)
  mkdir -p "$BIN/crds/flux"
  install -m 0644 "$dir"/config/crd/bases/*.yaml "$BIN/crds/flux/"
  rm -rf "$src"
}

# cert-manager's controller (tools/cert-manager/go.mod says why v1.11.x), run out of cluster
# against the local stack's issuing cluster. Its go.mod has a replace directive, so `go
# install` refuses it: built in a copy of its module source, at the lowest priority like
# Flux (a cold compile takes about 5 minutes and 1 GB), its version stamped as its release
# build does.
build_certmanager() {
  local v dir src; v=$(version cert-manager github.com/cert-manager/cert-manager)
  fresh cert-manager "$v" && return
  dir=$(cd "$TOOLS/cert-manager" && go mod download -json github.com/cert-manager/cert-manager | sed -n 's/.*"Dir": "\(.*\)".*/\1/p')
  src=$(mktemp -d)
  cp -r "$dir/." "$src" && chmod -R u+w "$src"
  (cd "$src" && export GOTOOLCHAIN=local GOFLAGS= && go mod download &&
    nice -n 19 go build -trimpath -ldflags "$LDFLAGS -X github.com/cert-manager/cert-manager/pkg/util.AppVersion=$v" \
      -o "$BIN/cert-manager-controller" ./cmd/controller)
  rm -rf "$src"
  stamp cert-manager "$v"
}

# CNCF distribution's registry: the local stack's OCI registry (charts pushed as OCI
# artifacts), its version stamped as its release build does.
build_registry() {
  local v; v=$(version registry github.com/distribution/distribution/v3)
  fresh registry "$v" && return
  (cd "$TOOLS/registry" && go build -trimpath \
    -ldflags "$LDFLAGS -X github.com/distribution/distribution/v3/version.version=$v" \
    -o "$BIN/registry" github.com/distribution/distribution/v3/cmd/registry)
  stamp registry "$v"
}

# Jaeger v2: the local stack's trace collector (OTLP in) and query API, for `temco dev
# --traces` and the traces' e2e test. Its module ships the UI as a placeholder page (the
# real one is built with npm in Jaeger's release): `temco dev` gives it temco's own trace
# viewer (internal/dev/devstack/traceview) as its UI assets.
build_jaeger() {
  local v; v=$(version jaeger github.com/jaegertracing/jaeger)
  fresh jaeger "$v" && return
  (cd "$TOOLS/jaeger" && nice -n 19 go build -trimpath -ldflags "$LDFLAGS" -o "$BIN/jaeger" github.com/jaegertracing/jaeger/cmd/jaeger)
  stamp jaeger "$v"
}

# controller-gen: hubapi's deepcopy functions and CustomResourceDefinitions (make generate;
# a test checks the committed ones are what it makes).
build_controllergen() {
  local v; v=$(version controller-gen sigs.k8s.io/controller-tools)
  fresh controller-gen "$v" && return
  (cd "$TOOLS/controller-gen" && go build -trimpath -ldflags "$LDFLAGS" -o "$BIN/controller-gen" sigs.k8s.io/controller-tools/cmd/controller-gen)
  stamp controller-gen "$v"
}

for t in "${@:-temporal temporal_server ferretdb etcd kube kwok crds charts flux certmanager registry jaeger controllergen}"; do
  for one in $t; do timed "build_$one"; done
done
