// Package operation records the beginning and end of DIG lifecycle operations: the
// state transition in the DIG's history and the AppContext's status.
package operation

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"time"

	"go.temporal.io/sdk/temporal"
	"golang.org/x/sync/errgroup"

	"github.com/temco/temco/activities/placement"
	"github.com/temco/temco/internal/core/appctx"
	"github.com/temco/temco/internal/core/digstate"
	"github.com/temco/temco/internal/core/events/feed"
	"github.com/temco/temco/internal/core/lifecycle"
	"github.com/temco/temco/internal/core/model"
	"github.com/temco/temco/internal/core/rollout"
	"github.com/temco/temco/internal/core/snapshot"
	"github.com/temco/temco/internal/core/store"
)

// Activities record operations.
type Activities struct {
	Store    *store.Store
	Contexts *appctx.Store
	// ClustersPerBatch sizes the batches of a rollback's stages (0: placement's default).
	ClustersPerBatch int
	// Snapshots records the configuration each new revision of a DIG was accepted with
	// (snapshot.go); nil: none are recorded.
	Snapshots *snapshot.Store
	// Events raises the operations' events (nil: none).
	Events *feed.Emitter
}

// start asks the target's machine whether op may start from state; a refusal is final,
// and so is an operation with nothing to do (applying applied network intents: the api
// answers those itself, so only a race with another operation gets here).
func start(t lifecycle.Target, op, state string) (lifecycle.Transition, error) {
	tr, err := t.Kind().Machine.Start(t.String(), op, state)
	if err != nil {
		return tr, temporal.NewNonRetryableApplicationError(err.Error(), lifecycle.ErrInvalidState, nil)
	}
	if tr.To == "" {
		return tr, temporal.NewNonRetryableApplicationError(fmt.Sprintf("%s is %s already: nothing to %s", t, state, op), lifecycle.ErrInvalidState, nil)
	}
	return tr, nil
}

// last is the newest action of a history (zero when there is none).
func last(info lifecycle.StateInfo) lifecycle.Action {
	if len(info.Actions) == 0 {
		return lifecycle.Action{}
	}
	return info.Actions[len(info.Actions)-1]
}

// BeginOperation checks the transition, records it in the DIG's history and prepares
// the context: a new one for instantiate, the current one for terminate. Retrying it
// after a partial success finds its own record and returns the same result.
func (a *Activities) BeginOperation(ctx context.Context, in lifecycle.BeginInput) (out lifecycle.BeginResult, err error) {
	switch in.Op {
	case lifecycle.OpInstantiate:
		out, err = a.snapshotted(ctx, in, a.beginInstantiate)
	case lifecycle.OpTerminate:
		out, err = a.beginTerminate(ctx, in)
	case lifecycle.OpUpdate, lifecycle.OpRollback:
		out, err = a.snapshotted(ctx, in, a.beginRevision)
	default:
		return out, temporal.NewNonRetryableApplicationError("unknown operation "+in.Op, lifecycle.ErrInvalidInput, nil)
	}
	if err != nil || out.ContextID == "" {
		return out, err
	}
	return out, a.started(ctx, in, out)
}

func (a *Activities) beginInstantiate(ctx context.Context, in lifecycle.BeginInput) (lifecycle.BeginResult, error) {
	target, err := a.Store.Get(ctx, in.Target.ID()) // read once: for its logical cloud and its state
	if store.CodeOf(err) == store.ErrNotFound {
		return lifecycle.BeginResult{}, temporal.NewNonRetryableApplicationError(fmt.Sprintf("%s no longer exists", in.Target), lifecycle.ErrInvalidState, nil)
	}
	if err != nil {
		return lifecycle.BeginResult{}, err
	}
	if info, err := digstate.Parse(target); err == nil && info.ContextID() == in.ContextID {
		return lifecycle.BeginResult{ContextID: in.ContextID, Revision: 1}, nil // recorded by an earlier attempt
	}
	namespace, creds, ready, err := a.scope(ctx, in.Target, target)
	if err != nil {
		return lifecycle.BeginResult{}, err
	}
	// The context first: the state history must never name a context that does not exist.
	// Whether the logical cloud is ready is read meanwhile; if not, the context goes again.
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error {
		return a.Contexts.Create(gctx, &appctx.Context{ID: in.ContextID, DIG: in.Target.ID(), Instance: in.ContextID,
			Revision: 1, Status: lifecycle.StatusInstantiating, Namespace: namespace, Credentials: creds})
	})
	if ready != nil {
		g.Go(func() error { return ready(gctx) })
	}
	if err = g.Wait(); err != nil {
		_ = a.Contexts.DeleteContext(context.WithoutCancel(ctx), in.ContextID)
		return lifecycle.BeginResult{}, err
	}
	_, err = digstate.ChangeFrom(ctx, a.Store, in.Target.ID(), target, func(info lifecycle.StateInfo) ([]lifecycle.Action, error) {
		if info.ContextID() == in.ContextID {
			return nil, nil // recorded by an earlier attempt
		}
		t, err := start(in.Target, in.Op, info.Current())
		if err != nil {
			return nil, err
		}
		return []lifecycle.Action{{State: t.To, ContextID: in.ContextID, Revision: 1}}, nil
	})
	if err != nil {
		_ = a.Contexts.DeleteContext(context.WithoutCancel(ctx), in.ContextID)
		return lifecycle.BeginResult{}, err
	}
	return lifecycle.BeginResult{ContextID: in.ContextID, Revision: 1}, nil
}

// beginRevision starts an update (a new revision rendered from the DIG as it is now) or a
// rollback (a new revision copied from revision in.Revision of the current instance): the
// running context is recorded as Updated, the new one as Instantiated with its revision.
func (a *Activities) beginRevision(ctx context.Context, in lifecycle.BeginInput) (lifecycle.BeginResult, error) {
	var res lifecycle.BeginResult
	_, err := digstate.Change(ctx, a.Store, in.Target.ID(), func(info lifecycle.StateInfo) ([]lifecycle.Action, error) {
		cur := last(info)
		if cur.ContextID == in.ContextID { // recorded by an earlier attempt
			prev := info.Actions[len(info.Actions)-2]
			res = lifecycle.BeginResult{ContextID: in.ContextID, Revision: cur.Revision, Previous: prev.ContextID}
			if in.Op == lifecycle.OpRollback {
				res.Source, _ = info.RevisionContext(in.Revision)
			}
			return nil, nil
		}
		t, err := start(in.Target, in.Op, cur.State)
		if err != nil {
			return nil, err
		}
		res = lifecycle.BeginResult{ContextID: in.ContextID, Revision: info.LatestRevision() + 1, Previous: cur.ContextID}
		if in.Op == lifecycle.OpRollback {
			src, ok := info.RevisionContext(in.Revision)
			if !ok {
				return nil, temporal.NewNonRetryableApplicationError(fmt.Sprintf("%s has no revision %d in its current instance (revisions 1 to %d)",
					in.Target, in.Revision, info.LatestRevision()), lifecycle.ErrInvalidInput, nil)
			}
			res.Source = src
		}
		return []lifecycle.Action{
			{State: t.Replaced, ContextID: cur.ContextID, Revision: cur.Revision},
			{State: t.To, ContextID: in.ContextID, Revision: res.Revision},
		}, nil
	})
	if err != nil {
		return res, err
	}
	prev, err := a.Contexts.Get(ctx, res.Previous)
	if err != nil {
		return res, err
	}
	return res, a.Contexts.Create(ctx, &appctx.Context{ID: res.ContextID, DIG: in.Target.ID(), Instance: prev.Instance,
		Revision: res.Revision, Op: in.Op, Status: lifecycle.StatusUpdating, Namespace: prev.Namespace, Credentials: prev.Credentials})
}

func (a *Activities) beginTerminate(ctx context.Context, in lifecycle.BeginInput) (lifecycle.BeginResult, error) {
	var res lifecycle.BeginResult
	if in.Target.Kind().Hosts {
		if err := a.unused(ctx, in.Target); err != nil {
			return res, err
		}
	}
	_, err := digstate.Change(ctx, a.Store, in.Target.ID(), func(info lifecycle.StateInfo) ([]lifecycle.Action, error) {
		cur := last(info)
		res = lifecycle.BeginResult{ContextID: cur.ContextID, Revision: cur.Revision}
		// Recorded by an earlier attempt: the state says Terminated but the context's
		// status is no terminate's end. The state is written first, so an attempt that died
		// before the status (a worker or the database killed in between) leaves the status
		// as it was: a retry that refused then would leave the objects on the clusters
		// under a state that says they are gone (found by make chaos).
		if cur.State == lifecycle.StateTerminated && cur.ContextID != "" {
			c, err := a.Contexts.Get(ctx, cur.ContextID)
			if err != nil && !errors.Is(err, appctx.ErrNotFound) {
				return nil, err
			}
			if c != nil && !terminateEnded[c.Status] {
				return nil, nil
			}
		}
		t, err := start(in.Target, in.Op, cur.State)
		if err != nil {
			return nil, err
		}
		return []lifecycle.Action{{State: t.To, ContextID: cur.ContextID, Revision: cur.Revision}}, nil
	})
	if err != nil {
		return res, err
	}
	if res.Leftovers, err = a.leftovers(ctx, in.Target, res.ContextID); err != nil {
		return res, err
	}
	return res, a.Contexts.SetStatus(ctx, res.ContextID, lifecycle.StatusTerminating, "")
}

// terminateEnded are the statuses a terminate's workflow ends its context with.
var terminateEnded = map[string]bool{lifecycle.StatusTerminated: true, lifecycle.StatusTerminateFailed: true,
	lifecycle.StatusTerminateStopped: true}

// scope returns where a target (its document: target) deploys: the namespace and the
// logical cloud whose issued credentials to use ("" for the clusters' own). A logical
// cloud sets itself up with the clusters' credentials; a DIG's logical cloud must be
// instantiated, which ready checks (nil for a logical cloud): a read of its own, so that
// it can run beside the next step.
func (a *Activities) scope(ctx context.Context, t lifecycle.Target, target *store.Doc) (namespace, creds string, ready func(context.Context) error, err error) {
	scope := t.Kind().Scope
	if scope == lifecycle.ScopeDefault {
		return "default", "", nil, nil
	}
	cloudID, d := t.ID(), target
	if scope == lifecycle.ScopeHost {
		dig, err := model.Decode[model.DIGSpec](target.Body)
		if err != nil {
			return "", "", nil, err
		}
		cloudID = lifecycle.LogicalCloudID(t.Project, dig.Spec.LogicalCloud)
		d, err = a.Store.Get(ctx, cloudID)
		if store.CodeOf(err) == store.ErrNotFound {
			return "", "", nil, temporal.NewNonRetryableApplicationError(fmt.Sprintf("%s names logical cloud %s, which does not exist", t, cloudID), lifecycle.ErrInvalidState, nil)
		}
		if err != nil {
			return "", "", nil, err
		}
	}
	lc, err := model.Decode[model.LogicalCloudSpec](d.Body)
	if err != nil {
		return "", "", nil, err
	}
	namespace = cmp.Or(lc.Spec.Namespace, "default")
	if scope == lifecycle.ScopeOwn {
		return namespace, "", nil, nil
	}
	info, err := digstate.Parse(d)
	if err != nil {
		return "", "", nil, err
	}
	if lc.Spec.Level != model.LevelAdmin {
		creds = cloudID
	}
	ready = func(ctx context.Context) error {
		status := ""
		if c, err := a.Contexts.Get(ctx, info.ContextID()); err == nil {
			status = c.Status
		} else if !errors.Is(err, appctx.ErrNotFound) {
			return err
		}
		if !lifecycle.LogicalClouds.Machine.Allows(lifecycle.OpHost, info.Current()) || status != lifecycle.StatusInstantiated {
			return temporal.NewNonRetryableApplicationError(fmt.Sprintf("%s uses logical cloud %q, which is not instantiated (state %s, status %s)",
				t, lc.Metadata.Name, info.Current(), cmp.Or(status, "none")), lifecycle.ErrInvalidState, nil)
		}
		return nil
	}
	return namespace, creds, ready, nil
}

// unused refuses to terminate a logical cloud a DIG still has objects in.
func (a *Activities) unused(ctx context.Context, cloud lifecycle.Target) error {
	digs, err := a.Store.Referrers(ctx, cloud.ID(), model.KindDIG)
	if err != nil {
		return err
	}
	for _, d := range digs {
		info, err := digstate.Parse(d)
		if err != nil {
			return err
		}
		if cur := info.Current(); lifecycle.DIGs.Machine.Allows(lifecycle.OpTerminate, cur) { // it may have objects on clusters
			return temporal.NewNonRetryableApplicationError(fmt.Sprintf("%s is used by deployment intent group %s, which is %s: terminate it first",
				cloud, d.ID, cur), lifecycle.ErrInvalidState, nil)
		}
		// Terminated, but its objects may still be being deleted, with the cloud's
		// credentials and in its namespace.
		if id := info.ContextID(); info.Current() == lifecycle.StateTerminated && id != "" {
			c, err := a.Contexts.Get(ctx, id)
			if err != nil && !errors.Is(err, appctx.ErrNotFound) {
				return err
			}
			if c != nil && c.Status == lifecycle.StatusTerminating {
				return temporal.NewNonRetryableApplicationError(fmt.Sprintf("%s is used by deployment intent group %s, which is still terminating: terminate the cloud once it has finished",
					cloud, d.ID), lifecycle.ErrInvalidState, nil)
			}
		}
	}
	return nil
}

// leftovers finds the earlier contexts of the current instance that an update did not
// finish replacing (stopped or cancelled before it removed what they had applied).
func (a *Activities) leftovers(ctx context.Context, target lifecycle.Target, current string) ([]string, error) {
	_, info, err := digstate.Load(ctx, a.Store, target.ID())
	if err != nil {
		return nil, err
	}
	var out []string
	seen := map[string]bool{current: true}
	for _, act := range info.Actions[max(info.InstanceStart(), 0):] {
		if act.ContextID == "" || seen[act.ContextID] {
			continue
		}
		seen[act.ContextID] = true
		c, err := a.Contexts.Get(ctx, act.ContextID)
		if err != nil {
			return nil, err
		}
		if c.Status != lifecycle.StatusUpdated {
			out = append(out, c.ID)
		}
	}
	return out, nil
}

// FinishOperation records the context's final status. A stopped operation also records
// the stopped state in the DIG's history, and its retrying objects become Failed.
func (a *Activities) FinishOperation(ctx context.Context, in lifecycle.FinishInput) error {
	if in.Superseded != "" {
		if err := a.Contexts.SetStatus(ctx, in.Superseded, lifecycle.StatusUpdated, ""); err != nil {
			return err
		}
	}
	if in.Stopped {
		stopped := in.Target.Kind().Machine.StoppedState(in.Status)
		_, err := digstate.Change(ctx, a.Store, in.Target.ID(), func(info lifecycle.StateInfo) ([]lifecycle.Action, error) {
			cur := last(info)
			if cur.State == stopped && cur.ContextID == in.ContextID {
				return nil, nil
			}
			return []lifecycle.Action{{State: stopped, ContextID: in.ContextID, Revision: cur.Revision}}, nil
		})
		if err != nil {
			return err
		}
		if err := a.failRetrying(ctx, in.ContextID); err != nil {
			return err
		}
	}
	if len(in.Hooks) > 0 {
		if err := a.Contexts.SetHooks(ctx, in.ContextID, in.Hooks); err != nil {
			return err
		}
	}
	if in.Rollout != nil {
		if err := a.RecordRollout(ctx, lifecycle.RolloutRecord{ContextID: in.ContextID, Status: *in.Rollout}); err != nil {
			return err
		}
	}
	if in.Restored != "" {
		if err := a.restore(ctx, in.Target, in.Restored); err != nil {
			return err
		}
	}
	if in.Refused && in.Status == lifecycle.StatusInstantiateFailed && in.Target.Kind().Machine.Has(lifecycle.OpApprove) { // back to Approved
		if err := a.reapprove(ctx, in.Target, in.ContextID); err != nil {
			return err
		}
	}
	// Told before the status is final: a caller that sees the status may start the next
	// operation at once, and the operation ends as soon as the status is written.
	if err := a.finished(ctx, in); err != nil {
		return err
	}
	return a.Contexts.SetStatus(ctx, in.ContextID, in.Status, in.Error)
}

// reapprove records a DIG Approved again after an instantiate that failed before it
// touched any cluster: as in EMCO, where such an instantiate leaves the DIG's state as it
// was, it may be instantiated again at once (no terminate first). The failed context
// stays in the history, with its error, for the status.
func (a *Activities) reapprove(ctx context.Context, dig lifecycle.Target, failed string) error {
	_, err := digstate.Change(ctx, a.Store, dig.ID(), func(info lifecycle.StateInfo) ([]lifecycle.Action, error) {
		if cur := last(info); cur.State != lifecycle.StateInstantiated || cur.ContextID != failed {
			return nil, nil // recorded by an earlier attempt, or the DIG moved on
		}
		return []lifecycle.Action{{State: lifecycle.StateApproved, ContextID: failed}}, nil
	})
	return err
}

// restore records that context prev is current again: a failed rollout returned every
// cluster it had changed to it, so the next update or terminate starts from it.
func (a *Activities) restore(ctx context.Context, target lifecycle.Target, prev string) error {
	c, err := a.Contexts.Get(ctx, prev)
	if err != nil {
		return err
	}
	_, err = digstate.Change(ctx, a.Store, target.ID(), func(info lifecycle.StateInfo) ([]lifecycle.Action, error) {
		if cur := last(info); cur.ContextID == prev { // recorded by an earlier attempt
			return nil, nil
		}
		return []lifecycle.Action{{State: lifecycle.StateInstantiated, ContextID: prev, Revision: c.Revision}}, nil
	})
	return err
}

// failRetrying turns Retrying objects into Failed once nobody retries them any more.
func (a *Activities) failRetrying(ctx context.Context, ctxID string) error {
	placements, err := a.Contexts.Placements(ctx, ctxID, appctx.Filter{})
	if err != nil {
		return err
	}
	touched := map[string]bool{}
	for _, p := range placements {
		for i := range p.Resources {
			if r := &p.Resources[i]; r.Status == lifecycle.ResRetrying {
				r.Status, r.Error, r.Updated = lifecycle.ResFailed, "stopped while retrying: "+r.Error, time.Now().UTC()
				touched[p.Cluster] = true
			}
		}
	}
	// A cluster's apps are written whole: pass every app of the touched clusters. Not their
	// live reads: a read may have saved since.
	var changed []*appctx.ClusterApp
	for _, p := range placements {
		if touched[p.Cluster] {
			changed = append(changed, p)
		}
	}
	return a.Contexts.SaveStatuses(ctx, ctxID, appctx.Attempt{}, changed)
}

// CopyContext copies a stored revision into the new context of a rollback and returns
// the plan of the copy.
// A DIG with a rollout strategy rolls back stage by stage, as it updates: the copy's
// clusters are laid out in the strategy's stages as they are now.
func (a *Activities) CopyContext(ctx context.Context, in lifecycle.CopyInput) (lifecycle.Plan, error) {
	h, err := a.Contexts.Get(ctx, in.To)
	if err != nil {
		return lifecycle.Plan{}, err
	}
	perBatch := a.ClustersPerBatch
	if perBatch <= 0 {
		perBatch = placement.DefaultClustersPerBatch
	}
	return a.Contexts.Copy(ctx, in.From, in.To, func(ctx context.Context, clusters []string) (*rollout.Plan, map[string]int, error) {
		return placement.Stages(ctx, a.Store, h.DIG, clusters, perBatch)
	})
}
