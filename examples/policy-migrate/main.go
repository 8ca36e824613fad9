// Command metricsagent is an example policy agent for temco's policy intents: it plays
// EMCO's metrics collector (EMCO's examples/test-policy, steps 5-8) on the local stack,
// where clusters run no containers and so have no metrics to read. It serves EMCO's
// events protocol (the gRPC service events.events, method EventUpdate, which temco dials)
// and, on every caller's stream, every --every, sends one memory_usage_bytes event per
// workload temco deployed on its cluster: the Deployments labelled emco/deployment-id,
// "<context>-<app>", as EMCO's collector finds them. The measurement is --memory, in the
// shape of the custom metrics API's answer, which EMCO's example policy reads:
//
//	{"pod", "namespace", "contextId", "appName", "metric": "memory_usage_bytes",
//	 "value": {"kind": "MetricValueList", "items": [{"describedObject": {...}, "value": "<bytes>"}]}}
//
// Run it beside `temco dev`, for the cluster it reports on (docs/policy.md has the flow):
//
//	metricsagent --kubeconfig .data/clusters/cluster1/kubeconfig --listen 127.0.0.1:19090 --memory 1500000000
package main

import (
	"context"
	"flag"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"syscall"
	"time"

	"google.golang.org/grpc"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/clientcmd"
)

func main() {
	kubeconfig := flag.String("kubeconfig", "", "kubeconfig of the cluster the agent reports on (required)")
	listen := flag.String("listen", "127.0.0.1:9091", "address the events service listens on (the agent's addr in temco)")
	agentID := flag.String("agentid", "EMCOTEST", "the id the agent names itself with in its events (EMCO's example policy expects EMCOTEST)")
	memory := flag.Int64("memory", 1500000000, "memory_usage_bytes reported for every workload, in bytes")
	every := flag.Duration("every", 10*time.Second, "how often each workload's measurement is sent")
	flag.Parse()
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	if *kubeconfig == "" {
		log.Error("--kubeconfig is required: the cluster the agent reports on")
		os.Exit(2)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		log.Error("read the kubeconfig", "err", err)
		os.Exit(1)
	}
	kube, err := dynamic.NewForConfig(cfg)
	if err != nil {
		log.Error("kubernetes client", "err", err)
		os.Exit(1)
	}
	lis, err := net.Listen("tcp", *listen)
	if err != nil {
		log.Error("listen", "err", err)
		os.Exit(1)
	}
	a := &agent{id: *agentID, memory: *memory, every: *every, workloads: workloadsOn(kube), log: log}
	s := grpc.NewServer(grpc.ForceServerCodec(rawCodec{}))
	s.RegisterService(&eventsService, a)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		s.Stop()
	}()
	log.Info("serving events.events/EventUpdate", "addr", lis.Addr().String(), "agentId", *agentID, "memory", *memory)
	if err := s.Serve(lis); err != nil {
		log.Error("serve", "err", err)
		os.Exit(1)
	}
}
