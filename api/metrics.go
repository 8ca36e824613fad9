package api

import (
	"context"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/temco/temco/internal/core/health"
	"github.com/temco/temco/internal/core/lifecycle"
)

// The fleet's gauges on /metrics: what the fleet's home counts (fleet.go), the clusters'
// reachability and the workers Temporal sees, read at scrape time. Every api exports the
// same values (dashboards and alerts take their max). One read serves the scrapes of
// fleetMetricsTTL: the fleet's read grows with the DIGs, not their clusters (about half
// a second at 1,000 DIGs on 10,000 clusters, BENCHMARKS.md "Fleet home"), and the
// reachability counts and pollers are a document and two Temporal calls.

const (
	fleetMetricsTTL  = 15 * time.Second
	fleetMetricsRead = 10 * time.Second // a slow store leaves the last values, not a hung scrape
)

var (
	descDIGs    = prometheus.NewDesc("temco_digs", "DIGs by lifecycle state.", []string{"state"}, nil)
	descRunning = prometheus.NewDesc("temco_operations_running",
		"DIGs with an operation running (instantiate, update, rollback, terminate).", nil, nil)
	descWaiting = prometheus.NewDesc("temco_rollouts_waiting",
		"DIGs whose staged rollout waits: for an approval, its window, an operator's decision after a failed stage, or paused.", []string{"reason"}, nil)
	descDrifted        = prometheus.NewDesc("temco_digs_drifted", "DIGs whose last drift check left objects drifted.", nil, nil)
	descDriftedObjects = prometheus.NewDesc("temco_drifted_objects",
		"Objects the DIGs' last drift checks left drifted (deleted ones included).", nil, nil)
	descPlacements = prometheus.NewDesc("temco_placements",
		"DIGs' placements on clusters (a cluster once per DIG) by the status of the worst of their objects there (Applied, Retrying, Failed...).", []string{"state"}, nil)
	descClusters = prometheus.NewDesc("temco_clusters",
		"Registered clusters by what the last round of probes found (Reachable, Unreachable, GitOps, Agent).", []string{"state"}, nil)
	descPollers = prometheus.NewDesc("temco_task_queue_pollers",
		"Workers polling temco's task queue, as Temporal saw them in the last 2 minutes, by task type.", []string{"type"}, nil)
)

// rolloutWaits are the reasons of temco_rollouts_waiting, each exported (0 included) so
// that an alert on one has a series to watch.
var rolloutWaits = []string{"approval", "window", "decision", "paused"}

// fleetGauges is the collector of the fleet's gauges.
type fleetGauges struct {
	s *Server

	mu   sync.Mutex
	read time.Time // of the values below; zero: none yet
	last fleetValues
}

type fleetValues struct {
	digs, waiting, placements, clusters, pollers map[string]int
	running, drifted, driftedObjects             int
}

func (s *Server) fleetGauges() *fleetGauges { return &fleetGauges{s: s} }

func (g *fleetGauges) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descDIGs, descRunning, descWaiting, descDrifted, descDriftedObjects, descPlacements, descClusters, descPollers} {
		ch <- d
	}
}

func (g *fleetGauges) Collect(ch chan<- prometheus.Metric) {
	v, ok := g.values()
	if !ok {
		return
	}
	gauge := func(d *prometheus.Desc, n int, label ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, float64(n), label...)
	}
	byLabel := func(d *prometheus.Desc, m map[string]int) {
		for k, n := range m {
			gauge(d, n, k)
		}
	}
	byLabel(descDIGs, v.digs)
	byLabel(descWaiting, v.waiting)
	byLabel(descPlacements, v.placements)
	byLabel(descClusters, v.clusters)
	byLabel(descPollers, v.pollers)
	gauge(descRunning, v.running)
	gauge(descDrifted, v.drifted)
	gauge(descDriftedObjects, v.driftedObjects)
}

// values returns the fleet's values, read again when older than fleetMetricsTTL; ok is
// false before a first read succeeded. Concurrent scrapes share one read.
func (g *fleetGauges) values() (fleetValues, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.read.IsZero() && time.Since(g.read) < fleetMetricsTTL {
		return g.last, true
	}
	ctx, cancel := context.WithTimeout(context.Background(), fleetMetricsRead)
	defer cancel()
	v, err := g.s.readFleetValues(ctx)
	if err != nil {
		// The store's and Temporal's own metrics count the failure; the scrape keeps
		// the last values rather than failing whole.
		g.s.Log.Warn("read the fleet's metrics", "error", err)
		return g.last, !g.read.IsZero()
	}
	g.last, g.read = v, time.Now()
	return v, true
}

// readFleetValues reads the fleet as its home does, for every project.
func (s *Server) readFleetValues(ctx context.Context) (fleetValues, error) {
	v := fleetValues{digs: map[string]int{}, waiting: map[string]int{}, placements: map[string]int{}}
	for _, st := range lifecycle.DIGs.Machine.States {
		v.digs[st] = 0
	}
	for _, w := range rolloutWaits {
		v.waiting[w] = 0
	}
	for _, st := range []string{lifecycle.ResApplied, lifecycle.ResRetrying, lifecycle.ResFailed} {
		v.placements[st] = 0
	}
	docs, err := s.projectDIGs(ctx, nil)
	if err != nil {
		return v, err
	}
	digs, err := s.fleetDIGs(ctx, docs)
	if err != nil {
		return v, err
	}
	for _, d := range digs {
		v.digs[d.State]++
		for st, n := range d.States {
			v.placements[st] += n
		}
		if d.Operation != nil {
			v.running++
		}
		if r := d.Rollout; r != nil {
			switch {
			case r.Waiting != "":
				v.waiting[r.Waiting]++
			case r.State == lifecycle.RolloutPaused:
				v.waiting["paused"]++
			}
		}
		if n := d.Drift.left(); n > 0 {
			v.drifted++
			v.driftedObjects += n
		}
	}
	if v.clusters, err = s.reachabilityCounts(ctx); err != nil {
		return v, err
	}
	for _, st := range []string{health.Reachable, health.Unreachable} {
		v.clusters[st] += 0 // exported before the first round of probes ends too
	}
	if s.Pollers != nil {
		if v.pollers, err = s.Pollers(ctx); err != nil {
			return v, err
		}
	}
	return v, nil
}
