package starter

import (
	"context"
	"fmt"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
)

// pollerSeen: a worker re-polls within a minute (a long poll's length), so one Temporal
// saw longer ago than this is gone; Temporal itself lists pollers for 5 minutes.
const pollerSeen = 2 * time.Minute

// Pollers counts the workers polling temco's task queue as Temporal sees them, by task
// type ("workflow", "activity"): a worker down is one fewer, whatever runs it.
func (s *Starter) Pollers(ctx context.Context) (map[string]int, error) {
	out := map[string]int{}
	for name, typ := range map[string]enumspb.TaskQueueType{"workflow": enumspb.TASK_QUEUE_TYPE_WORKFLOW, "activity": enumspb.TASK_QUEUE_TYPE_ACTIVITY} {
		resp, err := s.Client.DescribeTaskQueue(ctx, s.TaskQueue, typ)
		if err != nil {
			return nil, fmt.Errorf("describe task queue %s: %w", s.TaskQueue, err)
		}
		out[name] = 0
		for _, p := range resp.GetPollers() {
			if time.Since(p.GetLastAccessTime().AsTime()) < pollerSeen {
				out[name]++
			}
		}
	}
	return out, nil
}
