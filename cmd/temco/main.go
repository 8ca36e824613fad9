// Command temco is the multi-cluster orchestrator: the REST API server, the Temporal
// worker, a local development stack, and an emcoctl-compatible client.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/temco/temco/activities/render"
)

func main() {
	render.ChildMain() // a chart's rendering in its sandbox: a child of the worker (activities/render)
	root := &cobra.Command{
		Use:           "temco",
		Short:         "EMCO multi-cluster orchestrator on Temporal",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(apiCmd(), workerCmd(), devCmd(), monitorCmd())
	root.AddCommand(clientCmds()...)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := root.ExecuteContext(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "temco:", err)
		os.Exit(1)
	}
}

// envInt returns the integer environment variable key, or def when it is unset or invalid.
func envInt(key string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(key)); err == nil {
		return n
	}
	return def
}

// envList splits a comma-separated environment variable (nil when unset or empty).
func envList(key string) []string {
	if v := os.Getenv(key); v != "" {
		return strings.Split(v, ",")
	}
	return nil
}

// env returns the environment variable key, or def when it is unset.
func env(key, def string) string {
	if v, ok := os.LookupEnv(key); ok {
		return v
	}
	return def
}
