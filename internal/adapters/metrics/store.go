package metrics

import (
	"context"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"go.mongodb.org/mongo-driver/v2/event"
)

// NewStore registers the store's metrics and returns the driver's monitor that feeds
// them: every command sent to the MongoDB-wire server, counted by command and
// collection, and its latency. temco's cost must grow with groups and stages, not
// clusters; these say how many round trips an operation took (the scale benchmark
// divides them by its clusters).
func NewStore(reg prometheus.Registerer) *event.CommandMonitor {
	commands := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "temco_store_commands_total",
		Help: "Commands sent to the store (MongoDB wire) by command, collection and outcome."}, []string{"command", "collection", "outcome"})
	latency := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "temco_store_command_duration_seconds",
		Help: "Store command latency by command.", Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, 1}},
		[]string{"command"})
	reg.MustRegister(commands, latency)
	// The collection is in the started event alone; the outcome, in the finished one.
	var pending sync.Map // request id -> collection
	done := func(id int64, command, outcome string, d float64) {
		coll, _ := pending.LoadAndDelete(id)
		name, _ := coll.(string)
		commands.WithLabelValues(command, name, outcome).Inc()
		latency.WithLabelValues(command).Observe(d)
	}
	return &event.CommandMonitor{
		Started: func(_ context.Context, e *event.CommandStartedEvent) {
			coll, _ := e.Command.Lookup(e.CommandName).StringValueOK()
			pending.Store(e.RequestID, coll)
		},
		Succeeded: func(_ context.Context, e *event.CommandSucceededEvent) {
			done(e.RequestID, e.CommandName, "ok", e.Duration.Seconds())
		},
		Failed: func(_ context.Context, e *event.CommandFailedEvent) {
			done(e.RequestID, e.CommandName, "error", e.Duration.Seconds())
		},
	}
}
