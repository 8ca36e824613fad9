#!/usr/bin/env bash
# Builds the pinned development binaries into $BIN (default .bin/) from the Go module
# proxy only. Each tool's version is pinned by the go.mod in its folder here; a tool
# is skipped when $BIN/.stamp/<tool> already records that version (idempotent).
#   tools/build.sh [tool ...]    tools: temporal ferretdb etcd kube kwok crds flux (default: all)
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

build_crds() {
  local v dir; v=$(version crds github.com/prometheus-operator/prometheus-operator)
  fresh crds "$v" && return
  dir=$(cd "$TOOLS/crds" && go mod download -json github.com/prometheus-operator/prometheus-operator | sed -n 's/.*"Dir": "\(.*\)".*/\1/p')
  mkdir -p "$BIN/crds"
  install -m 0644 "$dir/example/prometheus-operator-crd/monitoring.coreos.com_servicemonitors.yaml" "$BIN/crds/"
  stamp crds "$v"
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

for t in "${@:-temporal ferretdb etcd kube kwok crds flux}"; do
  for one in $t; do timed "build_$one"; done
done
