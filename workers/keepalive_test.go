package workers

import (
	"context"
	"testing"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/interceptor"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/worker"

	"github.com/temco/temco/internal/core/lifecycle"
)

// The worker heartbeats for a kept-alive activity while it runs, and only for those.
func TestKeepAliveHeartbeats(t *testing.T) {
	keepAliveEvery = 10 * time.Millisecond
	t.Cleanup(func() { keepAliveEvery = 5 * time.Second })
	for _, tc := range []struct {
		name string
		want bool
	}{{lifecycle.RenderApps.Name(), true}, {lifecycle.ApplyCluster.Name(), false}} {
		var s testsuite.WorkflowTestSuite
		env := s.NewTestActivityEnvironment()
		env.SetWorkerOptions(worker.Options{Interceptors: []interceptor.WorkerInterceptor{&keepAlive{}}})
		beat := make(chan struct{}, 1)
		env.SetOnActivityHeartbeatListener(func(*activity.Info, converter.EncodedValues) {
			select {
			case beat <- struct{}{}:
			default:
			}
		})
		env.RegisterActivityWithOptions(func(ctx context.Context) (bool, error) {
			select {
			case <-beat:
				return true, nil
			case <-time.After(time.Second): // a hundred heartbeat intervals
				return false, nil
			}
		}, activity.RegisterOptions{Name: tc.name})
		v, err := env.ExecuteActivity(tc.name)
		if err != nil {
			t.Fatal(err)
		}
		var got bool
		if err := v.Get(&got); err != nil || got != tc.want {
			t.Errorf("%s: heartbeats %v, want %v (%v)", tc.name, got, tc.want, err)
		}
	}
}
