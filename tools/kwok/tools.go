//go:build tools

// Package tools pins kwok (fake nodes and Deployment status for local clusters).
package tools

import _ "sigs.k8s.io/kwok/cmd/kwok"
