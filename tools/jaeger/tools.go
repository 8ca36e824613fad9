//go:build tools

// Package tools pins Jaeger v2, the local stack's trace collector and query API.
package tools

import _ "github.com/jaegertracing/jaeger/cmd/jaeger"
