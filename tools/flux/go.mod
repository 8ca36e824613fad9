// Flux's source-controller and kustomize-controller, run out of cluster by the local
// stack's GitOps cluster. Neither installs with `go install` (their go.mods replace their
// own api module with ./api, which the module zip does not hold), so tools/build.sh copies
// each module source pinned here, requires its api module at the same version instead
// and builds it in place. v1.7.x: the newest pair the module proxy here serves in full.
module temco/tools/flux

go 1.26

require (
	github.com/fluxcd/kustomize-controller v1.7.3
	github.com/fluxcd/source-controller v1.7.0
)
