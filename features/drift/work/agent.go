// A drift check of an agent cluster: temco holds no credential of it and reads nothing
// there. Its agent compares the objects it holds with the drift check's own comparison
// (features/drift/detect) each time it reads its cluster, and sends the result when it
// changed (api/agentdrift.go); the check records that report as its finding.

package work

import (
	"context"
	"fmt"
	"time"

	"github.com/temco/temco/features/drift/detect"
	"github.com/temco/temco/internal/core/agent"
	"github.com/temco/temco/internal/core/appctx"
	"github.com/temco/temco/internal/core/lifecycle"
)

// agentNotReported is why an agent cluster is not compared before its agent's first
// report of the context.
const agentNotReported = "agent cluster: its agent has not reported drift of this revision yet " +
	"(it compares each time it reads its cluster for the revision it holds)"

// agentNotCorrected is why correctDrift leaves an agent cluster's drifted objects alone.
const agentNotCorrected = "not corrected: temco holds no credential of an agent cluster, and its agent does not apply drifted objects again"

// fromAgent fills rec with what in.Cluster's agent last reported of the context's drift,
// Reported saying when (an unchanged finding is not sent again). An agent that has not
// called for agent.OfflineAfter is named in rec.Error: its report is the last known
// state, not today's.
func (a *Activities) fromAgent(ctx context.Context, in lifecycle.ClusterInput, placements []*appctx.ClusterApp,
	rec *appctx.ClusterDrift) (lifecycle.ClusterResult, error) {
	var res lifecycle.ClusterResult
	rep, err := a.Contexts.AgentDrift(ctx, in.ContextID, in.Cluster)
	if err != nil {
		return res, err
	}
	if rep == nil {
		rec.Skipped = agentNotReported
		res.NotReady = detect.Applied(placements)
		return res, nil
	}
	reported := rep.Checked
	rec.Reported, rec.InSync, rec.Objects, rec.Error = &reported, rep.InSync, rep.Objects, rep.Error
	if rep.Error != "" {
		res.NotReady = detect.Applied(placements)
		return res, nil
	}
	seen, err := agent.Open(a.Store.Database()).LastSeen(ctx, in.Cluster)
	if err != nil {
		return res, err
	}
	if seen == nil || time.Since(*seen) > agent.OfflineAfter {
		last := "never"
		if seen != nil {
			last = seen.UTC().Format(time.RFC3339)
		}
		rec.Error = fmt.Sprintf("its agent has not called since %s: what it reported at %s is shown", last, reported.UTC().Format(time.RFC3339))
	}
	if in.Drift.Correct {
		for i := range rec.Objects {
			o := &rec.Objects[i]
			o.Error = agentNotCorrected + suffix(o.Error)
		}
	}
	res.Done, res.Failed = rec.InSync, len(rec.Objects)
	return res, nil
}

// suffix is "; " and s, or nothing when s is empty.
func suffix(s string) string {
	if s == "" {
		return ""
	}
	return "; " + s
}
