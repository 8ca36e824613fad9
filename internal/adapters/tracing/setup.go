// Package tracing sets up OpenTelemetry traces for temco's processes. They are exported
// over OTLP when the standard variables name an endpoint (OTEL_EXPORTER_OTLP_ENDPOINT or
// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) and off otherwise: then nothing is installed, the
// api's handler, the Temporal client and the cluster spans are left as they were, and
// tracing costs nothing (docs/observability.md).
package tracing

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync/atomic"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// on is whether Setup installed a tracer provider. Read on every cluster span and HTTP
// handler built, set once at a process's start.
var on atomic.Bool

// On reports whether this process exports traces.
func On() bool { return on.Load() }

// Protocols of OTLP temco exports with (OTEL_EXPORTER_OTLP_PROTOCOL): Go's exporters have
// no http/json.
const (
	protocolHTTP = "http/protobuf"
	protocolGRPC = "grpc"
)

// plan is what the environment asks for: no export (protocol ""), or OTLP over protocol.
// The exporters read the endpoint, headers, TLS and timeouts from the same variables.
type plan struct{ protocol string }

// decide reads the standard OpenTelemetry variables through getenv. Traces are on only
// when an OTLP endpoint is named, and neither OTEL_SDK_DISABLED nor OTEL_TRACES_EXPORTER
// (none) turns them off; an exporter or protocol temco does not have is an error, so that
// a process does not run silently untraced.
func decide(getenv func(string) string) (plan, error) {
	if strings.EqualFold(strings.TrimSpace(getenv("OTEL_SDK_DISABLED")), "true") {
		return plan{}, nil
	}
	for e := range strings.SplitSeq(getenv("OTEL_TRACES_EXPORTER"), ",") {
		switch strings.TrimSpace(e) {
		case "", "otlp":
		case "none":
			return plan{}, nil
		default:
			return plan{}, fmt.Errorf("OTEL_TRACES_EXPORTER=%s: temco exports traces over OTLP only (otlp, or none)", getenv("OTEL_TRACES_EXPORTER"))
		}
	}
	if getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") == "" && getenv("OTEL_EXPORTER_OTLP_ENDPOINT") == "" {
		return plan{}, nil
	}
	protocol := getenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
	if protocol == "" {
		protocol = getenv("OTEL_EXPORTER_OTLP_PROTOCOL")
	}
	switch protocol {
	case "", protocolHTTP:
		return plan{protocol: protocolHTTP}, nil
	case protocolGRPC:
		return plan{protocol: protocolGRPC}, nil
	}
	return plan{}, fmt.Errorf("OTEL_EXPORTER_OTLP_PROTOCOL=%s: temco exports OTLP as %s or %s", protocol, protocolHTTP, protocolGRPC)
}

// Setup installs, when the environment asks for traces, a tracer provider exporting
// over OTLP in batches as OpenTelemetry's global one, with W3C trace context as the
// propagator. Not baggage: a caller's baggage would be written, in clear, into the
// headers of the workflows it starts, and kept in their histories. service is the process's service.name unless OTEL_SERVICE_NAME
// (or OTEL_RESOURCE_ATTRIBUTES) names another. The returned flush exports the spans
// not sent yet and stops the exporter: call it as the process ends. When traces are off
// Setup installs nothing and flush does nothing.
func Setup(ctx context.Context, service string) (flush func(context.Context) error, err error) {
	nothing := func(context.Context) error { return nil }
	p, err := decide(os.Getenv)
	if err != nil || p.protocol == "" {
		return nothing, err
	}
	var exp sdktrace.SpanExporter
	if p.protocol == protocolGRPC {
		exp, err = otlptracegrpc.New(ctx)
	} else {
		exp, err = otlptracehttp.New(ctx)
	}
	if err != nil {
		return nothing, fmt.Errorf("OTLP trace exporter: %w", err)
	}
	// Later detectors override earlier ones: the environment's service name wins.
	res, err := resource.New(ctx, resource.WithAttributes(attribute.String("service.name", service)),
		resource.WithTelemetrySDK(), resource.WithHost(), resource.WithFromEnv())
	if err != nil {
		return nothing, fmt.Errorf("trace resource: %w", err)
	}
	// The sampler is the SDK's default, or OTEL_TRACES_SAMPLER's; the batches' size and
	// pace OTEL_BSP_*'s.
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	otel.SetTracerProvider(tp)
	otel.SetTextMapPropagator(propagation.TraceContext{})
	on.Store(true)
	return tp.Shutdown, nil
}
