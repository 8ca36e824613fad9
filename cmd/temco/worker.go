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
	"github.com/temco/temco/controllers/workflowmgr"
	"github.com/temco/temco/features"
	"github.com/temco/temco/internal/adapters/egress"
	"github.com/temco/temco/internal/adapters/metrics"
	"github.com/temco/temco/internal/adapters/sources"
	"github.com/temco/temco/internal/core/appctx"
	"github.com/temco/temco/workers"
	"github.com/temco/temco/workflows/deploy"
)

func workerCmd() *cobra.Command {
	var cfg workerConfig
	cmd := &cobra.Command{
		Use:   "worker",
		Short: "Run the Temporal worker: lifecycle workflows and their activities",
		RunE: traced("temco-worker", func(cmd *cobra.Command, _ []string) error {
			p, err := newWorker(cmd.Context(), newLogger(), cfg)
			if err != nil {
				return err
			}
			defer p.close()
			return p.run(worker.InterruptCh())
		}),
	}
	cfg.bind(cmd)
	return cmd
}

// workerConfig is temco worker's configuration: a field per flag, each flag defaulting to
// its environment variable. check parses and checks it; newWorker (compose.go) builds the
// worker from it.
type workerConfig struct {
	store           storeConfig
	temporal        temporalConfig
	features        featuresConfig
	metricsAddr     string
	workerName      string
	gitCache        string
	gacURLAllow     string // comma-separated hosts, as egress.Parse reads them
	policyEngines   string
	notifyHosts     string
	artifactHosts   string
	taskQueueGrants string // project=queue entries, as workflowmgr.ParseGrants reads them
	chartKeyring    string
	renderMemory    int // MiB
	perBatch        int
	maxConns        int
	applyGroup      int // deploy.GroupSize
}

// workerLists are the lists of a workerConfig, parsed by check.
type workerLists struct {
	gacHosts, policyEngines, artifactHosts, notifyHosts *egress.Allow
	taskQueueGrants                                     map[string][]string
	features                                            []features.Feature // the features on
}

// check parses cfg's lists, and reads the chart keyring to refuse one that is not.
func (c *workerConfig) check() (workerLists, error) {
	var l workerLists
	var err error
	if err = c.store.check(); err != nil {
		return l, err
	}
	if l.features, err = c.features.check(); err != nil {
		return l, err
	}
	if c.renderMemory < 256 {
		return l, fmt.Errorf("--render-memory: %d MiB is too little for a rendering (at least 256)", c.renderMemory)
	}
	if l.gacHosts, err = egress.Parse(c.gacURLAllow); err != nil {
		return l, fmt.Errorf("--gac-url-allow: %w", err)
	}
	if l.policyEngines, err = egress.Parse(c.policyEngines); err != nil {
		return l, fmt.Errorf("--policy-engine-allow: %w", err)
	}
	if l.notifyHosts, err = egress.Parse(c.notifyHosts); err != nil {
		return l, fmt.Errorf("--notify-hosts-allow: %w", err)
	}
	if l.artifactHosts, err = egress.Parse(c.artifactHosts); err != nil {
		return l, fmt.Errorf("--artifact-hosts-allow: %w", err)
	}
	if l.taskQueueGrants, err = workflowmgr.ParseGrants(c.taskQueueGrants); err != nil {
		return l, fmt.Errorf("--workflow-task-queues: %w", err)
	}
	if c.chartKeyring != "" {
		if _, err := sources.LoadKeyring(c.chartKeyring); err != nil {
			return l, fmt.Errorf("--chart-keyring: %w", err)
		}
	}
	return l, nil
}

// bind declares cfg's flags on cmd, their defaults read from the environment.
func (c *workerConfig) bind(cmd *cobra.Command) {
	c.store.bind(cmd)
	c.temporal.bind(cmd)
	c.features.bind(cmd)
	f := cmd.Flags()
	f.StringVar(&c.metricsAddr, "metrics-addr", env("TEMCO_METRICS_ADDR", ":9016"),
		"listen address of the worker's /metrics and /healthz [TEMCO_METRICS_ADDR]")
	host, _ := os.Hostname()
	f.StringVar(&c.workerName, "worker-name", env("TEMCO_WORKER_NAME", host),
		"this worker's name in its Temporal identity, unique among the machines of its workers (a restarted worker fails what its predecessor under the same name and slot left running, not to wait for Temporal's timeouts) [TEMCO_WORKER_NAME]")
	f.StringVar(&c.gitCache, "git-cache", env("TEMCO_GIT_CACHE", ""),
		"directory of this worker's clones of GitOps repositories, not shared with another worker; empty: a temporary one [TEMCO_GIT_CACHE]")
	f.StringVar(&c.gacURLAllow, "gac-url-allow", env("TEMCO_GAC_URL_ALLOW", ""),
		"hosts (host, any port, or host:port; comma-separated) from which gac may fetch $(URL)$ patch values; none by default, and temco's own kv-pairs route needs none [TEMCO_GAC_URL_ALLOW]")
	f.StringVar(&c.notifyHosts, "notify-hosts-allow", env("TEMCO_NOTIFY_HOSTS_ALLOW", ""),
		"hosts (host, any port, or host:port; comma-separated) notification receivers may be on; none by default; the api takes the same list [TEMCO_NOTIFY_HOSTS_ALLOW]")
	f.StringVar(&c.policyEngines, "policy-engine-allow", env("TEMCO_POLICY_ENGINE_ALLOW", ""),
		"OPA servers (host, any port, or host:port; comma-separated) policy intents may name; the api takes the same list [TEMCO_POLICY_ENGINE_ALLOW]")
	f.StringVar(&c.taskQueueGrants, "workflow-task-queues", env("TEMCO_WORKFLOW_TASK_QUEUES", ""),
		"task queues projects' policy intents may start workflows on besides their project's own (<project> and <project>/...): project=queue entries, comma-separated, *=queue for every project; the api takes the same list [TEMCO_WORKFLOW_TASK_QUEUES]")
	f.StringVar(&c.artifactHosts, "artifact-hosts-allow", env("TEMCO_ARTIFACT_HOSTS_ALLOW", ""),
		"OCI registries, Helm repositories and web servers (host, any port, or host:port; comma-separated) apps' charts may come from; the api takes the same list [TEMCO_ARTIFACT_HOSTS_ALLOW]")
	f.StringVar(&c.chartKeyring, "chart-keyring", env("TEMCO_CHART_KEYRING", ""),
		"public GPG keyring (binary, as helm verify --keyring takes): when set, every chart by reference must carry a Helm provenance file signed by one of its keys, or is refused [TEMCO_CHART_KEYRING]")
	f.IntVar(&c.renderMemory, "render-memory", envInt("TEMCO_RENDER_MEMORY", render.DefaultSandboxMemory>>20),
		"MiB of memory one chart's rendering may take (each renders in a child process; one per core at once) [TEMCO_RENDER_MEMORY]")
	f.IntVar(&c.perBatch, "clusters-per-batch", envInt("TEMCO_CLUSTERS_PER_BATCH", 0),
		"clusters per fan-out batch (child workflow); 0 for the default [TEMCO_CLUSTERS_PER_BATCH]")
	f.IntVar(&c.maxConns, "cluster-conns", envInt("TEMCO_CLUSTER_CONNS", cluster.DefaultMaxConns),
		"cluster connections (credentials, each with its discovery cache) and HTTP transports (servers and TLS identities) a worker keeps; the least recently used beyond are closed [TEMCO_CLUSTER_CONNS]")
	f.IntVar(&c.applyGroup, "apply-group", envInt("TEMCO_APPLY_GROUP", deploy.DefaultGroupSize),
		"clusters of a batch one activity applies, deletes or reads together (a cluster that fails goes on in its own activity); 1: one activity per cluster [TEMCO_APPLY_GROUP]")
}

// takeOver claims this worker's slot and fails what its predecessor in it left running
// (workers.TakeOver), before the worker polls: its own attempts must not look like the
// predecessor's. Without a slot (no writable $TMPDIR) the worker runs, and Temporal's
// timeouts retry a predecessor's attempts.
func takeOver(ctx context.Context, log *slog.Logger, c client.Client, tf temporalConfig, name string, contexts *appctx.Store) (workers.Identity, func()) {
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
