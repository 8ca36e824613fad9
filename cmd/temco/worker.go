package main

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/spf13/cobra"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"

	"github.com/temco/temco/activities/cluster"
	"github.com/temco/temco/activities/render"
	"github.com/temco/temco/controllers/gac"
	"github.com/temco/temco/controllers/registry"
	"github.com/temco/temco/controllers/workflowmgr"
	"github.com/temco/temco/internal/adapters/credentials"
	"github.com/temco/temco/internal/adapters/egress"
	"github.com/temco/temco/internal/adapters/gitops"
	"github.com/temco/temco/internal/adapters/metrics"
	"github.com/temco/temco/internal/adapters/sources"
	"github.com/temco/temco/internal/adapters/tlsconfig"
	"github.com/temco/temco/internal/core/appctx"
	"github.com/temco/temco/workers"
	"github.com/temco/temco/workflows/deploy"
)

// temporalFlags are the Temporal connection settings shared by api and worker.
type temporalFlags struct {
	address, namespace, taskQueue string
	tls                           tlsconfig.Client
	encryptPayloads               bool
}

func (f *temporalFlags) bind(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.address, "temporal-address", env("TEMCO_TEMPORAL_ADDRESS", "127.0.0.1:7233"), "Temporal frontend host:port [TEMCO_TEMPORAL_ADDRESS]")
	cmd.Flags().StringVar(&f.namespace, "temporal-namespace", env("TEMCO_TEMPORAL_NAMESPACE", "default"), "Temporal namespace [TEMCO_TEMPORAL_NAMESPACE]")
	cmd.Flags().StringVar(&f.taskQueue, "task-queue", env("TEMCO_TASK_QUEUE", "temco"), "Temporal task queue [TEMCO_TASK_QUEUE]")
	cmd.Flags().BoolVar(&f.tls.Enabled, "temporal-tls", env("TEMCO_TEMPORAL_TLS", "") == "true",
		"connect to Temporal over TLS (implied by any --temporal-tls-* file) [TEMCO_TEMPORAL_TLS]")
	cmd.Flags().StringVar(&f.tls.CA, "temporal-tls-ca", env("TEMCO_TEMPORAL_TLS_CA", ""), "PEM CA verifying the Temporal frontend, instead of the system roots [TEMCO_TEMPORAL_TLS_CA]")
	cmd.Flags().StringVar(&f.tls.Cert, "temporal-tls-cert", env("TEMCO_TEMPORAL_TLS_CERT", ""), "client certificate for mutual TLS [TEMCO_TEMPORAL_TLS_CERT]")
	cmd.Flags().StringVar(&f.tls.Key, "temporal-tls-key", env("TEMCO_TEMPORAL_TLS_KEY", ""), "client key for mutual TLS [TEMCO_TEMPORAL_TLS_KEY]")
	cmd.Flags().StringVar(&f.tls.ServerName, "temporal-tls-server-name", env("TEMCO_TEMPORAL_TLS_SERVER_NAME", ""),
		"name expected in the frontend's certificate, when not the dialled host [TEMCO_TEMPORAL_TLS_SERVER_NAME]")
	cmd.Flags().BoolVar(&f.encryptPayloads, "encrypt-payloads", env("TEMCO_ENCRYPT_PAYLOADS", "true") != "false",
		"encrypt Temporal payloads and failures with the --key-file keys; api and worker must agree [TEMCO_ENCRYPT_PAYLOADS]")
}

func workerCmd() *cobra.Command {
	var sf storeFlags
	var tf temporalFlags
	var perBatch, renderMemory, maxConns int
	var metricsAddr, gitCache, gacURLAllow, policyEngines, artifactHosts, chartKeyring, workerName, taskQueueGrants string
	cmd := &cobra.Command{
		Use:   "worker",
		Short: "Run the Temporal worker: lifecycle workflows and their activities",
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			log := newLogger()
			if renderMemory < 256 {
				return fmt.Errorf("--render-memory: %d MiB is too little for a rendering (at least 256)", renderMemory)
			}
			gacHosts, err := egress.Parse(gacURLAllow)
			if err != nil {
				return fmt.Errorf("--gac-url-allow: %w", err)
			}
			engines, err := egress.Parse(policyEngines)
			if err != nil {
				return fmt.Errorf("--policy-engine-allow: %w", err)
			}
			artifacts, err := egress.Parse(artifactHosts)
			if err != nil {
				return fmt.Errorf("--artifact-hosts-allow: %w", err)
			}
			grants, err := workflowmgr.ParseGrants(taskQueueGrants)
			if err != nil {
				return fmt.Errorf("--workflow-task-queues: %w", err)
			}
			if chartKeyring != "" {
				if _, err := sources.LoadKeyring(chartKeyring); err != nil {
					return fmt.Errorf("--chart-keyring: %w", err)
				}
			}
			st, keys, closeStore, err := sf.open(ctx)
			if err != nil {
				return err
			}
			defer closeStore()
			contexts, err := appctx.New(ctx, st.Database(), appctx.WithKeys(keys))
			if err != nil {
				return err
			}
			reg := metrics.NewRegistry()
			c, err := tf.dial(ctx, log, reg, keys)
			if err != nil {
				return err
			}
			defer c.Close()
			if err := workers.EnsureSearchAttributes(ctx, c, tf.namespace); err != nil {
				return err
			}
			stopMetrics, err := serveMetrics(metricsAddr, reg, ready(st, c))
			if err != nil {
				return err
			}
			defer stopMetrics()
			creds, err := credentials.New(ctx, st.Database(), keys)
			if err != nil {
				return err
			}
			gitDir := gitCache
			if gitDir == "" { // a worker's own: two workers must not share one (gitops.Writer)
				if gitDir, err = os.MkdirTemp("", "temco-git-"); err != nil {
					return err
				}
				defer os.RemoveAll(gitDir)
			}
			me, release := takeOver(ctx, log, c, tf, workerName, contexts)
			defer release() // until then the slot is held (its lock file open)
			w := workers.New(c, tf.taskQueue, me.String(), workers.Deps{Store: st, Contexts: contexts, Credentials: creds, Keys: keys,
				ClustersPerBatch: perBatch, MaxConns: maxConns, Metrics: metrics.NewClusters(reg), Controllers: gac.WithURLs(registry.All, gac.URLs{Allow: gacHosts}),
				Git: &gitops.Writer{Dir: gitDir}, RenderMemory: int64(renderMemory) << 20, PolicyEngines: engines,
				ArtifactHosts: artifacts, ChartKeyring: chartKeyring, TaskQueueGrants: grants})
			log.Info("worker polling", "task_queue", tf.taskQueue, "namespace", tf.namespace)
			if err := w.Run(worker.InterruptCh()); err != nil {
				return fmt.Errorf("worker: %w", err)
			}
			return nil
		},
	}
	sf.bind(cmd)
	tf.bind(cmd)
	cmd.Flags().StringVar(&metricsAddr, "metrics-addr", env("TEMCO_METRICS_ADDR", ":9016"),
		"listen address of the worker's /metrics and /healthz [TEMCO_METRICS_ADDR]")
	host, _ := os.Hostname()
	cmd.Flags().StringVar(&workerName, "worker-name", env("TEMCO_WORKER_NAME", host),
		"this worker's name in its Temporal identity, unique among the machines of its workers (a restarted worker fails what its predecessor under the same name and slot left running, not to wait for Temporal's timeouts) [TEMCO_WORKER_NAME]")
	cmd.Flags().StringVar(&gitCache, "git-cache", env("TEMCO_GIT_CACHE", ""),
		"directory of this worker's clones of GitOps repositories, not shared with another worker; empty: a temporary one [TEMCO_GIT_CACHE]")
	cmd.Flags().StringVar(&gacURLAllow, "gac-url-allow", env("TEMCO_GAC_URL_ALLOW", ""),
		"hosts (host, any port, or host:port; comma-separated) from which gac may fetch $(URL)$ patch values; none by default, and temco's own kv-pairs route needs none [TEMCO_GAC_URL_ALLOW]")
	cmd.Flags().StringVar(&policyEngines, "policy-engine-allow", env("TEMCO_POLICY_ENGINE_ALLOW", ""),
		"OPA servers (host, any port, or host:port; comma-separated) policy intents may name; the api takes the same list [TEMCO_POLICY_ENGINE_ALLOW]")
	cmd.Flags().StringVar(&taskQueueGrants, "workflow-task-queues", env("TEMCO_WORKFLOW_TASK_QUEUES", ""),
		"task queues projects' policy intents may start workflows on besides their project's own (<project> and <project>/...): project=queue entries, comma-separated, *=queue for every project; the api takes the same list [TEMCO_WORKFLOW_TASK_QUEUES]")
	cmd.Flags().StringVar(&artifactHosts, "artifact-hosts-allow", env("TEMCO_ARTIFACT_HOSTS_ALLOW", ""),
		"OCI registries, Helm repositories and web servers (host, any port, or host:port; comma-separated) apps' charts may come from; the api takes the same list [TEMCO_ARTIFACT_HOSTS_ALLOW]")
	cmd.Flags().StringVar(&chartKeyring, "chart-keyring", env("TEMCO_CHART_KEYRING", ""),
		"public GPG keyring (binary, as helm verify --keyring takes): when set, every chart by reference must carry a Helm provenance file signed by one of its keys, or is refused [TEMCO_CHART_KEYRING]")
	cmd.Flags().IntVar(&renderMemory, "render-memory", envInt("TEMCO_RENDER_MEMORY", render.DefaultSandboxMemory>>20),
		"MiB of memory one chart's rendering may take (each renders in a child process; one per core at once) [TEMCO_RENDER_MEMORY]")
	cmd.Flags().IntVar(&perBatch, "clusters-per-batch", envInt("TEMCO_CLUSTERS_PER_BATCH", 0),
		"clusters per fan-out batch (child workflow); 0 for the default [TEMCO_CLUSTERS_PER_BATCH]")
	cmd.Flags().IntVar(&maxConns, "cluster-conns", envInt("TEMCO_CLUSTER_CONNS", cluster.DefaultMaxConns),
		"cluster connections (credentials, each with its discovery cache) and HTTP transports (servers and TLS identities) a worker keeps; the least recently used beyond are closed [TEMCO_CLUSTER_CONNS]")
	cmd.Flags().IntVar(&deploy.GroupSize, "apply-group", envInt("TEMCO_APPLY_GROUP", deploy.DefaultGroupSize),
		"clusters of a batch one activity applies, deletes or reads together (a cluster that fails goes on in its own activity); 1: one activity per cluster [TEMCO_APPLY_GROUP]")
	return cmd
}

// takeOver claims this worker's slot and fails what its predecessor in it left running
// (workers.TakeOver), before the worker polls: its own attempts must not look like the
// predecessor's. Without a slot (no writable $TMPDIR) the worker runs, and Temporal's
// timeouts retry a predecessor's attempts.
func takeOver(ctx context.Context, log *slog.Logger, c client.Client, tf temporalFlags, name string, contexts *appctx.Store) (workers.Identity, func()) {
	slot, release, err := workers.ClaimSlot(os.TempDir(), tf.namespace, tf.taskQueue)
	if err != nil {
		log.Warn("no worker slot: a predecessor's activities wait for their timeouts", "err", err)
		return workers.NewIdentity(name, -1), func() {}
	}
	me := workers.NewIdentity(name, slot)
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	// The dead attempts' claims on context documents go with them: their retries would
	// wait until each is 5 s old (bench-restart at N = 1,000, 2026-11-30: the three retried
	// groups all ended about 5 s after their first attempts began, 1 s later than others).
	releaseClaims := func(ctx context.Context, runID, activityID string, attempt int32) {
		by := appctx.Attempt{Activity: appctx.ActivityName(runID, activityID), Number: attempt}
		if err := contexts.ReleaseClaims(ctx, by); err != nil {
			log.Warn("releasing a predecessor's claims: its retry waits for them", "activity", by.Activity, "err", err)
		}
	}
	n, err := workers.TakeOver(ctx, c, tf.namespace, tf.taskQueue, me, releaseClaims)
	if err != nil {
		log.Warn("taking over a predecessor's activities: Temporal's timeouts retry them", "err", err)
	} else if n > 0 {
		log.Info("failed a predecessor's activity attempts, to be retried now", "attempts", n)
	}
	return me, release
}

// serveMetrics serves /metrics, /healthz and /readyz on addr until the returned stop is called.
func serveMetrics(addr string, reg *prometheus.Registry, ready func(context.Context) error) (func(), error) {
	mux := http.NewServeMux()
	mux.Handle("/metrics", metrics.Handler(reg))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) })
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, r *http.Request) {
		if err := ready(r.Context()); err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte("ok"))
	})
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("metrics listener on %s: %w", addr, err)
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(l) }()
	return func() { _ = srv.Close() }, nil
}
