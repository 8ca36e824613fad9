package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"go.temporal.io/sdk/client"
	temporallog "go.temporal.io/sdk/log"

	"github.com/temco/temco/api"
	"github.com/temco/temco/controllers"
	"github.com/temco/temco/controllers/cacerts"
	"github.com/temco/temco/controllers/ncm"
	"github.com/temco/temco/controllers/registry"
	"github.com/temco/temco/controllers/workflowmgr"
	"github.com/temco/temco/internal/adapters/auth"
	"github.com/temco/temco/internal/adapters/codec"
	"github.com/temco/temco/internal/adapters/egress"
	"github.com/temco/temco/internal/adapters/metrics"
	"github.com/temco/temco/internal/adapters/tlsconfig"
	"github.com/temco/temco/internal/core/appctx"
	"github.com/temco/temco/internal/core/lifecycle"
	"github.com/temco/temco/internal/core/seal"
	"github.com/temco/temco/internal/core/store"
	"github.com/temco/temco/starter"
	"github.com/temco/temco/workflows/health"
)

// storeFlags are the MongoDB and encryption settings shared by api and worker.
type storeFlags struct {
	mongoURI, mongoDB, keyFile string
}

func (f *storeFlags) bind(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.mongoURI, "mongo-uri", env("TEMCO_MONGO_URI", "mongodb://127.0.0.1:27017/"), "MongoDB connection string [TEMCO_MONGO_URI]")
	cmd.Flags().StringVar(&f.mongoDB, "mongo-db", env("TEMCO_MONGO_DB", "temco"), "MongoDB database [TEMCO_MONGO_DB]")
	cmd.Flags().StringVar(&f.keyFile, "key-file", env("TEMCO_KEY_FILE", ""), "encryption key file for secrets at rest [TEMCO_KEY_FILE]")
}

func (f *storeFlags) open(ctx context.Context) (*store.Store, *seal.Keyring, func(), error) {
	if f.keyFile == "" {
		return nil, nil, nil, errors.New("--key-file (TEMCO_KEY_FILE) is required: secrets are stored encrypted")
	}
	keys, err := seal.LoadKeyFile(f.keyFile)
	if err != nil {
		return nil, nil, nil, err
	}
	st, client, err := store.Open(ctx, f.mongoURI, f.mongoDB)
	if err != nil {
		return nil, nil, nil, err
	}
	return st, keys, func() { _ = client.Disconnect(context.Background()) }, nil
}

func newLogger() *slog.Logger {
	return slog.New(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
}

// defaultAPIAddr is loopback: an API that anyone on the network may reach (and, without
// --auth-issuer, change) is a choice made explicitly.
const defaultAPIAddr = "127.0.0.1:9015"

func newHTTPServer(addr string, h http.Handler) *http.Server {
	return &http.Server{Addr: addr, Handler: h, ReadHeaderTimeout: api.ReadHeaderTimeout,
		ReadTimeout: api.ReadTimeout, WriteTimeout: api.WriteTimeout, IdleTimeout: api.IdleTimeout}
}

// warnUnauthenticated says, once at start, what an API without authentication lets its
// callers do.
func warnUnauthenticated(log *slog.Logger, s *api.Server, addr string) {
	if s.Auth == nil {
		log.Warn("AUTHENTICATION IS OFF: every caller is an admin, of every project, cluster and credential; "+
			"set --auth-issuer (TEMCO_AUTH_ISSUER) to require tokens", "addr", addr)
	}
}

func apiCmd() *cobra.Command {
	var sf storeFlags
	var tf temporalFlags
	var addr, certFile, keyFile string
	var af auth.Config
	var codecOrigins, hosts, allowedOrigins []string
	var temporalUI, workflowHosts, taskQueueGrants, policyEngines, artifactHosts string
	var certOrgs []string
	var liveReads int
	var probeInterval time.Duration
	cmd := &cobra.Command{
		Use:   "api",
		Short: "Serve the EMCO v2 REST API",
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			st, keys, closeStore, err := sf.open(ctx)
			if err != nil {
				return err
			}
			defer closeStore()
			log := newLogger()
			contexts, err := appctx.New(ctx, st.Database(), appctx.WithKeys(keys))
			if err != nil {
				return err
			}
			reg := metrics.NewRegistry()
			tc, err := tf.dial(ctx, log, reg, keys)
			if err != nil {
				return err
			}
			defer tc.Close()
			// Users' workflows (workflowmgr) are read and written with plain payloads: their
			// workers hold none of temco's keys, and a tenant's route must never open
			// temco's. Only a Relocate intent's own runs are read with temco's keys. Both
			// clients share tc's connection.
			users, err := client.NewClientFromExisting(tc, client.Options{Namespace: tf.namespace, Logger: temporallog.NewStructuredLogger(log)})
			if err != nil {
				return err
			}
			defer users.Close()
			builtin := users
			if tf.encryptPayloads {
				dc := codec.ReadingConverter(keys)
				if builtin, err = client.NewClientFromExisting(tc, client.Options{Namespace: tf.namespace, Logger: temporallog.NewStructuredLogger(log),
					DataConverter: dc, FailureConverter: codec.ReadingFailureConverter(dc)}); err != nil {
					return err
				}
				defer builtin.Close()
			}
			egressAllow, err := egress.Parse(workflowHosts)
			if err != nil {
				return fmt.Errorf("--workflow-hosts-allow: %w", err)
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
			workflows := &workflowmgr.Temporal{Own: users, Builtin: builtin, Egress: egressAllow, Log: log,
				Rules: workflowmgr.Rules{OwnTaskQueue: tf.taskQueue, Grants: grants}}
			ops := &starter.Starter{Client: tc, TaskQueue: tf.taskQueue}
			server := &api.Server{Store: st, Contexts: contexts, Keys: keys, Log: log, Registry: reg,
				Ops: ops, Drift: ops, Autoscalers: ops, Inventories: ops, PolicyAgents: ops, PolicyEngines: engines, ArtifactHosts: artifacts, Ready: ready(st, tc),
				TemporalUI: strings.TrimSuffix(temporalUI, "/"), Namespace: tf.namespace,
				Controllers: controllers.API(registry.All, controllers.APIDeps{Workflows: workflows}),
				Kinds:       slices.Concat(ncm.Kinds, cacerts.KindsWith(cacerts.Policy{Organizations: certOrgs}), workflowmgr.Kinds(workflows))}
			if tf.encryptPayloads {
				server.Codec = codec.Codec{Keys: keys}
			}
			if liveReads < 0 {
				return fmt.Errorf("--live-reads-per-minute %d: use 0 (no limit) or more", liveReads)
			}
			server.LiveReadsPerMinute = liveReads
			if err := browserRules(server, hosts, allowedOrigins, codecOrigins); err != nil {
				return err
			}
			if af.Issuer == "" && (af.Audience != "" || af.JWKSURL != "" || af.PublicKeyFile != "") {
				return errors.New("--auth-issuer (TEMCO_AUTH_ISSUER) is required to turn authentication on")
			}
			if af.Issuer != "" {
				if server.Auth, err = auth.New(ctx, af); err != nil {
					return err
				}
			}
			srv := newHTTPServer(addr, server.Handler())
			if certFile != "" || keyFile != "" {
				if srv.TLSConfig, err = tlsconfig.Server(certFile, keyFile); err != nil {
					return err
				}
			}
			errc := make(chan error, 1)
			go func() {
				if srv.TLSConfig != nil {
					errc <- srv.ListenAndServeTLS("", "")
				} else {
					errc <- srv.ListenAndServe()
				}
			}()
			if probeInterval > 0 {
				go wakeClusterHealth(ctx, log, ops, lifecycle.HealthInput{Interval: probeInterval})
			}
			log.Info("api listening", "addr", addr, "tls", srv.TLSConfig != nil, "authentication", server.Auth != nil, "payload_encryption", tf.encryptPayloads,
				"hosts", server.Hosts, "allowed_origins", server.AllowedOrigins)
			warnUnauthenticated(log, server, addr)
			select {
			case err := <-errc:
				return fmt.Errorf("listen on %s: %w", addr, err)
			case <-ctx.Done():
			}
			shutdown, cancel := context.WithTimeout(context.Background(), 15*time.Second)
			defer cancel()
			return srv.Shutdown(shutdown)
		},
	}
	sf.bind(cmd)
	tf.bind(cmd)
	cmd.Flags().StringVar(&addr, "addr", env("TEMCO_API_ADDR", defaultAPIAddr),
		"listen address; \":9015\" listens on every interface [TEMCO_API_ADDR]")
	cmd.Flags().StringVar(&certFile, "tls-cert", env("TEMCO_API_TLS_CERT", ""), "serve HTTPS with this PEM certificate, reloaded when it changes [TEMCO_API_TLS_CERT]")
	cmd.Flags().StringVar(&keyFile, "tls-key", env("TEMCO_API_TLS_KEY", ""), "key of --tls-cert [TEMCO_API_TLS_KEY]")
	cmd.Flags().StringVar(&af.Issuer, "auth-issuer", env("TEMCO_AUTH_ISSUER", ""),
		"require bearer tokens from this issuer (\"iss\"); authentication is off when empty [TEMCO_AUTH_ISSUER]")
	cmd.Flags().StringVar(&af.Audience, "auth-audience", env("TEMCO_AUTH_AUDIENCE", ""), "audience tokens must carry (\"aud\") [TEMCO_AUTH_AUDIENCE]")
	cmd.Flags().StringVar(&af.JWKSURL, "auth-jwks-url", env("TEMCO_AUTH_JWKS_URL", ""), "the issuer's JSON Web Key Set URL [TEMCO_AUTH_JWKS_URL]")
	cmd.Flags().StringVar(&af.PublicKeyFile, "auth-public-key-file", env("TEMCO_AUTH_PUBLIC_KEY_FILE", ""),
		"PEM public keys or certificates verifying tokens, instead of a JWKS URL [TEMCO_AUTH_PUBLIC_KEY_FILE]")
	cmd.Flags().StringVar(&af.RolesClaim, "auth-roles-claim", env("TEMCO_AUTH_ROLES_CLAIM", "roles"),
		"claim holding the caller's roles, dotted when nested (realm_access.roles) [TEMCO_AUTH_ROLES_CLAIM]")
	cmd.Flags().StringVar(&af.AdminRole, "auth-admin-role", env("TEMCO_AUTH_ADMIN_ROLE", "admin"),
		"role of administrators; tenants hold \"project:<name>\" roles [TEMCO_AUTH_ADMIN_ROLE]")
	cmd.Flags().StringVar(&af.ControllerRole, "auth-controller-role", env("TEMCO_AUTH_CONTROLLER_ROLE", "controller"),
		"role of external intent controllers: they may use the contexts' controller views (/v2/contexts/...) only [TEMCO_AUTH_CONTROLLER_ROLE]")
	cmd.Flags().StringVar(&temporalUI, "temporal-ui-url", env("TEMCO_TEMPORAL_UI_URL", ""),
		"the Temporal Web UI's address, for the dashboard's links to workflows [TEMCO_TEMPORAL_UI_URL]")
	cmd.Flags().StringVar(&policyEngines, "policy-engine-allow", env("TEMCO_POLICY_ENGINE_ALLOW", ""),
		"OPA servers (host, any port, or host:port; comma-separated) a policy intent's engineUrl may name; none by default: the embedded engine needs none. The worker takes the same list [TEMCO_POLICY_ENGINE_ALLOW]")
	cmd.Flags().StringVar(&artifactHosts, "artifact-hosts-allow", env("TEMCO_ARTIFACT_HOSTS_ALLOW", ""),
		"OCI registries, Helm repositories and web servers (host, any port, or host:port; comma-separated) apps' charts may come from (spec.chart); none by default. The worker takes the same list [TEMCO_ARTIFACT_HOSTS_ALLOW]")
	cmd.Flags().StringVar(&workflowHosts, "workflow-hosts-allow", env("TEMCO_WORKFLOW_HOSTS_ALLOW", ""),
		"hosts (host, any port, or host:port; comma-separated) of Temporal servers and EMCO workflow clients that workflow intents may name; none by default [TEMCO_WORKFLOW_HOSTS_ALLOW]")
	cmd.Flags().StringVar(&taskQueueGrants, "workflow-task-queues", env("TEMCO_WORKFLOW_TASK_QUEUES", ""),
		"task queues tenants' intents may use besides their project's own (<project> and <project>/...): project=queue entries, comma-separated, *=queue for every project [TEMCO_WORKFLOW_TASK_QUEUES]")
	cmd.Flags().StringSliceVar(&certOrgs, "ca-cert-organizations", envList("TEMCO_CA_CERT_ORGANIZATIONS"),
		"subject organizations tenants' CA certificate intents may name (with a cluster's own signer they are Kubernetes groups); none by default [TEMCO_CA_CERT_ORGANIZATIONS, comma-separated]")
	cmd.Flags().IntVar(&liveReads, "live-reads-per-minute", envInt("TEMCO_LIVE_READS_PER_MINUTE", api.DefaultLiveReadsPerMinute),
		"live reads of clusters (status=ready, the dashboard's live view) each caller may start a minute; 0: no limit [TEMCO_LIVE_READS_PER_MINUTE]")
	cmd.Flags().DurationVar(&probeInterval, "cluster-probe-interval", envDuration("TEMCO_CLUSTER_PROBE_INTERVAL", health.DefaultInterval),
		"how often every registered cluster's API server is probed (the ClusterHealth workflow; the fleet's reachability); 0: the api starts no probes [TEMCO_CLUSTER_PROBE_INTERVAL]")
	cmd.Flags().StringSliceVar(&codecOrigins, "codec-cors-origins", envList("TEMCO_CODEC_CORS_ORIGINS"),
		"browser origins (the Temporal UI's, scheme://host[:port]) allowed to call /codec; none by default [TEMCO_CODEC_CORS_ORIGINS, comma-separated]")
	cmd.Flags().StringSliceVar(&hosts, "hosts", envList("TEMCO_API_HOSTS"),
		"host names the api is called by besides IP addresses and localhost (its Service's, an ingress's); others are refused, against DNS rebinding; \"*\" for any, behind a proxy that checks them [TEMCO_API_HOSTS, comma-separated]")
	cmd.Flags().StringSliceVar(&allowedOrigins, "allowed-origins", envList("TEMCO_API_ALLOWED_ORIGINS"),
		"browser origins (scheme://host[:port]) whose pages may call the api besides its own (the dashboard's); none by default [TEMCO_API_ALLOWED_ORIGINS, comma-separated]")
	return cmd
}

// browserRules sets what keeps other sites' pages out of the api (api/crosssite.go): the
// host names it serves and the browser origins it takes requests from.
func browserRules(s *api.Server, hosts, allowedOrigins, codecOrigins []string) error {
	var err error
	if s.Hosts, err = api.ParseHosts(hosts); err != nil {
		return fmt.Errorf("--hosts (TEMCO_API_HOSTS): %w", err)
	}
	if s.AllowedOrigins, err = api.ParseOrigins(allowedOrigins); err != nil {
		return fmt.Errorf("--allowed-origins (TEMCO_API_ALLOWED_ORIGINS): %w", err)
	}
	if s.CodecOrigins, err = api.ParseOrigins(codecOrigins); err != nil {
		return fmt.Errorf("--codec-cors-origins (TEMCO_CODEC_CORS_ORIGINS): %w", err)
	}
	return nil
}

// wakeClusterHealth starts the ClusterHealth workflow (or gives the running one in's
// pace), trying again while Temporal does not answer: the probes must run whichever api
// started first.
func wakeClusterHealth(ctx context.Context, log *slog.Logger, ops *starter.Starter, in lifecycle.HealthInput) {
	for wait := time.Second; ; wait = min(2*wait, time.Minute) {
		err := ops.WakeClusterHealth(ctx, in)
		if err == nil {
			return
		}
		log.Warn("start the cluster probes; trying again", "in", wait, "error", err)
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
	}
}
