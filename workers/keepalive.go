package workers

import (
	"context"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/interceptor"

	"github.com/temco/temco/features"
	"github.com/temco/temco/features/registry"
	"github.com/temco/temco/internal/core/lifecycle"
)

// keptAlive are the activities the worker heartbeats for while they run: an operation's
// preparation (rendering, placement, controllers' commit, a kind's own preparation) and
// those the features name (a preview's: Feature.KeepAlive). They record no progress of their own, and run under a HeartbeatTimeout, so
// that one on a worker that dies is retried on another within that timeout, not after its
// ten-minute StartToCloseTimeout. (PrepareCertEnrollment heartbeats itself, per key.)
var keptAlive = keptAliveOf(registry.All, map[string]bool{
	lifecycle.ResolveArtifacts.Name(): true, lifecycle.FetchArtifact.Name(): true, lifecycle.PinImages.Name(): true,
	lifecycle.RenderApps.Name(): true, lifecycle.PlaceApps.Name(): true, lifecycle.RenderVariants.Name(): true,
	lifecycle.CommitControllers.Name(): true, lifecycle.PrepareLogicalCloud.Name(): true,
	lifecycle.PrepareClusterNetwork.Name(): true, lifecycle.PrepareCertDistribution.Name(): true,
	lifecycle.CopyContext.Name(): true,
})

// keptAliveOf adds the features' activities to core's.
func keptAliveOf(all []features.Feature, core map[string]bool) map[string]bool {
	for _, f := range all {
		for _, a := range f.KeepAlive {
			core[a] = true
		}
	}
	return core
}

// keepAliveEvery paces those heartbeats (deploy's preparing timeout is 30 s).
var keepAliveEvery = 5 * time.Second

type keepAlive struct {
	interceptor.WorkerInterceptorBase
}

func (*keepAlive) InterceptActivity(_ context.Context, next interceptor.ActivityInboundInterceptor) interceptor.ActivityInboundInterceptor {
	i := &keepAliveActivity{}
	i.Next = next
	return i
}

type keepAliveActivity struct {
	interceptor.ActivityInboundInterceptorBase
}

func (k *keepAliveActivity) ExecuteActivity(ctx context.Context, in *interceptor.ExecuteActivityInput) (any, error) {
	if keptAlive[activity.GetInfo(ctx).ActivityType.Name] {
		done := make(chan struct{})
		defer close(done)
		go func() {
			t := time.NewTicker(keepAliveEvery)
			defer t.Stop()
			for {
				select {
				case <-done:
					return
				case <-t.C:
					activity.RecordHeartbeat(ctx)
				}
			}
		}()
	}
	return k.Next.ExecuteActivity(ctx, in)
}
