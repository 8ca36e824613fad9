package main

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/temco/temco/api"
	"github.com/temco/temco/controllers/workflowmgr"
	"github.com/temco/temco/features"
	"github.com/temco/temco/features/health/flow"
	"github.com/temco/temco/internal/adapters/auth"
	"github.com/temco/temco/internal/adapters/egress"
)

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
	var cfg apiConfig
	cmd := &cobra.Command{
		Use:   "api",
		Short: "Serve the EMCO v2 REST API",
		RunE: traced("temco-api", func(cmd *cobra.Command, _ []string) error {
			p, err := newAPI(cmd.Context(), newLogger(), cfg)
			if err != nil {
				return err
			}
			defer p.close()
			return p.run(cmd.Context())
		}),
	}
	cfg.bind(cmd)
	return cmd
}

// apiConfig is temco api's configuration: a field per flag, each flag defaulting to its
// environment variable. check parses and checks it, so that a mistyped setting stops the
// api at its start, naming the setting; newAPI (compose.go) builds the api from it.
type apiConfig struct {
	store            storeConfig
	temporal         temporalConfig
	features         featuresConfig
	addr             string
	tlsCert, tlsKey  string
	auth             auth.Config
	temporalUI       string
	policyEngines    string // comma-separated hosts, as egress.Parse reads them
	notifyHosts      string // comma-separated hosts, as egress.Parse reads them
	artifactHosts    string
	workflowHosts    string
	taskQueueGrants  string // project=queue entries, as workflowmgr.ParseGrants reads them
	certOrgs         []string
	liveReads        int
	maxStoreRequests int
	probeInterval    time.Duration
	codecOrigins     []string
	hosts            []string
	allowedOrigins   []string
}

// apiLists are the lists of an apiConfig, parsed by check.
type apiLists struct {
	policyEngines, artifactHosts, workflowHosts, notifyHosts *egress.Allow
	taskQueueGrants                                          map[string][]string
	browser                                                  browserRules
	features                                                 []features.Feature // the features on
}

// check parses cfg's lists and refuses settings that cannot work together.
func (c *apiConfig) check() (apiLists, error) {
	var l apiLists
	var err error
	if err = c.store.check(); err != nil {
		return l, err
	}
	if l.features, err = c.features.check(); err != nil {
		return l, err
	}
	if l.workflowHosts, err = egress.Parse(c.workflowHosts); err != nil {
		return l, fmt.Errorf("--workflow-hosts-allow: %w", err)
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
	if c.maxStoreRequests < -1 {
		return l, fmt.Errorf("--max-store-requests %d: use 0 (4 per core), -1 (no bound) or a number of requests", c.maxStoreRequests)
	}
	if c.liveReads < 0 {
		return l, fmt.Errorf("--live-reads-per-minute %d: use 0 (no limit) or more", c.liveReads)
	}
	if l.browser, err = parseBrowserRules(c.hosts, c.allowedOrigins, c.codecOrigins); err != nil {
		return l, err
	}
	if c.auth.Issuer == "" && (c.auth.Audience != "" || c.auth.JWKSURL != "" || c.auth.PublicKeyFile != "") {
		return l, errors.New("--auth-issuer (TEMCO_AUTH_ISSUER) is required to turn authentication on")
	}
	return l, nil
}

// bind declares cfg's flags on cmd, their defaults read from the environment.
func (c *apiConfig) bind(cmd *cobra.Command) {
	c.store.bind(cmd)
	c.temporal.bind(cmd)
	c.features.bind(cmd)
	f := cmd.Flags()
	f.StringVar(&c.addr, "addr", env("TEMCO_API_ADDR", defaultAPIAddr),
		"listen address; \":9015\" listens on every interface [TEMCO_API_ADDR]")
	f.StringVar(&c.tlsCert, "tls-cert", env("TEMCO_API_TLS_CERT", ""), "serve HTTPS with this PEM certificate, reloaded when it changes [TEMCO_API_TLS_CERT]")
	f.StringVar(&c.tlsKey, "tls-key", env("TEMCO_API_TLS_KEY", ""), "key of --tls-cert [TEMCO_API_TLS_KEY]")
	f.StringVar(&c.auth.Issuer, "auth-issuer", env("TEMCO_AUTH_ISSUER", ""),
		"require bearer tokens from this issuer (\"iss\"); authentication is off when empty [TEMCO_AUTH_ISSUER]")
	f.StringVar(&c.auth.Audience, "auth-audience", env("TEMCO_AUTH_AUDIENCE", ""), "audience tokens must carry (\"aud\") [TEMCO_AUTH_AUDIENCE]")
	f.StringVar(&c.auth.JWKSURL, "auth-jwks-url", env("TEMCO_AUTH_JWKS_URL", ""), "the issuer's JSON Web Key Set URL [TEMCO_AUTH_JWKS_URL]")
	f.StringVar(&c.auth.PublicKeyFile, "auth-public-key-file", env("TEMCO_AUTH_PUBLIC_KEY_FILE", ""),
		"PEM public keys or certificates verifying tokens, instead of a JWKS URL [TEMCO_AUTH_PUBLIC_KEY_FILE]")
	f.StringVar(&c.auth.RolesClaim, "auth-roles-claim", env("TEMCO_AUTH_ROLES_CLAIM", "roles"),
		"claim holding the caller's roles, dotted when nested (realm_access.roles) [TEMCO_AUTH_ROLES_CLAIM]")
	f.StringVar(&c.auth.AdminRole, "auth-admin-role", env("TEMCO_AUTH_ADMIN_ROLE", "admin"),
		"role of administrators; tenants hold \"project:<name>\" roles [TEMCO_AUTH_ADMIN_ROLE]")
	f.StringVar(&c.auth.ControllerRole, "auth-controller-role", env("TEMCO_AUTH_CONTROLLER_ROLE", "controller"),
		"role of external intent controllers: they may use the contexts' controller views (/v2/contexts/...) only [TEMCO_AUTH_CONTROLLER_ROLE]")
	f.StringVar(&c.temporalUI, "temporal-ui-url", env("TEMCO_TEMPORAL_UI_URL", ""),
		"the Temporal Web UI's address, for the dashboard's links to workflows [TEMCO_TEMPORAL_UI_URL]")
	f.StringVar(&c.notifyHosts, "notify-hosts-allow", env("TEMCO_NOTIFY_HOSTS_ALLOW", ""),
		"hosts (host, any port, or host:port; comma-separated) notification receivers' URLs may name; none by default: receivers are refused; the worker takes the same list [TEMCO_NOTIFY_HOSTS_ALLOW]")
	f.StringVar(&c.policyEngines, "policy-engine-allow", env("TEMCO_POLICY_ENGINE_ALLOW", ""),
		"OPA servers (host, any port, or host:port; comma-separated) a policy intent's engineUrl may name; none by default: the embedded engine needs none. The worker takes the same list [TEMCO_POLICY_ENGINE_ALLOW]")
	f.StringVar(&c.artifactHosts, "artifact-hosts-allow", env("TEMCO_ARTIFACT_HOSTS_ALLOW", ""),
		"OCI registries, Helm repositories and web servers (host, any port, or host:port; comma-separated) apps' charts may come from (spec.chart); none by default. The worker takes the same list [TEMCO_ARTIFACT_HOSTS_ALLOW]")
	f.StringVar(&c.workflowHosts, "workflow-hosts-allow", env("TEMCO_WORKFLOW_HOSTS_ALLOW", ""),
		"hosts (host, any port, or host:port; comma-separated) of Temporal servers and EMCO workflow clients that workflow intents may name; none by default [TEMCO_WORKFLOW_HOSTS_ALLOW]")
	f.StringVar(&c.taskQueueGrants, "workflow-task-queues", env("TEMCO_WORKFLOW_TASK_QUEUES", ""),
		"task queues tenants' intents may use besides their project's own (<project> and <project>/...): project=queue entries, comma-separated, *=queue for every project [TEMCO_WORKFLOW_TASK_QUEUES]")
	f.StringSliceVar(&c.certOrgs, "ca-cert-organizations", envList("TEMCO_CA_CERT_ORGANIZATIONS"),
		"subject organizations tenants' CA certificate intents may name (with a cluster's own signer they are Kubernetes groups); none by default [TEMCO_CA_CERT_ORGANIZATIONS, comma-separated]")
	f.IntVar(&c.liveReads, "live-reads-per-minute", envInt("TEMCO_LIVE_READS_PER_MINUTE", api.DefaultLiveReadsPerMinute),
		"live reads of clusters (status=ready, the dashboard's live view) each caller may start a minute; 0: no limit [TEMCO_LIVE_READS_PER_MINUTE]")
	f.IntVar(&c.maxStoreRequests, "max-store-requests", envInt("TEMCO_API_MAX_STORE_REQUESTS", 0),
		"requests to the resources (create, list, get, replace, delete) served at once, the others waiting in turn; 0: 4 per core, -1: no bound [TEMCO_API_MAX_STORE_REQUESTS]")
	f.DurationVar(&c.probeInterval, "cluster-probe-interval", envDuration("TEMCO_CLUSTER_PROBE_INTERVAL", flow.DefaultInterval),
		"how often every registered cluster's API server is probed (the ClusterHealth workflow; the fleet's reachability); 0: the api starts no probes [TEMCO_CLUSTER_PROBE_INTERVAL]")
	f.StringSliceVar(&c.codecOrigins, "codec-cors-origins", envList("TEMCO_CODEC_CORS_ORIGINS"),
		"browser origins (the Temporal UI's, scheme://host[:port]) allowed to call /codec; none by default [TEMCO_CODEC_CORS_ORIGINS, comma-separated]")
	f.StringSliceVar(&c.hosts, "hosts", envList("TEMCO_API_HOSTS"),
		"host names the api is called by besides IP addresses and localhost (its Service's, an ingress's); others are refused, against DNS rebinding; \"*\" for any, behind a proxy that checks them [TEMCO_API_HOSTS, comma-separated]")
	f.StringSliceVar(&c.allowedOrigins, "allowed-origins", envList("TEMCO_API_ALLOWED_ORIGINS"),
		"browser origins (scheme://host[:port]) whose pages may call the api besides its own (the dashboard's); none by default [TEMCO_API_ALLOWED_ORIGINS, comma-separated]")
}

// browserRules are what keeps other sites' pages out of the api (api/crosssite.go): the
// host names it serves and the browser origins it takes requests from.
type browserRules struct {
	hosts, allowedOrigins, codecOrigins []string
}

// parseBrowserRules parses the browser settings, naming the one that is wrong.
func parseBrowserRules(hosts, allowedOrigins, codecOrigins []string) (browserRules, error) {
	var r browserRules
	var err error
	if r.hosts, err = api.ParseHosts(hosts); err != nil {
		return r, fmt.Errorf("--hosts (TEMCO_API_HOSTS): %w", err)
	}
	if r.allowedOrigins, err = api.ParseOrigins(allowedOrigins); err != nil {
		return r, fmt.Errorf("--allowed-origins (TEMCO_API_ALLOWED_ORIGINS): %w", err)
	}
	if r.codecOrigins, err = api.ParseOrigins(codecOrigins); err != nil {
		return r, fmt.Errorf("--codec-cors-origins (TEMCO_CODEC_CORS_ORIGINS): %w", err)
	}
	return r, nil
}
