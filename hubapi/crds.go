// Package hubapi holds temco's declarative kinds (v1alpha1) and their generated
// CustomResourceDefinitions, which a hub cluster must hold for `temco hub`.
package hubapi

import "embed"

// CRDs are the generated definitions, one file per kind (crds/*.yaml).
//
//go:embed crds/*.yaml
var CRDs embed.FS
