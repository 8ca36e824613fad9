// Command temco is the multi-cluster orchestrator: the REST API server, the Temporal
// worker, a local development stack, and an emcoctl-compatible client.
package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/temco/temco/activities/render"
	"github.com/temco/temco/internal/adapters/policyengine"
	"github.com/temco/temco/internal/adapters/sandbox"
	"github.com/temco/temco/internal/adapters/tracing"
)

func main() {
	// A chart's rendering or a policy's evaluation in its sandbox: a child of the worker.
	sandbox.ChildMain(render.SandboxJob, policyengine.SandboxJob)
	root := &cobra.Command{
		Use:           "temco",
		Short:         "EMCO multi-cluster orchestrator on Temporal",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	servePprof(pprofAddr())
	root.AddCommand(apiCmd(), workerCmd(), devCmd(), monitorCmd(), hubCmd(), agentCmd())
	root.AddCommand(clientCmds()...)
	root.AddCommand(diffCmd())
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := root.ExecuteContext(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "temco:", err)
		os.Exit(1)
	}
}

// pprofAddr is TEMCO_PPROF_ADDR_<COMMAND> (TEMCO_PPROF_ADDR_WORKER: the worker's) or else
// TEMCO_PPROF_ADDR: api and worker started with one environment can each have their own.
func pprofAddr() string {
	if len(os.Args) > 1 {
		if a := os.Getenv("TEMCO_PPROF_ADDR_" + strings.ToUpper(os.Args[1])); a != "" {
			return a
		}
	}
	return os.Getenv("TEMCO_PPROF_ADDR")
}

// servePprof serves Go's profiles (/debug/pprof/) on addr when it is set: an operator's
// way to see where a process spends its time. Keep it on a loopback address.
func servePprof(addr string) {
	if addr == "" {
		return
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	l, err := net.Listen("tcp", addr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "temco: pprof listener:", err)
		return
	}
	go func() { _ = (&http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}).Serve(l) }()
}

// traced is a command's body run with traces set up for service (tracing.Setup: on when
// the OTEL_EXPORTER_OTLP_* variables name an endpoint), flushed as it returns: the spans of
// the process's last seconds are exported too.
func traced(service string, run func(*cobra.Command, []string) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		flush, err := tracing.Setup(cmd.Context(), service)
		if err != nil {
			return err
		}
		defer func() {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			if err := flush(ctx); err != nil {
				fmt.Fprintln(os.Stderr, "temco: flushing traces:", err)
			}
		}()
		return run(cmd, args)
	}
}

// envInt returns the integer environment variable key, or def when it is unset or invalid.
func envInt(key string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(key)); err == nil {
		return n
	}
	return def
}

// envDuration returns the duration environment variable key (e.g. "30s"), or def when it
// is unset or invalid.
func envDuration(key string, def time.Duration) time.Duration {
	if d, err := time.ParseDuration(os.Getenv(key)); err == nil {
		return d
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
