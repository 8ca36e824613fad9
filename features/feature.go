// Package features defines what a side feature of temco is: drift checks, the
// autoscaler, cluster inventories, policy intents, cluster health, rollout previews and
// relocate (charts by reference are not one: every operation runs their pipeline, so they
// stay in the core's layers). Each lives in one folder below (features/<name>): its
// workflows, their activities' declarations and its vocabulary in flow (workflow code
// only: no I/O), its activities in work, and in the folder itself this Feature, the
// starting of its workflows and its routes (routes.go: its api.Extension). features/registry lists them; an operator may switch one off
// (--disable-features): the worker then registers none of its workflows and activities,
// and the api mounts its routes without its starter (they answer that it is off).
package features

import (
	"context"
	"log/slog"
	"time"

	"github.com/temco/temco/activities/deps"
	"github.com/temco/temco/api"
	"github.com/temco/temco/internal/adapters/egress"
	"github.com/temco/temco/internal/core/events"
	"github.com/temco/temco/internal/core/lifecycle"
	"github.com/temco/temco/starter"
)

// Feature is one side feature: what the worker registers of it and what the api wires.
type Feature struct {
	// Name is the feature's name in the configuration (--disable-features), e.g. "drift".
	Name string
	// Workflows maps each of its workflow types to its function.
	Workflows map[string]any
	// Activities registers its activities (each as the lifecycle.Activity its flow
	// package declares), built from the worker's one Deps.
	Activities func(lifecycle.Registry, *deps.Deps)
	// API is its part of the api (its routes.go: api.Extension), built for every feature:
	// in.Starter is nil when it is switched off, and its routes then answer so.
	API func(in Mounting) api.Extension
	// TakeOver are its workflow types whose activities run long enough that a restarted
	// worker fails its predecessor's attempts of them at once (workers.TakeOver).
	TakeOver []string
	// KeepAlive are its activities the worker heartbeats for while they run (they record
	// no progress of their own: workers' keepAlive).
	KeepAlive []string
	// Deliver, if set, is how the worker hands the events its activities raise to their
	// receivers (notify's delivery workflows), on s; without a feature that sets it,
	// events are only kept in the feed.
	Deliver func(s *starter.Starter) func(ctx context.Context, receiver string, e events.Event) error
	// Serve, if set, runs beside the api while it serves (health keeps its probes
	// started), until ctx ends.
	Serve func(ctx context.Context, in Serving)
}

// Mounting is what a feature's part of the api is built with.
type Mounting struct {
	// Starter starts its workflows: nil when it is switched off.
	Starter *starter.Starter
	// PolicyEngines are the OPA servers a policy intent may name (--policy-engine-allow;
	// nil: none): the policy feature's configuration.
	PolicyEngines *egress.Allow
	// NotifyHosts are the hosts notification receivers may be on
	// (--notify-hosts-allow; nil: none).
	NotifyHosts *egress.Allow
}

// Serving is what a feature's Serve runs with.
type Serving struct {
	Starter *starter.Starter
	Log     *slog.Logger
	// ProbeInterval paces the probes of the clusters' API servers (0: the api starts
	// none).
	ProbeInterval time.Duration
}
