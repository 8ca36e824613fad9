// The spans of one cluster's work: an operation's trace shows each cluster it reached.

package cluster

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"

	"github.com/temco/temco/internal/adapters/tracing"
	"github.com/temco/temco/internal/core/lifecycle"
)

// spanNames name the span of each operation on one cluster: one name per operation, the
// cluster an attribute (its span under its group's activity, "RunActivity:ApplyGroup").
var spanNames = map[string]string{"apply": "cluster.apply", "delete": "cluster.delete", "prune": "cluster.prune", "read": "cluster.read"}

// traceCluster starts the span of op ("apply", "delete", "prune" or "read") on in's
// cluster; the function returned ends it with the objects the result counts and the
// error. Only names and counts become attributes, never the cluster's credentials or
// objects. When traces are off it does nothing.
func traceCluster(ctx context.Context, in lifecycle.ClusterInput, op string) (context.Context, func(*lifecycle.ClusterResult, *error)) {
	ctx, span := tracing.Start(ctx, spanNames[op])
	if !span.IsRecording() {
		return ctx, func(*lifecycle.ClusterResult, *error) {}
	}
	span.SetAttributes(attribute.String("temco.cluster", in.Cluster), attribute.String("temco.operation", op),
		attribute.String("temco.context", in.ContextID))
	return ctx, func(res *lifecycle.ClusterResult, err *error) {
		span.SetAttributes(attribute.Int("temco.objects", res.Done+res.Failed+res.NotReady), attribute.Int("temco.objects.failed", res.Failed))
		if res.NotReady > 0 {
			span.SetAttributes(attribute.Int("temco.objects.not_ready", res.NotReady))
		}
		if res.Awaiting != nil { // its agent applies, and reports later
			span.SetAttributes(attribute.Bool("temco.cluster.agent", true))
		}
		if *err != nil {
			span.RecordError(*err)
			span.SetStatus(codes.Error, (*err).Error())
		}
		span.End()
	}
}
