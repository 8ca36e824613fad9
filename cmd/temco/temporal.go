package main

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/log"
	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"

	"github.com/temco/temco/internal/adapters/codec"
	"github.com/temco/temco/internal/adapters/metrics"
	"github.com/temco/temco/internal/adapters/tracing"
	"github.com/temco/temco/internal/core/seal"
	"github.com/temco/temco/internal/core/store"
)

// dial connects to Temporal; with payload encryption on, keys encrypt every payload and
// failure. With traces on, its workers' workflows and activities join their callers' traces.
func (t *temporalConfig) dial(ctx context.Context, logger *slog.Logger, reg prometheus.Registerer, keys *seal.Keyring) (client.Client, error) {
	tlsCfg, err := t.tls.Config()
	if err != nil {
		return nil, fmt.Errorf("Temporal TLS: %w", err)
	}
	interceptors, err := tracing.TemporalInterceptors() // none when traces are off
	if err != nil {
		return nil, fmt.Errorf("Temporal tracing: %w", err)
	}
	opts := client.Options{
		HostPort: t.address, Namespace: t.namespace, Logger: log.NewStructuredLogger(logger),
		MetricsHandler: metrics.Temporal(reg), ConnectionOptions: client.ConnectionOptions{TLS: tlsCfg, DialOptions: resume},
		Interceptors: interceptors,
	}
	if t.encryptPayloads {
		opts.DataConverter = codec.DataConverter(keys)
		opts.FailureConverter = codec.FailureConverter(opts.DataConverter)
	}
	c, err := client.DialContext(ctx, opts)
	if err != nil {
		return nil, fmt.Errorf("connect to Temporal at %s: %w", t.address, err)
	}
	return c, nil
}

// resume makes a call made while the Temporal frontend is unreachable wait (within its
// deadline) for the connection to come back and go at once, instead of failing and being
// retried on the SDK's growing backoff (0.2, 0.6, 1.4, 3 s…: a poll or an activity's
// completion then lands up to seconds after the server is back); and redials at least
// every second, not every 10 s as the SDK's default lets it grow to.
var resume = []grpc.DialOption{
	grpc.WithDefaultCallOptions(grpc.WaitForReady(true)),
	grpc.WithConnectParams(grpc.ConnectParams{
		Backoff:           backoff.Config{BaseDelay: 100 * time.Millisecond, Multiplier: 1.6, Jitter: 0.2, MaxDelay: time.Second},
		MinConnectTimeout: 20 * time.Second,
	}),
}

// ready reports whether the store and the Temporal frontend answer, for readiness probes.
func ready(st *store.Store, c client.Client) func(context.Context) error {
	return func(ctx context.Context) error {
		ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		defer cancel()
		if err := st.Ping(ctx); err != nil {
			return fmt.Errorf("store: %w", err)
		}
		if _, err := c.CheckHealth(ctx, &client.CheckHealthRequest{}); err != nil {
			return fmt.Errorf("temporal: %w", err)
		}
		return nil
	}
}
