package tracing

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/trace/noop"
)

func TestDecideReadsTheStandardVariables(t *testing.T) {
	for _, tc := range []struct {
		name     string
		env      map[string]string
		protocol string // "": off
		err      bool
	}{
		{name: "no endpoint: off", env: map[string]string{}},
		{name: "an endpoint: OTLP over HTTP", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}, protocol: protocolHTTP},
		{name: "a traces endpoint alone", env: map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://c:4318/v1/traces"}, protocol: protocolHTTP},
		{name: "grpc", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4317", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}, protocol: protocolGRPC},
		{name: "the traces' protocol wins", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4317",
			"OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "grpc"}, protocol: protocolGRPC},
		{name: "SDK disabled", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_SDK_DISABLED": "TRUE"}},
		{name: "exporter none", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_TRACES_EXPORTER": "none"}},
		{name: "exporter otlp", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_TRACES_EXPORTER": "otlp"}, protocol: protocolHTTP},
		{name: "another exporter is refused", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_TRACES_EXPORTER": "zipkin"}, err: true},
		{name: "http/json is refused", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_EXPORTER_OTLP_PROTOCOL": "http/json"}, err: true},
		{name: "a refused exporter does not matter when the SDK is off", env: map[string]string{"OTEL_SDK_DISABLED": "true", "OTEL_TRACES_EXPORTER": "zipkin"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := decide(func(k string) string { return tc.env[k] })
			if (err != nil) != tc.err {
				t.Fatalf("error %v, want one: %v", err, tc.err)
			}
			if p.protocol != tc.protocol {
				t.Errorf("protocol %q, want %q", p.protocol, tc.protocol)
			}
		})
	}
}

func TestOffInstallsNothingAndCostsNothing(t *testing.T) {
	flush, err := Setup(context.Background(), "temco-test") // the test's environment names no endpoint
	if err != nil || On() {
		t.Fatalf("Setup without an endpoint: on %v, error %v", On(), err)
	}
	if err := flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if h := Handler(plain{}); h != (plain{}) {
		t.Errorf("Handler when off wraps the handler: %T", h)
	}
	if i, err := TemporalInterceptors(); err != nil || i != nil {
		t.Errorf("Temporal interceptors when off: %v, %v", i, err)
	}
	if rt := Transport(nil); rt != http.DefaultTransport {
		t.Errorf("Transport when off wraps the default transport")
	}
	ctx := context.Background()
	allocs := testing.AllocsPerRun(1000, func() {
		c, span := Start(ctx, "cluster.apply")
		if c != ctx || span.IsRecording() {
			t.Fatal("a span when off")
		}
		span.End()
	})
	if allocs != 0 {
		t.Errorf("a span when off allocates %.0f times", allocs)
	}
}

func TestOnExportsOverOTLPAndFlushes(t *testing.T) {
	var posts atomic.Int32
	collector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && r.URL.Path == "/v1/traces" {
			posts.Add(1)
		}
	}))
	defer collector.Close()
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", collector.URL)
	t.Cleanup(func() { on.Store(false); otel.SetTracerProvider(noop.NewTracerProvider()) })
	flush, err := Setup(context.Background(), "temco-test")
	if err != nil || !On() {
		t.Fatalf("Setup with an endpoint: on %v, error %v", On(), err)
	}
	if i, err := TemporalInterceptors(); err != nil || len(i) != 1 {
		t.Errorf("Temporal interceptors when on: %v, %v", i, err)
	}
	_, span := Start(context.Background(), "cluster.apply")
	if !span.IsRecording() {
		t.Fatal("the span records nothing")
	}
	span.End()
	if err := flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if posts.Load() == 0 {
		t.Error("flush exported nothing to the collector")
	}
}

type plain struct{}

func (plain) ServeHTTP(http.ResponseWriter, *http.Request) {}

func BenchmarkSpanOff(b *testing.B) {
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		_, span := Start(ctx, "cluster.apply")
		if span.IsRecording() {
			b.Fatal("recording")
		}
		span.End()
	}
}
