package main

import (
	"context"
	"encoding/json"
	"log/slog"
	"strconv"
	"time"

	"google.golang.org/grpc"
)

// agent streams its measurements to every caller of EventUpdate (temco's listener).
type agent struct {
	id        string
	memory    int64
	every     time.Duration
	workloads func(context.Context) ([]workload, error)
	log       *slog.Logger
}

// metric is the one metric the agent measures, EMCO's example's.
const metric = "memory_usage_bytes"

// measurement is what EMCO's collector sends as an event's metricList.
type measurement struct {
	Pod       string          `json:"pod"`
	Namespace string          `json:"namespace"`
	ContextID string          `json:"contextId"`
	AppName   string          `json:"appName"`
	Metric    string          `json:"metric"`
	Value     json.RawMessage `json:"value"`
}

// stream sends the measurements of every workload every a.every until the caller goes.
func (a *agent) stream(ctx context.Context, send func(event) error) error {
	t := time.NewTicker(a.every)
	defer t.Stop()
	for {
		ws, err := a.workloads(ctx)
		if err != nil {
			a.log.Warn("list the workloads", "err", err) // the next tick tries again
		}
		for _, w := range ws {
			ev, err := a.event(w)
			if err != nil {
				return err
			}
			if err := send(ev); err != nil {
				return err
			}
		}
		a.log.Info("sent", "workloads", len(ws))
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// event is one workload's measurement as EMCO's collector sends it: the value in the
// custom metrics API's MetricValueList.
func (a *agent) event(w workload) (event, error) {
	value, err := json.Marshal(map[string]any{"kind": "MetricValueList", "apiVersion": "custom.metrics.k8s.io/v1beta1", "metadata": map[string]any{},
		"items": []any{map[string]any{
			"describedObject": map[string]any{"kind": "Deployment", "namespace": w.namespace, "name": w.name, "apiVersion": "apps/v1"},
			"metricName":      metric, "timestamp": time.Now().UTC().Format(time.RFC3339), "value": strconv.FormatInt(a.memory, 10)}}})
	if err != nil {
		return event{}, err
	}
	list, err := json.Marshal(measurement{Pod: w.name, Namespace: w.namespace, ContextID: w.contextID, AppName: w.app, Metric: metric, Value: value})
	if err != nil {
		return event{}, err
	}
	return event{eventID: metric, agentID: a.id, contextID: w.contextID, appName: w.app, metricList: list}, nil
}

// eventUpdate serves one EventUpdate call: the caller's ServerSpec (1003 for EMCO's
// policy controller and for temco) is read and not needed; events follow until it goes.
func (a *agent) eventUpdate(_ any, ss grpc.ServerStream) error {
	var spec frame
	if err := ss.RecvMsg(&spec); err != nil {
		return err
	}
	a.log.Info("a policy controller listens")
	return a.stream(ss.Context(), func(ev event) error {
		return ss.SendMsg(&frame{data: ev.encode()})
	})
}
