package main

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/prometheus/client_golang/prometheus"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/log"

	"github.com/temco/temco/internal/metrics"
)

func (f *temporalFlags) dial(ctx context.Context, logger *slog.Logger, reg prometheus.Registerer) (client.Client, error) {
	c, err := client.DialContext(ctx, client.Options{
		HostPort: f.address, Namespace: f.namespace, Logger: log.NewStructuredLogger(logger),
		MetricsHandler: metrics.Temporal(reg),
	})
	if err != nil {
		return nil, fmt.Errorf("connect to Temporal at %s: %w", f.address, err)
	}
	return c, nil
}
