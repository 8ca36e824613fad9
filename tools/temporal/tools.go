//go:build tools

// Package tools pins the temporal CLI (dev server + Web UI), and the production server and
// its SQL schema tool of the version the CLI embeds, built into .bin/.
package tools

import (
	_ "github.com/temporalio/cli/cmd/temporal"
	_ "go.temporal.io/server/cmd/server"
	_ "go.temporal.io/server/cmd/tools/sql"
)
