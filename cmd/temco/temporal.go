package main

import (
	"context"
	"fmt"
	"log/slog"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/log"
)

func (f *temporalFlags) dial(ctx context.Context, logger *slog.Logger) (client.Client, error) {
	c, err := client.DialContext(ctx, client.Options{
		HostPort: f.address, Namespace: f.namespace, Logger: log.NewStructuredLogger(logger),
	})
	if err != nil {
		return nil, fmt.Errorf("connect to Temporal at %s: %w", f.address, err)
	}
	return c, nil
}
