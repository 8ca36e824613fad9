package main

// The composition root: temco api and temco worker are built here, and only here, from
// their configuration (apiConfig, workerConfig). main runs what newAPI and newWorker
// build, the tests build them the same way, and `temco dev` runs the binary.

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.temporal.io/sdk/client"
	temporallog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/worker"

	"github.com/temco/temco/api"
	"github.com/temco/temco/controllers"
	"github.com/temco/temco/controllers/cacerts"
	"github.com/temco/temco/controllers/gac"
	"github.com/temco/temco/controllers/ncm"
	"github.com/temco/temco/controllers/registry"
	"github.com/temco/temco/controllers/workflowmgr"
	"github.com/temco/temco/features"
	featureregistry "github.com/temco/temco/features/registry"
	"github.com/temco/temco/internal/adapters/auth"
	"github.com/temco/temco/internal/adapters/codec"
	"github.com/temco/temco/internal/adapters/credentials"
	"github.com/temco/temco/internal/adapters/gitops"
	"github.com/temco/temco/internal/adapters/metrics"
	"github.com/temco/temco/internal/adapters/tlsconfig"
	"github.com/temco/temco/internal/adapters/tracing"
	"github.com/temco/temco/internal/core/appctx"
	"github.com/temco/temco/internal/core/events/feed"
	"github.com/temco/temco/internal/core/seal"
	"github.com/temco/temco/internal/core/store"
	"github.com/temco/temco/starter"
	"github.com/temco/temco/workers"
	"github.com/temco/temco/workflows/deploy"
)

// closers close what a composition opened, the last opened first.
type closers []func()

func (c *closers) add(close func()) { *c = append(*c, close) }

func (c closers) close() {
	for i := len(c) - 1; i >= 0; i-- {
		c[i]()
	}
}

// core is what api and worker both build first: the store with its keys and AppContexts,
// the metrics registry and the Temporal client.
type core struct {
	log      *slog.Logger
	store    *store.Store
	keys     *seal.Keyring
	contexts *appctx.Store
	metrics  *prometheus.Registry
	temporal client.Client
}

// openCore opens the store and dials Temporal; opened gets what closes them.
func openCore(ctx context.Context, log *slog.Logger, sc storeConfig, tc temporalConfig, opened *closers) (*core, error) {
	reg := metrics.NewRegistry()
	st, keys, closeStore, err := sc.open(ctx, metrics.NewStore(reg))
	if err != nil {
		return nil, err
	}
	opened.add(closeStore)
	contexts, err := appctx.New(ctx, st.Database(), appctx.WithKeys(keys))
	if err != nil {
		return nil, err
	}
	if err := feed.Open(st.Database()).EnsureIndexes(ctx); err != nil {
		return nil, err
	}
	c, err := tc.dial(ctx, log, reg, keys)
	if err != nil {
		return nil, err
	}
	opened.add(c.Close)
	return &core{log: log, store: st, keys: keys, contexts: contexts, metrics: reg, temporal: c}, nil
}

// apiProcess is temco api built: its REST server on its HTTP server, and the starter of
// its workflows.
type apiProcess struct {
	*core
	cfg      apiConfig
	features []features.Feature // those on
	ops      *starter.Starter
	server   *api.Server
	http     *http.Server
	opened   closers
}

// newAPI builds temco api from cfg, once checked: the store and Temporal, the users'
// workflows' clients, the REST server with its authentication, the HTTP server. On an
// error, what it opened is closed.
func newAPI(ctx context.Context, log *slog.Logger, cfg apiConfig) (_ *apiProcess, err error) {
	lists, err := cfg.check()
	if err != nil {
		return nil, err
	}
	p := &apiProcess{cfg: cfg, features: lists.features}
	defer func() {
		if err != nil {
			p.close()
		}
	}()
	if p.core, err = openCore(ctx, log, cfg.store, cfg.temporal, &p.opened); err != nil {
		return nil, err
	}
	workflows, err := p.usersWorkflows(lists)
	if err != nil {
		return nil, err
	}
	p.ops = &starter.Starter{Client: p.temporal, TaskQueue: cfg.temporal.taskQueue}
	p.server = p.restServer(lists, workflows)
	if cfg.auth.Issuer != "" {
		if p.server.Auth, err = auth.New(ctx, cfg.auth); err != nil {
			return nil, err
		}
	}
	p.http = newHTTPServer(cfg.addr, tracing.Handler(p.server.Handler()))
	if cfg.tlsCert != "" || cfg.tlsKey != "" {
		if p.http.TLSConfig, err = tlsconfig.Server(cfg.tlsCert, cfg.tlsKey); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// usersWorkflows serves users' workflows (workflowmgr). They are read and written with
// plain payloads: their workers hold none of temco's keys, and a tenant's route must
// never open temco's. Only a Relocate intent's own runs are read with temco's keys. Both
// clients share the core's connection.
func (p *apiProcess) usersWorkflows(lists apiLists) (*workflowmgr.Temporal, error) {
	tc := p.cfg.temporal
	users, err := client.NewClientFromExisting(p.temporal, client.Options{Namespace: tc.namespace, Logger: temporallog.NewStructuredLogger(p.log)})
	if err != nil {
		return nil, err
	}
	p.opened.add(users.Close)
	builtin := users
	if tc.encryptPayloads {
		dc := codec.ReadingConverter(p.keys)
		if builtin, err = client.NewClientFromExisting(p.temporal, client.Options{Namespace: tc.namespace, Logger: temporallog.NewStructuredLogger(p.log),
			DataConverter: dc, FailureConverter: codec.ReadingFailureConverter(dc)}); err != nil {
			return nil, err
		}
		p.opened.add(builtin.Close)
	}
	return &workflowmgr.Temporal{Own: users, Builtin: builtin, Egress: lists.workflowHosts, Log: p.log,
		Rules: workflowmgr.Rules{OwnTaskQueue: tc.taskQueue, Grants: lists.taskQueueGrants}}, nil
}

// restServer is the REST API on the core's parts, with the built-in intent controllers
// and temco's other services.
func (p *apiProcess) restServer(lists apiLists, workflows *workflowmgr.Temporal) *api.Server {
	cfg := p.cfg
	s := &api.Server{Store: p.store, Contexts: p.contexts, Keys: p.keys, Log: p.log, Registry: p.metrics,
		Ops: p.ops, Pollers: p.ops.Pollers, Activities: p.temporal, ArtifactHosts: lists.artifactHosts, Ready: ready(p.store, p.temporal),
		TemporalUI: strings.TrimSuffix(cfg.temporalUI, "/"), Namespace: cfg.temporal.namespace,
		Controllers:        controllers.API(registry.All, controllers.APIDeps{Workflows: workflows}),
		Kinds:              slices.Concat(ncm.Kinds, cacerts.KindsWith(cacerts.Policy{Organizations: cfg.certOrgs}), workflowmgr.Kinds(workflows)),
		LiveReadsPerMinute: cfg.liveReads,
		MaxStoreRequests:   cfg.maxStoreRequests,
		Hosts:              lists.browser.hosts, AllowedOrigins: lists.browser.allowedOrigins, CodecOrigins: lists.browser.codecOrigins}
	if cfg.temporal.encryptPayloads {
		s.Codec = codec.Codec{Keys: p.keys}
	}
	s.Extensions = extensions(featureregistry.All, features.Mounting{Starter: p.ops, PolicyEngines: lists.policyEngines, NotifyHosts: lists.notifyHosts}, lists.features)
	return s
}

// run serves until ctx ends, then shuts down within 15 s; meanwhile it keeps the
// cluster probes' workflow started.
func (p *apiProcess) run(ctx context.Context) error {
	addr := p.cfg.addr
	errc := make(chan error, 1)
	go func() {
		if p.http.TLSConfig != nil {
			errc <- p.http.ListenAndServeTLS("", "")
		} else {
			errc <- p.http.ListenAndServe()
		}
	}()
	serveFeatures(ctx, features.Serving{Starter: p.ops, Log: p.log, ProbeInterval: p.cfg.probeInterval}, p.features)
	p.log.Info("api listening", "addr", addr, "tls", p.http.TLSConfig != nil, "authentication", p.server.Auth != nil, "payload_encryption", p.cfg.temporal.encryptPayloads,
		"hosts", p.server.Hosts, "allowed_origins", p.server.AllowedOrigins)
	warnUnauthenticated(p.log, p.server, addr)
	select {
	case err := <-errc:
		return fmt.Errorf("listen on %s: %w", addr, err)
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	return p.http.Shutdown(shutdown)
}

// close closes what newAPI opened.
func (p *apiProcess) close() { p.opened.close() }

// workerProcess is temco worker built: a Temporal worker with every workflow and
// activity registered, and its /metrics.
type workerProcess struct {
	*core
	cfg    workerConfig
	worker worker.Worker
	opened closers
}

// newWorker builds temco worker from cfg, once checked: the store and Temporal (its
// search attributes registered), /metrics, the activities' dependencies, and the worker
// in its slot, its predecessor's attempts failed. On an error, what it opened is closed.
func newWorker(ctx context.Context, log *slog.Logger, cfg workerConfig) (_ *workerProcess, err error) {
	lists, err := cfg.check()
	if err != nil {
		return nil, err
	}
	p := &workerProcess{cfg: cfg}
	defer func() {
		if err != nil {
			p.close()
		}
	}()
	if p.core, err = openCore(ctx, log, cfg.store, cfg.temporal, &p.opened); err != nil {
		return nil, err
	}
	if err := workers.EnsureSearchAttributes(ctx, p.temporal, cfg.temporal.namespace); err != nil {
		return nil, err
	}
	stopMetrics, err := serveMetrics(cfg.metricsAddr, p.metrics, ready(p.store, p.temporal))
	if err != nil {
		return nil, err
	}
	p.opened.add(stopMetrics)
	creds, err := credentials.New(ctx, p.store.Database(), p.keys)
	if err != nil {
		return nil, err
	}
	gitDir, err := p.gitCache()
	if err != nil {
		return nil, err
	}
	me, release := takeOver(ctx, log, p.temporal, cfg.temporal, cfg.workerName, p.contexts)
	p.opened.add(release) // until then the slot is held (its lock file open)
	deploy.GroupSize = cfg.applyGroup
	p.worker = workers.New(p.temporal, cfg.temporal.taskQueue, me.String(), p.deps(lists, creds, gitDir), lists.features)
	return p, nil
}

// gitCache is the directory of the worker's clones of GitOps repositories: --git-cache,
// else a temporary one of its own (two workers must not share one: gitops.Writer).
func (p *workerProcess) gitCache() (string, error) {
	if p.cfg.gitCache != "" {
		return p.cfg.gitCache, nil
	}
	dir, err := os.MkdirTemp("", "temco-git-")
	if err != nil {
		return "", err
	}
	p.opened.add(func() { _ = os.RemoveAll(dir) })
	return dir, nil
}

// deps are what the worker's activities are built from.
func (p *workerProcess) deps(lists workerLists, creds *credentials.Store, gitDir string) workers.Deps {
	cfg := p.cfg
	return workers.Deps{Store: p.store, Contexts: p.contexts, Credentials: creds, Keys: p.keys,
		ClustersPerBatch: cfg.perBatch, MaxConns: cfg.maxConns, Metrics: metrics.NewClusters(p.metrics), Controllers: gac.WithURLs(registry.All, gac.URLs{Allow: lists.gacHosts}),
		Git: &gitops.Writer{Dir: gitDir}, RenderMemory: int64(cfg.renderMemory) << 20, PolicyEngines: lists.policyEngines, NotifyHosts: lists.notifyHosts,
		ArtifactHosts: lists.artifactHosts, ChartKeyring: cfg.chartKeyring, TaskQueueGrants: lists.taskQueueGrants}
}

// run polls the task queue until interrupt says to stop.
func (p *workerProcess) run(interrupt <-chan any) error {
	p.log.Info("worker polling", "task_queue", p.cfg.temporal.taskQueue, "namespace", p.cfg.temporal.namespace)
	if err := p.worker.Run(interrupt); err != nil {
		return fmt.Errorf("worker: %w", err)
	}
	return nil
}

// close closes what newWorker opened.
func (p *workerProcess) close() { p.opened.close() }
