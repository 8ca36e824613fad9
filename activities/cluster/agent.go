// Reaching a cluster through its agent (docs/agent.md): temco agent runs inside the
// cluster and calls home; it holds the cluster's credentials, temco none. An apply or a
// delete publishes the state the deployment should have there (agent.Item) and ends
// awaiting the agent's report; the workflow then waits in AwaitAgent, an activity the api
// completes when the report comes. The agent applies with the push path's own run
// (local.go), so objects, statuses and readiness mean the same in both modes.

package cluster

import (
	"cmp"
	"context"
	"fmt"
	"time"

	"go.temporal.io/sdk/activity"

	"github.com/temco/temco/internal/core/agent"
	"github.com/temco/temco/internal/core/appctx"
	"github.com/temco/temco/internal/core/lifecycle"
)

// accessField says how a cluster is reached when not with its kubeconfig or through git:
// model.AccessAgent (set by the api at registration).
const accessField = "access"

// agentCluster is a cluster reached by its agent.
type agentCluster struct {
	key    string
	agents *agent.Store
}

// publish gives the cluster's agent the state the context's deployment should have
// there: the context's objects (apply; previous is the revision it follows) or none
// (remove). The run's statuses say it waits for the agent; its result, which generation
// of the item the agent must report.
func (g *agentCluster) publish(r *run, it agent.Item) error {
	it.Cluster, it.Instance, it.Writer = g.key, cmp.Or(r.header.Instance, r.header.ID), r.writer
	gen, err := g.agents.Publish(r.ctx, it)
	if err != nil {
		return err
	}
	note := fmt.Sprintf("given to the cluster's agent at %s: waiting for its report", time.Now().UTC().Format(time.RFC3339))
	r.mu.Lock()
	for _, p := range r.byApp {
		for i := range p.Resources {
			if res := &p.Resources[i]; res.Status == lifecycle.ResPending || res.Status == lifecycle.ResRetrying || it.Remove != "" {
				res.Warning = note
			}
		}
	}
	r.result = lifecycle.ClusterResult{Awaiting: &lifecycle.AgentWait{Cluster: g.key, Item: agent.ItemID(g.key, it.Instance), Gen: gen}}
	r.mu.Unlock()
	return r.save(r.ctx)
}

// apply publishes the context's objects (an update's previous revision with them).
func (g *agentCluster) apply(r *run) error {
	return g.publish(r, agent.Item{Context: r.header.ID, Previous: r.previousID})
}

// remove publishes that the deployment leaves the cluster. A prune of a cluster the next
// revision still places apps on has nothing to publish: the agent deletes what the
// previous revision had and the next has not as soon as it has applied the next
// (Local.Apply), and reported it with that apply.
func (g *agentCluster) remove(r *run, only map[string][]int, next *placed) error {
	if only != nil && next != nil && len(next.placements) > 0 {
		return nil
	}
	return g.publish(r, agent.Item{Remove: r.header.ID})
}

// read answers what the agent last reported of the objects (their Live states, stored
// with its report), Unknown before its first.
func (g *agentCluster) read(_ context.Context, _ *appctx.Context, placements []*appctx.ClusterApp, _ bool) lifecycle.ClusterResult {
	var res lifecycle.ClusterResult
	for _, p := range placements {
		if len(p.Live) != len(p.Resources) {
			p.Live, p.LiveAt = make([]appctx.Live, len(p.Resources)), time.Now().UTC()
			for i := range p.Live {
				p.Live[i] = appctx.Live{State: appctx.LiveUnknown, Error: "the cluster's agent has not reported this object yet"}
			}
		}
		for _, l := range p.Live {
			if l.State == appctx.LivePresent {
				res.Done++
			}
			if !l.Ready {
				res.NotReady++
			}
		}
	}
	return res
}

// AwaitAgent ends with the agent's report of generation in.Gen of its item, which the api
// passes on by completing this activity (its task token, sealed, is stored with the item).
// An item published again since belongs to a later operation: this one ends at once.
func (a *Activities) AwaitAgent(ctx context.Context, in lifecycle.AgentWait) (lifecycle.ClusterResult, error) {
	agents := a.Clients.agents()
	token, err := a.Clients.Keys.Seal(activity.GetInfo(ctx).TaskToken, []byte(in.Item))
	if err != nil {
		return lifecycle.ClusterResult{}, err
	}
	waiting, err := agents.Wait(ctx, in.Item, in.Gen, token)
	if err != nil || !waiting {
		return lifecycle.ClusterResult{}, err
	}
	// The report may have come before the token was stored: the api, having read no
	// token, completed nothing.
	rep, err := agents.Reported(ctx, in.Item)
	if err != nil {
		return lifecycle.ClusterResult{}, err
	}
	if rep != nil && rep.Gen >= in.Gen {
		return rep.Result, nil
	}
	return lifecycle.ClusterResult{}, activity.ErrResultPending
}
