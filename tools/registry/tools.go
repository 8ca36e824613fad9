//go:build tools

// Package tools pins CNCF distribution's registry, the local stack's OCI registry.
package tools

import _ "github.com/distribution/distribution/v3/cmd/registry"
