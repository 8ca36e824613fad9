// Package api serves the EMCO v2 REST API with Echo: routing, request validation,
// error mapping and storage of resources. Lifecycle operations go through starter.
package api

import (
	"context"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"
	"github.com/prometheus/client_golang/prometheus"
	"go.temporal.io/sdk/converter"

	"github.com/temco/temco/dashboard"
	"github.com/temco/temco/internal/adapters/auth"
	"github.com/temco/temco/internal/adapters/egress"
	"github.com/temco/temco/internal/adapters/metrics"
	"github.com/temco/temco/internal/adapters/tracing"
	"github.com/temco/temco/internal/core/appctx"
	"github.com/temco/temco/internal/core/seal"
	"github.com/temco/temco/internal/core/store"
)

// Server holds the API's dependencies.
type Server struct {
	Store    *store.Store
	Contexts *appctx.Store
	Keys     *seal.Keyring
	Ops      Operator
	Log      *slog.Logger
	Registry *prometheus.Registry        // nil: no /metrics
	Ready    func(context.Context) error // /readyz: the store and Temporal answer; nil: always ready
	Auth     *auth.Authenticator         // nil: no authentication, every caller is an admin
	// ArtifactHosts are the registries and repositories apps' charts may come from (nil: none).
	ArtifactHosts *egress.Allow
	// Pollers counts the workers polling temco's task queue by task type, for /metrics
	// (starter.Pollers); nil: not exported.
	Pollers func(context.Context) (map[string]int, error)

	// Controllers are the intent controllers built into temco (controllers/registry): their
	// resources are served under the DIG, and a DIG may use them or controllers registered
	// with the taskQueue of an external worker.
	Controllers []Controller
	// Kinds are the resources of temco's other built-in services (ncm's networks below
	// clusters).
	Kinds []ResourceKind
	// Extensions are the side features' parts of the api (features/registry), each
	// feature's whether it is switched off or not (mount.go).
	Extensions []Extension

	// TemporalUI is the Temporal Web UI's address, for the dashboard's links to
	// operations' workflows ("": none); Namespace is temco's Temporal namespace.
	TemporalUI, Namespace string

	Codec        converter.PayloadCodec // served at /codec for the Temporal UI and CLI; nil: not served
	CodecOrigins []string               // browser origins allowed to call /codec (the Temporal UI's); none by default

	// Hosts are the names the api answers to besides IP addresses and localhost (its
	// Service's, an ingress's), or AnyHost; AllowedOrigins the browser origins whose
	// pages it takes requests from besides its own (crosssite.go).
	Hosts, AllowedOrigins []string

	// Activities completes the activities waiting for agents' reports (the Temporal
	// client); nil: a report is stored, and the operation reads it at its next attempt.
	Activities ActivityCompleter

	// LiveReadsPerMinute bounds each caller's live reads of clusters (livereads.go); 0: none.
	LiveReadsPerMinute int
	// MaxStoreRequests bounds the resources' requests served at once, the others waiting
	// in turn (admission.go); 0: DefaultMaxStoreRequests, negative: no bound.
	MaxStoreRequests int

	docs       []opDoc // every /v2 route, for the OpenAPI document
	hooks      hooks   // the Extensions' hooks on the DIG
	liveReads  *liveReadLimiter
	turns      turns // of the store-bound routes (admission.go)
	agentCache agentCache
	agentWatch agentWatch    // agents' long polls and calls (agentwatch.go)
	revisions  revisionCache // what agents read of revisions (agentrevisions.go)
}

// Timeouts of the API's http.Server (cmd/temco): a stalled or slow client must not hold
// a connection and its goroutine for ever. bodyRules extends them for uploads and waits.
const (
	ReadHeaderTimeout = 10 * time.Second
	// ReadTimeout: the headers and a JSON body (maxJSONBody at about 35 KiB/s).
	ReadTimeout = time.Minute
	// WriteTimeout runs from the end of the headers to the end of the answer: above the
	// longest wait of an ordinary route, a status read of the clusters (its workflow
	// times out after 5 minutes, starter.read) or a rollout preview (features/preview's defaultWait).
	WriteTimeout = 6 * time.Minute
	// IdleTimeout keeps a polling dashboard's connection open between its polls.
	IdleTimeout = 2 * time.Minute
	// uploadTimeout is a chart's or profile's upload: maxUploadBody at about 17 KiB/s.
	uploadTimeout = 10 * time.Minute
)

// Handler builds the HTTP handler: /v2 routes plus /healthz (and /metrics).
func (s *Server) Handler() *echo.Echo {
	s.docs = nil
	s.liveReads = newLiveReadLimiter(s.LiveReadsPerMinute, time.Now)
	s.turns = newTurns(s.MaxStoreRequests)
	e := echo.New()
	e.HideBanner, e.HidePort = true, true
	e.HTTPErrorHandler = errorHandler(s.Log)
	if tracing.On() { // names the request's span (tracing.Handler) after its route
		e.Use(tracing.Route)
	}
	e.Use(middleware.RequestID())
	e.Use(s.accessLog())
	e.Use(middleware.RecoverWithConfig(middleware.RecoverConfig{DisableStackAll: true, LogErrorFunc: s.logPanic}))
	e.Use(s.checkHost())
	e.Use(s.codecCORS()) // before authentication: browsers send CORS preflights without credentials
	e.Use(s.checkOrigin())
	e.Use(s.authenticate)
	e.Use(func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			// net/url drops malformed pairs silently: "?app=%zz" would read as no filter at all.
			if _, err := url.ParseQuery(c.Request().URL.RawQuery); err != nil {
				return badRequest("malformed query string: %v", err)
			}
			return next(c)
		}
	})
	routes := map[string]opDoc{} // filled below, once every route is registered
	e.Use(bodyRules(routes))
	e.GET("/healthz", func(c echo.Context) error { return c.String(http.StatusOK, "ok") })
	e.GET("/readyz", func(c echo.Context) error {
		if s.Ready != nil {
			if err := s.Ready(c.Request().Context()); err != nil {
				return c.String(http.StatusServiceUnavailable, err.Error())
			}
		}
		return c.String(http.StatusOK, "ok")
	})
	if s.Registry != nil {
		s.Registry.MustRegister(s.fleetGauges())
		e.GET("/metrics", echo.WrapHandler(metrics.Handler(s.Registry)))
	}
	s.registerCodec(e)
	e.GET(dashboard.Path+"*", echo.WrapHandler(dashboard.Handler()))
	e.GET(strings.TrimSuffix(dashboard.Path, "/"), func(c echo.Context) error {
		return c.Redirect(http.StatusMovedPermanently, dashboard.Path)
	})
	g := e.Group("/v2")
	s.registerClm(g)
	s.registerAgents(g)
	s.registerOrchestrator(g)
	for _, c := range s.Controllers {
		for _, k := range c.Kinds {
			k.mount(g, s)
		}
	}
	for _, k := range s.Kinds {
		k.mount(g, s)
	}
	s.registerDcm(g)
	s.registerLifecycle(g)
	s.registerSnapshots(g)
	s.registerDiagnostics(g)
	s.registerControlView(g)
	s.registerDashboard(g)
	s.registerState(g)
	s.registerFleet(g)
	s.registerFleetClusters(g)
	s.registerClusterView(g)
	s.registerSession(g)
	s.mountExtensions(g)
	for _, d := range s.docs {
		routes[d.method+" /v2"+d.path] = d
	}
	return e
}

// accessLog logs every request (with its request id) and records its metrics.
func (s *Server) accessLog() echo.MiddlewareFunc {
	var m *metrics.HTTP
	if s.Registry != nil {
		m = metrics.NewHTTP(s.Registry)
	}
	return middleware.RequestLoggerWithConfig(middleware.RequestLoggerConfig{
		LogStatus: true, LogMethod: true, LogURI: true, LogLatency: true, LogRequestID: true, LogError: true,
		HandleError: true,
		LogValuesFunc: func(c echo.Context, v middleware.RequestLoggerValues) error {
			level := slog.LevelInfo
			switch {
			case v.Status >= 500:
				level = slog.LevelError
			case v.Status < 400 && c.Path() == "/v2"+routeAgent+"/work":
				level = slog.LevelDebug // every agent's every long poll: thousands a minute
			}
			if m != nil {
				m.Observe(c.Path(), v.Method, v.Status, v.Latency)
			}
			subject := ""
			if p := principal(c); p != nil {
				subject = p.Subject
			}
			s.Log.LogAttrs(c.Request().Context(), level, "request",
				slog.String("request_id", v.RequestID), slog.String("subject", subject), slog.String("method", v.Method), slog.String("uri", v.URI),
				slog.String("route", c.Path()), slog.Int("status", v.Status), slog.Duration("latency", v.Latency.Round(time.Microsecond)))
			return nil
		},
	})
}

func (s *Server) logPanic(c echo.Context, err error, stack []byte) error {
	s.Log.Error("panic", "request_id", c.Response().Header().Get(echo.HeaderXRequestID), "error", err, "stack", string(stack))
	return err
}
