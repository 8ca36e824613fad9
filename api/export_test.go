package api

import "github.com/temco/temco/internal/dev/devstack"

// SharedFerret is the package's FerretDB, for the tests of package api_test, which serve
// the built-in controllers' kinds (they import this package, so only an external test
// package can import them).
func SharedFerret() *devstack.FerretDB { return ferret }
