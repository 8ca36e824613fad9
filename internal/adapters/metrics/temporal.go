package metrics

import (
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.temporal.io/sdk/client"

	"github.com/temco/temco/internal/core/lifecycle"
)

// Temporal adapts the SDK's metrics to Prometheus. The SDK names its metrics and tags
// them (namespace, task queue, workflow and activity type...); each metric name keeps the
// tag names it was first seen with: later values for other tags are dropped and missing
// ones are left empty, as Prometheus requires fixed label names per metric.
func Temporal(reg prometheus.Registerer) client.MetricsHandler {
	return &sdkHandler{vecs: &sdkVecs{reg: reg, byName: map[string]*sdkVec{}}}
}

// workflowMetrics are temco's own metrics recorded in workflows through the SDK's handler
// (lifecycle.MetricOperations...): their help, and buckets fit for operations that take
// seconds to hours rather than the SDK's sub-second timers.
var workflowMetrics = map[string]struct {
	help    string
	buckets []float64
}{
	lifecycle.MetricOperations: {help: "Ended lifecycle operations by kind of target, operation and outcome."},
	lifecycle.MetricOperationDuration: {help: "Lifecycle operation duration, from its workflow's start to its end, by kind, operation and outcome",
		buckets: []float64{1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800, 3600, 7200, 21600}},
}

type sdkHandler struct {
	tags map[string]string
	vecs *sdkVecs
}

type sdkVecs struct {
	mu     sync.Mutex
	reg    prometheus.Registerer
	byName map[string]*sdkVec
}

type sdkVec struct {
	labels    []string
	counter   *prometheus.CounterVec
	gauge     *prometheus.GaugeVec
	histogram *prometheus.HistogramVec
}

func (h *sdkHandler) WithTags(tags map[string]string) client.MetricsHandler {
	merged := maps.Clone(h.tags)
	if merged == nil {
		merged = map[string]string{}
	}
	maps.Copy(merged, tags)
	return &sdkHandler{tags: merged, vecs: h.vecs}
}

// vec returns the collector of a metric, creating it with the current tag names.
func (h *sdkHandler) vec(name, kind string) *sdkVec {
	h.vecs.mu.Lock()
	defer h.vecs.mu.Unlock()
	if v, ok := h.vecs.byName[name]; ok {
		return v
	}
	v := &sdkVec{labels: slices.Sorted(maps.Keys(h.tags))}
	var c prometheus.Collector
	help, buckets := "Temporal SDK "+kind+" "+name, prometheus.DefBuckets
	if m, ok := workflowMetrics[name]; ok {
		help, buckets = m.help, m.buckets
	}
	switch kind {
	case "counter":
		v.counter = prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, v.labels)
		c = v.counter
	case "gauge":
		v.gauge = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: name, Help: help}, v.labels)
		c = v.gauge
	default:
		v.histogram = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: name, Help: help + " (seconds)", Buckets: buckets}, v.labels)
		c = v.histogram
	}
	if err := h.vecs.reg.Register(c); err != nil {
		return &sdkVec{} // a name clash with another collector: drop this metric rather than fail
	}
	h.vecs.byName[name] = v
	return v
}

func (v *sdkVec) values(tags map[string]string) []string {
	out := make([]string, len(v.labels))
	for i, l := range v.labels {
		out[i] = tags[l]
	}
	return out
}

type sdkCounter struct {
	v    *sdkVec
	tags map[string]string
}

func (c sdkCounter) Inc(n int64) {
	if c.v.counter != nil {
		c.v.counter.WithLabelValues(c.v.values(c.tags)...).Add(float64(n))
	}
}

type sdkGauge sdkCounter

func (g sdkGauge) Update(x float64) {
	if g.v.gauge != nil {
		g.v.gauge.WithLabelValues(g.v.values(g.tags)...).Set(x)
	}
}

type sdkTimer sdkCounter

func (t sdkTimer) Record(d time.Duration) {
	if t.v.histogram != nil {
		t.v.histogram.WithLabelValues(t.v.values(t.tags)...).Observe(d.Seconds())
	}
}

func (h *sdkHandler) Counter(name string) client.MetricsCounter {
	return sdkCounter{v: h.vec(name, "counter"), tags: h.tags}
}

func (h *sdkHandler) Gauge(name string) client.MetricsGauge {
	return sdkGauge{v: h.vec(name, "gauge"), tags: h.tags}
}

func (h *sdkHandler) Timer(name string) client.MetricsTimer {
	return sdkTimer{v: h.vec(name, "timer"), tags: h.tags}
}
