//go:build tools

// Package tools pins the temporal CLI (dev server + Web UI) built into .bin/.
package tools

import _ "github.com/temporalio/cli/cmd/temporal"
