// Package metrics exposes Prometheus metrics: the API's requests, the worker's cluster
// operations, and the Temporal SDK's own metrics (through an SDK MetricsHandler).
package metrics

import (
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// NewRegistry returns a registry with the Go runtime and process collectors.
func NewRegistry() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return reg
}

// Handler serves the registry in the Prometheus text format.
func Handler(reg *prometheus.Registry) http.Handler {
	return promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg})
}

// HTTP counts and times the API's requests by route (the pattern, not the path, so
// resource names do not multiply series), method and status code.
type HTTP struct {
	requests *prometheus.CounterVec
	latency  *prometheus.HistogramVec
}

// NewHTTP registers the API's request metrics.
func NewHTTP(reg prometheus.Registerer) *HTTP {
	h := &HTTP{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "temco_api_requests_total",
			Help: "API requests by route, method and status code."}, []string{"route", "method", "code"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "temco_api_request_duration_seconds",
			Help: "API request latency by route and method.", Buckets: prometheus.DefBuckets}, []string{"route", "method"}),
	}
	reg.MustRegister(h.requests, h.latency)
	return h
}

// Observe records one request.
func (h *HTTP) Observe(route, method string, code int, d time.Duration) {
	h.requests.WithLabelValues(route, method, strconv.Itoa(code)).Inc()
	h.latency.WithLabelValues(route, method).Observe(d.Seconds())
}

// Clusters records the worker's work on clusters: operations by cluster and outcome,
// their latency, and the transient failures that made Temporal retry them.
type Clusters struct {
	ops     *prometheus.CounterVec
	latency *prometheus.HistogramVec
	retries *prometheus.CounterVec
}

// NewClusters registers the cluster metrics.
func NewClusters(reg prometheus.Registerer) *Clusters {
	c := &Clusters{
		ops: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "temco_cluster_operations_total",
			Help: "Per-cluster activity attempts by operation (apply, delete, prune, read) and outcome."}, []string{"cluster", "operation", "outcome"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "temco_cluster_operation_duration_seconds",
			Help: "Per-cluster activity attempt latency.", Buckets: []float64{.01, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60}},
			[]string{"cluster", "operation"}),
		retries: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "temco_cluster_retries_total",
			Help: "Transient failures (unreachable or overloaded cluster) after which Temporal retries."}, []string{"cluster", "operation"}),
	}
	reg.MustRegister(c.ops, c.latency, c.retries)
	return c
}

// Observe records one attempt; failed attempts with retry set are counted as retries.
func (c *Clusters) Observe(cluster, operation string, err error, retry bool, d time.Duration) {
	if c == nil {
		return
	}
	outcome := "ok"
	if err != nil {
		outcome = "error"
		if retry {
			c.retries.WithLabelValues(cluster, operation).Inc()
		}
	}
	c.ops.WithLabelValues(cluster, operation, outcome).Inc()
	c.latency.WithLabelValues(cluster, operation).Observe(d.Seconds())
}
