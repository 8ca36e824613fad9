package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"

	"github.com/temco/temco/internal/dev/devstack"
	"github.com/temco/temco/internal/dev/testenv"
	"github.com/temco/temco/internal/dev/testenv/poll"
)

// A call made while the Temporal frontend is down waits for it, within the call's deadline,
// instead of failing at once; and goes through once the server is back. Without this a
// worker's polls and its activities' completions waited for the SDK's next retry, seconds
// after a restarted server was back (BENCHMARKS.md, "2026-11-30, tenth session").
func TestTemporalCallsWaitForTheServerToComeBack(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a Temporal dev server")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	srv := startTemporal(t, ctx)
	f := temporalConfig{address: srv.Address(), namespace: "default"}
	c, err := f.dial(ctx, slog.New(slog.DiscardHandler), prometheus.NewRegistry(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()

	srv.Proc().Kill()
	// A call sent before the client saw its connection close fails as it must; the next
	// one, made knowing the server is gone, waits.
	poll.Until(t, "a call while the server is down waiting until its deadline", time.Minute, func(ctx context.Context) error {
		short, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		if _, err := c.CheckHealth(short, &client.CheckHealthRequest{}); !errors.As(err, new(*serviceerror.DeadlineExceeded)) {
			return fmt.Errorf("ended with %v (%T)", err, errors.Unwrap(err))
		}
		return nil
	})

	done := make(chan error, 1)
	go func() {
		_, err := c.CheckHealth(ctx, &client.CheckHealthRequest{})
		done <- err
	}()
	if err := srv.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("a call made while the server was down, once it is back: %v", err)
	}
}

// startTemporal runs a Temporal dev server of the test's own, stopped when it ends.
func startTemporal(t *testing.T, ctx context.Context) *devstack.Temporal {
	t.Helper()
	bin, err := testenv.BinDir()
	if err != nil {
		t.Fatal(err)
	}
	srv := &devstack.Temporal{Bin: filepath.Join(bin, "temporal"), Dir: t.TempDir()}
	if srv.Port, err = devstack.FreePort(); err != nil {
		t.Fatal(err)
	}
	if srv.UIPort, err = devstack.FreePort(); err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Stop() })
	return srv
}
