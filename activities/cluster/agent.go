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
	"errors"
	"fmt"
	"time"

	"go.temporal.io/sdk/activity"

	"github.com/temco/temco/internal/core/agent"
	"github.com/temco/temco/internal/core/appctx"
	"github.com/temco/temco/internal/core/lifecycle"
	"github.com/temco/temco/internal/core/rollout"
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
// with its report), Unknown before its first. A cluster an operation went on without
// (offline policy skip) counts nothing until its agent reports that revision: a rollout's
// gates leave it out.
func (g *agentCluster) read(ctx context.Context, header *appctx.Context, placements []*appctx.ClusterApp, _ reading) lifecycle.ClusterResult {
	var res lifecycle.ClusterResult
	if since := g.skipped(ctx, header); since != nil {
		note := "Offline since " + since.UTC().Format(time.RFC3339) + ": the rollout went on without the cluster (offline policy skip); its agent applies the newest revision when it returns"
		for _, p := range placements {
			p.Live, p.LiveAt = make([]appctx.Live, len(p.Resources)), time.Now().UTC()
			for i := range p.Live {
				p.Live[i] = appctx.Live{State: appctx.LiveUnknown, Error: note}
			}
		}
		return lifecycle.ClusterResult{Offline: since}
	}
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

// skipped is when the cluster went offline, if an operation went on without it for
// header's revision and its agent has not reported that revision since.
func (g *agentCluster) skipped(ctx context.Context, header *appctx.Context) *time.Time {
	id := agent.ItemID(g.key, cmp.Or(header.Instance, header.ID))
	it, err := g.agents.Item(ctx, id)
	if err != nil || it == nil || it.Skipped == nil || it.Context != header.ID {
		return nil
	}
	if rep, err := g.agents.Reported(ctx, id); err != nil || rep != nil && rep.Gen >= it.Gen {
		return nil
	}
	return it.Skipped
}

// AwaitAgent ends with the agent's report of generation in.Gen of its item, which the api
// passes on by completing this activity (its task token, sealed, is stored with the item).
// An item published again since belongs to a later operation: this one ends at once.
//
// An attempt that starts once the offline policy's After has passed since the publication
// (the activity times out and is retried at it) looks at when the agent last called. Past
// After the cluster is offline: its objects say since when, and the policy decides. Wait keeps
// waiting; skip ends without counting the cluster (Item.Skipped); fail ends with its
// objects Failed. Either way the item stays: the agent applies it when it returns.
func (a *Activities) AwaitAgent(ctx context.Context, in lifecycle.AgentWait) (lifecycle.ClusterResult, error) {
	agents := a.Clients.agents()
	// A gen is its publication's time: until the offline policy's After has passed since,
	// nothing else of the item is needed.
	if in.Context != "" && time.Since(time.Unix(0, in.Gen)) >= time.Duration(offlineOf(in).After) {
		it, err := agents.Item(ctx, in.Item)
		if err != nil || it == nil || it.Gen != in.Gen {
			return lifecycle.ClusterResult{}, err
		}
		if res, done, err := a.reported(ctx, in); done || err != nil {
			return res, err
		}
		if res, done, err := a.offline(ctx, in, it); done || err != nil {
			return res, err
		}
	}
	token, err := a.Clients.Keys.Seal(activity.GetInfo(ctx).TaskToken, []byte(in.Item))
	if err != nil {
		return lifecycle.ClusterResult{}, err
	}
	// Stored only while the item is at in.Gen: one published since belongs to a later
	// operation, and this one ends at once.
	waiting, err := agents.Wait(ctx, in.Item, in.Gen, token)
	if err != nil || !waiting {
		return lifecycle.ClusterResult{}, err
	}
	// The report may have come before the token was stored: the api, having read no
	// token, completed nothing.
	if res, done, err := a.reported(ctx, in); done || err != nil {
		return res, err
	}
	return lifecycle.ClusterResult{}, activity.ErrResultPending
}

// offlineOf is in's offline policy (the default when the operation has no strategy).
func offlineOf(in lifecycle.AgentWait) rollout.Offline {
	if in.Offline.Policy == "" {
		return (&rollout.Spec{}).OfflineOf()
	}
	return in.Offline
}

// reported is the agent's report of in.Gen or a later one, done when there is one.
func (a *Activities) reported(ctx context.Context, in lifecycle.AgentWait) (lifecycle.ClusterResult, bool, error) {
	rep, err := a.Clients.agents().Reported(ctx, in.Item)
	if err != nil || rep == nil || rep.Gen < in.Gen {
		return lifecycle.ClusterResult{}, false, err
	}
	return rep.Result, true, nil
}

// offline applies the offline policy when the cluster's agent has not called for its
// After (counted from the publication at the earliest); done when the wait ends.
func (a *Activities) offline(ctx context.Context, in lifecycle.AgentWait, it *agent.Item) (lifecycle.ClusterResult, bool, error) {
	off := offlineOf(in)
	seen, err := a.Clients.agents().LastSeen(ctx, in.Cluster)
	if err != nil || seen != nil && time.Since(*seen) < time.Duration(off.After) {
		return lifecycle.ClusterResult{}, false, err
	}
	since := "its agent has not called since it joined"
	if seen != nil {
		since = "Offline since " + seen.UTC().Format(time.RFC3339) + ": its agent has not called since"
	} else {
		seen = &it.Published
	}
	switch off.Policy {
	case rollout.OfflineFail:
		n, err := a.markOffline(ctx, in, it, true, since+"; the rollout's offline policy fails the cluster (its agent applies the newest revision when it returns)")
		return lifecycle.ClusterResult{Failed: n, Offline: seen}, err == nil, err
	case rollout.OfflineSkip:
		if err := a.Clients.agents().Skip(ctx, in.Item, in.Gen, *seen); err != nil {
			return lifecycle.ClusterResult{}, false, err
		}
		_, err := a.markOffline(ctx, in, it, false, since+"; the rollout went on without the cluster (offline policy skip): its agent applies the newest revision when it returns")
		return lifecycle.ClusterResult{Offline: seen}, err == nil, err
	}
	_, err = a.markOffline(ctx, in, it, false, since+"; waiting for it")
	return lifecycle.ClusterResult{}, false, err
}

// markOffline notes why the cluster's objects not settled yet are not: as their warning,
// or as their error with failed. It answers how many it marked.
func (a *Activities) markOffline(ctx context.Context, in lifecycle.AgentWait, it *agent.Item, failed bool, note string) (int, error) {
	_, apps, err := a.context(ctx, in.Context, true)
	if err != nil {
		return 0, err
	}
	placements, err := a.Contexts.PlacedApps(ctx, in.Context, in.Cluster)
	if err != nil {
		return 0, err
	}
	appctx.List(placements, appctx.ForCluster(apps, placements))
	done := lifecycle.ResApplied
	if it.Remove != "" {
		done = lifecycle.ResDeleted
	}
	n, now := 0, time.Now().UTC()
	for _, p := range placements {
		p.Cluster = in.Cluster
		for i := range p.Resources {
			res := &p.Resources[i]
			if res.Status == done || res.Status == lifecycle.ResFailed {
				continue
			}
			n++
			if failed {
				res.Status, res.Error, res.Updated = lifecycle.ResFailed, note, now
			} else {
				res.Warning = note
			}
		}
	}
	if err := a.Contexts.SaveStatuses(ctx, in.Context, it.Writer, placements); err != nil && !errors.Is(err, appctx.ErrSuperseded) {
		return n, err
	}
	return n, nil
}
