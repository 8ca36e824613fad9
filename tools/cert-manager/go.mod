// cert-manager's controller, run out of cluster by the local stack against its issuing
// cluster (internal/devstack/certmanager.go) so that ca-certs' cert-manager issuers sign
// for real. v1.11.x is the last line whose controller's main package (cmd/controller) is
// part of this module: from v1.12 it is a module of its own that the module proxy does not
// serve. tools/build.sh builds it from a copy of the module source pinned here (its go.mod
// replaces a module, so `go install` refuses it). The local clusters hold v1.20.3's
// definitions (tools/crds): the same cert-manager.io/v1 API, a superset of v1.11's schema.
module temco/tools/cert-manager

go 1.26

require github.com/cert-manager/cert-manager v1.11.5
