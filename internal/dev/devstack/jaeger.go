package devstack

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"time"

	"sigs.k8s.io/yaml"
)

// Jaeger is Jaeger v2 (tools/build.sh builds it): the stack's trace collector. It takes
// OTLP over HTTP on OTLPPort from temco's processes (OTEL_EXPORTER_OTLP_ENDPOINT), keeps
// the newest traces in memory, and serves its query API on QueryPort: /api/v3/traces
// (OTLP JSON) and /api/traces, which tests read, and a UI. Built from the module proxy
// Jaeger has only a placeholder page (the real UI is built with npm for Jaeger's
// releases): it serves UIAssets instead, temco's trace viewer (traceview.go) when
// TraceView is set, else a built jaeger-ui folder.
type Jaeger struct {
	Bin       string // the jaeger binary
	Dir       string // its config.yaml
	LogFile   string
	OTLPPort  int
	QueryPort int
	UIAssets  string               // the UI's folder; "": the binary's placeholder page
	TraceView bool                 // Start writes temco's trace viewer into UIAssets
	proc      atomic.Pointer[Proc] // replaced by a restart while others read it
}

const (
	jaegerBinary = "jaeger"
	// jaegerMaxTraces bounds its memory: a dev stack's api probes, hub and agent make
	// traces all day.
	jaegerMaxTraces = 20000
)

// Endpoint is OTEL_EXPORTER_OTLP_ENDPOINT for the processes that send it spans.
func (j *Jaeger) Endpoint() string { return "http://127.0.0.1:" + strconv.Itoa(j.OTLPPort) }

// QueryURL is the base of its query API and UI.
func (j *Jaeger) QueryURL() string { return "http://127.0.0.1:" + strconv.Itoa(j.QueryPort) }

// Log is where it logs.
func (j *Jaeger) Log() string {
	if j.LogFile != "" {
		return j.LogFile
	}
	return filepath.Join(j.Dir, "jaeger.log")
}

func (j *Jaeger) ports() map[string]int {
	return map[string]int{"jaeger otlp": j.OTLPPort, "jaeger query": j.QueryPort}
}

// Start writes its configuration, starts it and waits until its query API answers.
func (j *Jaeger) Start(ctx context.Context) error {
	if j.TraceView {
		if err := writeTraceView(j.UIAssets); err != nil {
			return fmt.Errorf("trace viewer: %w", err)
		}
	}
	config, err := j.writeConfig()
	if err != nil {
		return fmt.Errorf("jaeger configuration: %w", err)
	}
	p, err := StartProc("jaeger", j.Log(), j.Bin, []string{"--config", config}, nil)
	if err != nil {
		return err
	}
	j.proc.Store(p)
	if err := WaitReady(ctx, p, 60*time.Second, func(ctx context.Context) error { return HTTPOK(ctx, j.QueryURL()+"/api/services") }); err != nil {
		p.Stop(5 * time.Second)
		j.proc.Store(nil)
		return err
	}
	return nil
}

// writeConfig writes config.yaml and returns its path: an OTLP receiver, memory storage
// and the query API, all on loopback, with no other listener (its query's gRPC port is
// any free one, its own metrics off).
func (j *Jaeger) writeConfig() (string, error) {
	if err := os.MkdirAll(j.Dir, 0o755); err != nil {
		return "", err
	}
	loopback := func(port int) string { return "127.0.0.1:" + strconv.Itoa(port) }
	query := map[string]any{"storage": map[string]any{"traces": "memory"}, "enable_tracing": false,
		"http": map[string]any{"endpoint": loopback(j.QueryPort)}, "grpc": map[string]any{"endpoint": loopback(0)}}
	if j.UIAssets != "" {
		query["ui"] = map[string]any{"assets_path": j.UIAssets}
	}
	config := map[string]any{
		"service": map[string]any{
			"extensions": []string{"jaeger_storage", "jaeger_query"},
			"pipelines": map[string]any{"traces": map[string]any{
				"receivers": []string{"otlp"}, "processors": []string{"batch"}, "exporters": []string{"jaeger_storage_exporter"}}},
			"telemetry": map[string]any{"metrics": map[string]any{"level": "none"}, "logs": map[string]any{"level": "warn"}},
		},
		"extensions": map[string]any{
			"jaeger_storage": map[string]any{"backends": map[string]any{"memory": map[string]any{"memory": map[string]any{"max_traces": jaegerMaxTraces}}}},
			"jaeger_query":   query,
		},
		"receivers":  map[string]any{"otlp": map[string]any{"protocols": map[string]any{"http": map[string]any{"endpoint": loopback(j.OTLPPort)}}}},
		"processors": map[string]any{"batch": map[string]any{"timeout": "200ms"}},
		"exporters":  map[string]any{"jaeger_storage_exporter": map[string]any{"trace_storage": "memory"}},
	}
	data, err := yaml.Marshal(config)
	if err != nil {
		return "", err
	}
	path := filepath.Join(j.Dir, "config.yaml")
	return path, os.WriteFile(path, data, 0o644)
}

// Proc is the running collector (nil before Start).
func (j *Jaeger) Proc() *Proc { return j.proc.Load() }

// Stop ends it; the traces it held go with it.
func (j *Jaeger) Stop() {
	j.proc.Load().Stop(10 * time.Second)
	j.proc.Store(nil)
}

// configureTraces adds the collector on the ports the configuration names, else on free ones.
func (s *Stack) configureTraces() error {
	ports := []int{s.cfg.OTLPPort, s.cfg.TracesPort}
	for i := range ports {
		if ports[i] != 0 {
			continue
		}
		var err error
		if ports[i], err = FreePort(); err != nil {
			return err
		}
	}
	s.Jaeger = &Jaeger{Bin: filepath.Join(s.cfg.BinDir, jaegerBinary), Dir: filepath.Join(s.cfg.DataDir, "jaeger"),
		LogFile: filepath.Join(s.cfg.DataDir, "logs", "jaeger.log"), OTLPPort: ports[0], QueryPort: ports[1], UIAssets: s.cfg.TracesUIAssets}
	if s.Jaeger.UIAssets == "" { // temco's own viewer
		s.Jaeger.UIAssets, s.Jaeger.TraceView = filepath.Join(s.Jaeger.Dir, traceViewDir), true
	}
	return nil
}

// tracesEnv is what sends temco's processes' spans to the collector: none without one.
func (s *Stack) tracesEnv() []string {
	if s.Jaeger == nil {
		return nil
	}
	return []string{"OTEL_EXPORTER_OTLP_ENDPOINT=" + s.Jaeger.Endpoint(), "OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf"}
}

func (s *Stack) tracesSummary(w io.Writer) {
	ui := "temco's trace viewer"
	if !s.Jaeger.TraceView {
		ui = "Jaeger UI from " + s.Jaeger.UIAssets
	}
	fmt.Fprintf(w, "  traces            %s (Jaeger: %s; query API %s/api/v3/traces?query.service_name=temco-api&...), OTLP in at %s\n",
		s.Jaeger.QueryURL(), ui, s.Jaeger.QueryURL(), s.Jaeger.Endpoint())
}
