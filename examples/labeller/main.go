// Command labeller is an example intent controller that runs outside temco, in its own
// process and module, using only temco's public contract: an action controller that puts
// the label example.com/labelled-by=<intent> on every object of every app of a DIG.
//
// Run it beside temco, register it and name it in a DIG's intents:
//
//	labeller --temporal 127.0.0.1:7233 --api http://127.0.0.1:9015 --task-queue labeller
//	POST /v2/controllers {"metadata":{"name":"labeller"},
//	                      "spec":{"type":"action","priority":1,"taskQueue":"labeller"}}
//	DIG spec.intent: {"genericPlacementIntent": "...", "labeller": "blue"}
package main

import (
	"context"
	"encoding/json"
	"flag"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"go.temporal.io/sdk/client"
	tlog "go.temporal.io/sdk/log"

	"github.com/temco/temco/contract"
	"github.com/temco/temco/contract/remote"
)

// Label is the label the controller sets.
const Label = "example.com/labelled-by"

func main() {
	temporal := flag.String("temporal", envOr("TEMCO_TEMPORAL_ADDRESS", "127.0.0.1:7233"), "Temporal frontend host:port")
	namespace := flag.String("namespace", envOr("TEMCO_TEMPORAL_NAMESPACE", "default"), "Temporal namespace")
	api := flag.String("api", envOr("TEMCO_API", "http://127.0.0.1:9015"), "temco API base URL")
	queue := flag.String("task-queue", "labeller", "task queue the controller is registered with")
	delay := flag.Duration("delay", 0, "wait this long in each run before working (to watch a stop or a restart)")
	flag.Parse()

	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	c, err := client.Dial(client.Options{HostPort: *temporal, Namespace: *namespace, Logger: tlog.NewStructuredLogger(log)})
	if err != nil {
		log.Error("connect to Temporal", "err", err)
		os.Exit(1)
	}
	defer c.Close()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctrl := labeller{delay: *delay, log: log}
	// The token comes from the environment only: flags show in ps.
	if err := remote.Serve(ctx, c, *queue, remote.API{URL: *api, Token: os.Getenv("TEMCO_TOKEN")}, ctrl); err != nil {
		log.Error("worker", "err", err)
		os.Exit(1)
	}
}

type labeller struct {
	delay time.Duration
	log   *slog.Logger
}

// Run labels every object of every app on all of the app's clusters.
func (l labeller) Run(ctx context.Context, c contract.Context) error {
	in := c.Input()
	l.log.Info("run", "context", in.ContextID, "step", in.Step, "intent", in.Intent, "operation", in.Operation)
	if l.delay > 0 {
		select {
		case <-time.After(l.delay):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	if in.Intent == "" {
		return contract.Refuse("the DIG names the labeller with an empty intent: the intent is the label's value")
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"labels": map[string]string{Label: in.Intent}}})
	if err != nil {
		return err
	}
	apps, err := c.Apps(ctx)
	if err != nil {
		return err
	}
	n := 0
	for _, app := range apps {
		objs, err := c.Resources(ctx, app.Name, "")
		if err != nil {
			return err
		}
		for _, o := range objs {
			if err := c.Edit(contract.Edit{Op: contract.EditPatch, App: app.Name, Kind: o.Kind, Name: o.Name,
				Type: contract.PatchMerge, Data: patch}); err != nil {
				return err
			}
			n++
		}
	}
	l.log.Info("labelled", "context", in.ContextID, "objects", n)
	return nil
}

// Finished is told when an operation that ran the labeller has finished on the clusters.
func (l labeller) Finished(_ context.Context, c contract.Context) error {
	in := c.Input()
	l.log.Info("finished", "context", in.ContextID, "operation", in.Operation)
	return nil
}

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}
