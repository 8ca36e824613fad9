package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/temco/temco/internal/core/lifecycle"
	"github.com/temco/temco/internal/dev/devstack"
)

func devCmd() *cobra.Command {
	cfg := devstack.Config{Out: os.Stdout}
	var bin, data string
	var feats featuresConfig
	cmd := &cobra.Command{
		Use:   "dev",
		Short: "Run the full local stack: Temporal + Web UI, FerretDB, local Kubernetes clusters, api and worker",
		Long: "Run the full local stack: Temporal + Web UI, FerretDB, local Kubernetes clusters, api and worker.\n" +
			"A component that crashes is restarted with backoff (1s, doubling up to 30s), and each restart is printed.\n" +
			"Ctrl-C stops every process; the next start reuses the data directory.",
		RunE: func(cmd *cobra.Command, _ []string) error {
			if _, err := feats.check(); err != nil {
				return err
			}
			if len(feats.disabled) > 0 { // api and worker take the same
				cfg.Env = append(cfg.Env, "TEMCO_DISABLE_FEATURES="+strings.Join(feats.disabled, ","))
			}
			self, err := os.Executable()
			if err != nil {
				return err
			}
			if cfg.BinDir, err = filepath.Abs(bin); err != nil {
				return err
			}
			if cfg.DataDir, err = filepath.Abs(data); err != nil {
				return err
			}
			cfg.Self, cfg.SearchAttributes = self, lifecycle.SearchAttributeTypes()
			fmt.Fprintf(os.Stdout, "starting temco: Temporal, FerretDB, %d clusters%s, an OCI registry, a Helm repository, api, worker (data in %s)\n",
				cfg.Clusters, optionalParts(cfg), cfg.DataDir)
			stack, err := devstack.Start(cmd.Context(), cfg)
			if err != nil {
				return err
			}
			stack.Summary(os.Stdout)
			fmt.Fprintln(os.Stdout, "A component that crashes is restarted with backoff; each restart is printed here.")
			// Supervised rather than stack.Wait: one crash no longer leaves the stack half-dead.
			stack.Supervise(cmd.Context(), os.Stdout)
			<-cmd.Context().Done()
			fmt.Fprintln(os.Stdout, "stopping temco...")
			stack.Stop()
			return nil
		},
	}
	feats.bind(cmd)
	devFlags(cmd, &cfg, &bin, &data)
	return cmd
}

// optionalParts names the parts of the stack its flags may leave out, for its first line.
func optionalParts(cfg devstack.Config) string {
	extra := ""
	if cfg.CertManager {
		extra = ", cert-manager on cluster1"
	}
	if cfg.GitOps {
		extra += ", a GitOps cluster with Flux and a git server"
	}
	if cfg.Hub {
		extra += ", temco hub on cluster1"
	}
	if cfg.Agent {
		extra += ", an agent cluster reached only by temco agent"
	}
	if cfg.Traces {
		extra += ", Jaeger for traces"
	}
	return extra
}

// devFlags binds temco dev's flags.
func devFlags(cmd *cobra.Command, cfg *devstack.Config, bin, data *string) {
	f := cmd.Flags()
	f.StringVar(bin, "bin", ".bin", "directory of the built tools (make tools)")
	f.StringVar(data, "data", ".data", "directory of all local state; reused by the next start")
	f.IntVar(&cfg.Clusters, "clusters", 2, "number of local Kubernetes clusters")
	f.IntVar(&cfg.TemporalPort, "temporal-port", 7233, "Temporal frontend port")
	f.IntVar(&cfg.UIPort, "ui-port", 8233, "Temporal Web UI port")
	f.IntVar(&cfg.MongoPort, "mongo-port", 27017, "FerretDB (MongoDB wire) port")
	f.StringVar(&cfg.MongoBackend, "mongo-backend", "sqlite", "FerretDB backend: sqlite, or postgresql (faster; runs a private PostgreSQL)")
	f.IntVar(&cfg.PostgresPort, "postgres-port", 55432, "PostgreSQL port (with --mongo-backend postgresql)")
	f.IntVar(&cfg.APIPort, "api-port", 9015, "temco REST API port")
	f.IntVar(&cfg.MetricsPort, "metrics-port", 9016, "temco worker /metrics port")
	f.IntVar(&cfg.ClusterBasePort, "cluster-base-port", 20000, "first port of the clusters (each uses 3 ports, 10 apart)")
	f.BoolVar(&cfg.GitOps, "gitops", true, "add one more cluster that Flux reconciles from the stack's git server (temco reaches it through git only)")
	f.BoolVar(&cfg.CertManager, "cert-manager", true, "run cert-manager's controller against cluster1 (ca-certs' cert-manager issuers sign there)")
	f.BoolVar(&cfg.Agent, "agent", true, "add one more cluster reached only by temco agent, which runs as a process with that cluster's own kubeconfig, as it would in a pod")
	f.BoolVar(&cfg.Hub, "hub", true, "run temco hub: cluster1 holds temco's declarative kinds (temco.io), reconciled into temco")
	f.BoolVar(&cfg.Traces, "traces", true, "run Jaeger, a trace collector, and send it the spans of temco's processes (OTLP); about 60 MB")
	f.IntVar(&cfg.TracesPort, "traces-port", 16686, "Jaeger's query API and UI port (with --traces)")
	f.IntVar(&cfg.OTLPPort, "otlp-port", 4318, "Jaeger's OTLP/HTTP receiver port (with --traces)")
	f.StringVar(&cfg.TracesUIAssets, "traces-ui-assets", "", "a built jaeger-ui folder for Jaeger to serve as its UI (default: temco's trace viewer)")
	f.StringVar(&cfg.GitOpsProvider, "gitops-provider", "local", "cluster provider of the GitOps cluster in its git paths (<provider>+<cluster>)")
	f.IntVar(&cfg.GitPort, "git-port", 0, "git server port (0: the GitOps cluster's first port + 8)")
	f.IntVar(&cfg.RegistryPort, "registry-port", 0, "OCI registry port (0: the clusters' first port + 8)")
	f.IntVar(&cfg.HelmRepoPort, "helm-repo-port", 0, "Helm chart repository port (0: the clusters' first port + 9)")
	f.StringVar(&cfg.Namespace, "namespace", "default", "Temporal namespace")
	f.StringVar(&cfg.TaskQueue, "task-queue", "temco", "Temporal task queue")
}
