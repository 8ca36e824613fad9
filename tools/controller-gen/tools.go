//go:build tools

// Package tools pins controller-gen, which generates hubapi's deepcopy functions and
// CustomResourceDefinitions from its Go types (make generate).
package tools

import _ "sigs.k8s.io/controller-tools/cmd/controller-gen"
