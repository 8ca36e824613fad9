package tracing

import (
	"context"
	"net/http"

	"github.com/labstack/echo/v4"
	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
	temporalotel "go.temporal.io/sdk/contrib/opentelemetry"
	"go.temporal.io/sdk/interceptor"
)

// scope names temco's own spans' instrumentation.
const scope = "github.com/temco/temco"

// Start begins a span of temco's own under ctx's span (a cluster's apply under its
// activity's). When traces are off it returns ctx and a span that records nothing,
// allocating nothing: callers set attributes only when span.IsRecording().
func Start(ctx context.Context, name string) (context.Context, trace.Span) {
	if !on.Load() {
		return ctx, noop.Span{}
	}
	return otel.Tracer(scope).Start(ctx, name)
}

// Handler traces every request h serves but the probes' and scrapes' (/healthz, /readyz,
// /metrics), as a server span that continues the caller's trace (traceparent); Route
// names it after the request's route. h itself when traces are off.
func Handler(h http.Handler) http.Handler {
	if !on.Load() {
		return h
	}
	return otelhttp.NewHandler(h, "temco api",
		otelhttp.WithFilter(func(r *http.Request) bool {
			p := r.URL.Path
			return p != "/healthz" && p != "/readyz" && p != "/metrics"
		}),
		otelhttp.WithSpanNameFormatter(func(_ string, r *http.Request) string { return r.Method }))
}

// Route names a request's server span "<method> <route>" (POST /v2/projects/:project/...)
// once echo has routed it: a name for every request of a kind, not of each resource.
// Install it only when On: it does nothing else.
func Route(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if span := trace.SpanFromContext(c.Request().Context()); span.IsRecording() && c.Path() != "" {
			span.SetName(c.Request().Method + " " + c.Path())
			span.SetAttributes(attribute.String("http.route", c.Path()))
		}
		return next(c)
	}
}

// Transport traces the requests rt (nil: http.DefaultTransport) sends as client spans
// and sends their context along (traceparent), so that the api's spans join the
// caller's trace: temco hub's and temco agent's calls. rt itself when traces are off.
func Transport(rt http.RoundTripper) http.RoundTripper {
	if rt == nil {
		rt = http.DefaultTransport
	}
	if !on.Load() {
		return rt
	}
	return otelhttp.NewTransport(rt)
}

// TemporalInterceptors are the Temporal client's interceptors for traces: starts,
// signals, updates, workflows, child workflows and activities get spans ("RunWorkflow:
// Instantiate", "RunActivity:RenderApps"), their context (the trace context alone, no
// baggage) carried in Temporal's headers, which the payload codec leaves as they are, so
// a workflow joins the trace of the request that started it. Workers made from the
// client take them too. Workflow code stays
// deterministic: the interceptor only reads and writes headers, and starts no span for
// a call a workflow replays from its history. None when traces are off.
func TemporalInterceptors() ([]interceptor.ClientInterceptor, error) {
	if !on.Load() {
		return nil, nil
	}
	i, err := TemporalInterceptor(otel.GetTracerProvider())
	if err != nil {
		return nil, err
	}
	return []interceptor.ClientInterceptor{i}, nil
}

// TemporalInterceptor is the SDK's interceptor as temco's processes install it, its spans
// made by tp: tests/replay replays every recorded history through it.
func TemporalInterceptor(tp trace.TracerProvider) (interceptor.Interceptor, error) {
	return temporalotel.NewTracingInterceptor(temporalotel.TracerOptions{Tracer: tp.Tracer("go.temporal.io/sdk"),
		DisableBaggage: true, TextMapPropagator: propagation.TraceContext{}})
}
