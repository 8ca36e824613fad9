// Command hooks is a sample Temporal worker for temco's lifecycle hooks (EMCO's "tac"
// temporal action controller intents). temco starts a hook as a child workflow of the DIG
// operation it belongs to: workflow type <workflowClientName> on task queue <TaskQueue>,
// with exactly one argument, EMCO's workflowParams (see Params):
//
//	{"activityOptions": {"<activity>": {"StartToCloseTimeout": <ns>, ...}},
//	 "activityParams":  {"<key>": {"<string>": "<string>"}, ...,
//	                     "emco": {"hook": "<intent>", "hookType": "pre-install", "operation": "instantiate", ...}}}
//
// Its workflows:
//
//   - Check reads one object live from a cluster and fails with a non-retryable
//     "ExpectationFailed" error unless it is as expected: activityParams["check"] =
//     {"kubeconfig": <file>, "namespace": <ns>, "kind": "Deployment"|"ConfigMap",
//     "name": <name>, "expect": "absent"|"present"|"ready", "replicas": <n, optional>}.
//     A Deployment is ready when its status has observed its generation and all of
//     spec.replicas are updated and ready.
//   - Fail refuses at once: a non-retryable "HookRefused" error whose message is
//     activityParams["fail"]["message"] ("the hook refused" by default).
//   - Steps journals step1, waits for the signal "continue", then journals step2 and
//     returns "done": kill its worker in between to see that nothing is lost or repeated.
//
// The journal, when activityParams["journal"]["path"] names a file, records what each
// hook did, one line per action, appended and fsynced by activities only:
//
//	<hook> <what> run=<runID>
//
// where hook is activityParams["emco"]["hook"] ("-" without one) and what is one of
// "check <expect> ok", "fail", "step1", "step2". An activity may run more than once (a
// retry after a lost worker), so it appends its line only when the journal lacks it.
//
// Run it beside temco:
//
//	hooks --temporal 127.0.0.1:7233 --namespace default --task-queue HOOKS
package main

import (
	"context"
	"flag"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"go.temporal.io/sdk/client"
	tlog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/worker"
)

func main() {
	temporal := flag.String("temporal", "127.0.0.1:7233", "Temporal frontend host:port")
	namespace := flag.String("namespace", "default", "Temporal namespace")
	queue := flag.String("task-queue", "HOOKS", "task queue the hooks' workflows and activities run on")
	flag.Parse()

	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	c, err := client.Dial(client.Options{HostPort: *temporal, Namespace: *namespace, Logger: tlog.NewStructuredLogger(log)})
	if err != nil {
		log.Error("connect to Temporal", "err", err)
		os.Exit(1)
	}
	defer c.Close()

	w := worker.New(c, *queue, worker.Options{})
	register(w)
	if err := w.Start(); err != nil {
		log.Error("start worker", "err", err)
		os.Exit(1)
	}
	log.Info("hooks worker polling " + *queue)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	<-ctx.Done()
	w.Stop()
}

// registry is what both a worker and the test environment register with.
type registry interface {
	RegisterWorkflow(w any)
	RegisterActivity(a any)
}

func register(r registry) {
	r.RegisterWorkflow(Check)
	r.RegisterWorkflow(Fail)
	r.RegisterWorkflow(Steps)
	r.RegisterActivity(&Activities{})
}
