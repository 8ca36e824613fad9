// Package work holds the steps of a rollout preview (features/preview/flow): a scratch
// context made as the DIG's next operation would make its context, the choice of the
// controllers a preview may run, the per-cluster difference from the running revision,
// and the scratch context's deletion. Rendering, placement and the controllers are the
// operations' own activities. Nothing here writes anything but the scratch context.
package work

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"slices"

	"go.temporal.io/sdk/temporal"

	"github.com/temco/temco/controllers"
	"github.com/temco/temco/controllers/tac"
	"github.com/temco/temco/features/preview/flow"
	"github.com/temco/temco/internal/core/appctx"
	"github.com/temco/temco/internal/core/digstate"
	"github.com/temco/temco/internal/core/lifecycle"
	"github.com/temco/temco/internal/core/model"
	"github.com/temco/temco/internal/core/store"
)

// Activities prepare, compare and delete scratch contexts.
type Activities struct {
	Store    *store.Store
	Contexts *appctx.Store
	Builtin  []controllers.Builtin // the built-in intent controllers (controllers/registry)
}

func refuse(typ, format string, args ...any) error {
	return temporal.NewNonRetryableApplicationError(fmt.Sprintf(format, args...), typ, nil)
}

// runningStatuses are the statuses of a context whose operation runs.
var runningStatuses = []string{lifecycle.StatusInstantiating, lifecycle.StatusUpdating, lifecycle.StatusTerminating}

// operationFor is the operation a preview shows (flow.Preview), its refusals typed
// for the api: 409, or 400 for a revision that is not there.
func operationFor(dig lifecycle.Target, info lifecycle.StateInfo, revision int64) (flow.PreviewStart, error) {
	start, err := flow.Preview(dig, info, revision)
	var r *flow.PreviewRefused
	switch {
	case errors.As(err, &r) && r.BadRevision:
		return start, refuse(lifecycle.ErrInvalidInput, "%s", r.Message)
	case err != nil:
		return start, refuse(lifecycle.ErrInvalidState, "%v", err)
	}
	return start, nil
}

// BeginPreview works out the operation to preview from the DIG's state and creates the
// scratch context's header as that operation would (its instance, namespace and
// credentials), marked as a preview's. It records nothing in the DIG's history.
func (a *Activities) BeginPreview(ctx context.Context, in flow.PreviewInput) (flow.PreviewStart, error) {
	if h, err := a.Contexts.Get(ctx, in.ContextID); err == nil && h.Op != flow.OpPreview {
		return flow.PreviewStart{}, refuse(lifecycle.ErrInvalidInput, "context %s exists and is not a preview's", in.ContextID)
	} else if err != nil && !errors.Is(err, appctx.ErrNotFound) {
		return flow.PreviewStart{}, err
	}
	d, info, err := digstate.Load(ctx, a.Store, in.DIG.ID())
	if store.CodeOf(err) == store.ErrNotFound {
		return flow.PreviewStart{}, refuse(lifecycle.ErrInvalidState, "%s no longer exists", in.DIG)
	}
	if err != nil {
		return flow.PreviewStart{}, err
	}
	start, err := operationFor(in.DIG, info, in.Revision)
	if err != nil {
		return start, err
	}
	scratch := &appctx.Context{ID: in.ContextID, DIG: in.DIG.ID(), Instance: in.ContextID, Revision: start.Revision,
		Op: flow.OpPreview, Status: flow.StatusPreview}
	if start.Previous != "" {
		prev, err := a.Contexts.Get(ctx, start.Previous)
		if err != nil {
			return start, err
		}
		if slices.Contains(runningStatuses, prev.Status) {
			return start, refuse(lifecycle.ErrBusy, "%s has an operation running (its context %s is %s): preview once it has ended",
				in.DIG, prev.ID, prev.Status)
		}
		scratch.Instance, scratch.Namespace, scratch.Credentials = prev.Instance, prev.Namespace, prev.Credentials
	} else if scratch.Namespace, scratch.Credentials, err = a.scope(ctx, in.DIG, d); err != nil {
		return start, err
	}
	return start, a.Contexts.Create(ctx, scratch)
}

// scope is where an instantiate of the DIG (its document d) deploys: its logical cloud's
// namespace, and the cloud whose issued credentials it uses ("" for an admin cloud).
func (a *Activities) scope(ctx context.Context, dig lifecycle.Target, d *store.Doc) (namespace, creds string, err error) {
	spec, err := model.Decode[model.DIGSpec](d.Body)
	if err != nil {
		return "", "", err
	}
	cloudID := lifecycle.LogicalCloudID(dig.Project, spec.Spec.LogicalCloud)
	cd, err := a.Store.Get(ctx, cloudID)
	if store.CodeOf(err) == store.ErrNotFound {
		return "", "", refuse(lifecycle.ErrInvalidState, "%s names logical cloud %s, which does not exist", dig, cloudID)
	}
	if err != nil {
		return "", "", err
	}
	lc, err := model.Decode[model.LogicalCloudSpec](cd.Body)
	if err != nil {
		return "", "", err
	}
	if lc.Spec.Level != model.LevelAdmin {
		creds = cloudID
	}
	return cmp.Or(lc.Spec.Namespace, "default"), creds, nil
}

// PreviewControllers chooses the controllers a preview runs: the built-in ones, which only
// edit the context, except tac, whose Run instantiates its worker DIGs and asks for hook
// workflows (neither changes what the DIG deploys, so it is left out and said so). An
// external controller's code is not temco's to vouch for: a DIG naming one is refused.
func (a *Activities) PreviewControllers(ctx context.Context, ctrls []lifecycle.Controller) (flow.PreviewChoice, error) {
	var out flow.PreviewChoice
	for step, c := range ctrls {
		if c.TaskQueue != "" {
			return out, refuse(lifecycle.ErrInvalidState, "controller %q runs in an external worker (task queue %q): a preview runs no code outside temco, so this DIG cannot be previewed",
				c.Name, c.TaskQueue)
		}
		d, err := a.Store.Get(ctx, lifecycle.RegistrationID(c.Name, c.Parent))
		if store.CodeOf(err) == store.ErrNotFound {
			return out, refuse(lifecycle.ErrInvalidInput, "controller %q is not registered (%s)", c.Name, lifecycle.RegistrationID(c.Name, c.Parent))
		}
		if err != nil {
			return out, err
		}
		sp, err := model.Decode[model.ControllerSpec](d.Body)
		if err != nil {
			return out, err
		}
		b, ok := controllers.Lookup(a.Builtin, c.Parent, c.Name, sp.Spec.Host)
		if !ok {
			return out, refuse(lifecycle.ErrInvalidInput, "controller %q (%s) is not built into temco and its registration names no taskQueue of an external controller worker",
				c.Name, lifecycle.RegistrationID(c.Name, c.Parent))
		}
		if b.Name == tac.Controller.Name {
			out.Notes = append(out.Notes, fmt.Sprintf("controller %q (tac) was not run: its hooks and worker DIGs run only in the operation itself, and change no object of this DIG", c.Name))
			continue
		}
		out.Run = append(out.Run, flow.PreviewStep{Step: step, Controller: c})
	}
	return out, nil
}

// DiffPreview compares the scratch context with the running one on every cluster and
// lays the result out in the plan's stages (one stage, "all", without a strategy).
func (a *Activities) DiffPreview(ctx context.Context, in flow.PreviewDiffInput) (flow.RolloutPreview, error) {
	next, err := a.load(ctx, in.ContextID)
	if err != nil {
		return flow.RolloutPreview{}, err
	}
	prev := &revision{byCluster: map[string][]*appctx.ClusterApp{}}
	if in.Start.Previous != "" {
		if prev, err = a.load(ctx, in.Start.Previous); err != nil {
			return flow.RolloutPreview{}, err
		}
	}
	var stages []stage
	strategy := ""
	if r := in.Plan.Rollout; r != nil {
		strategy = r.Strategy
		for _, st := range r.Stages {
			names, _, err := a.Contexts.StageClusters(ctx, in.ContextID, st.FirstBatch, st.Batches, math.MaxInt)
			if err != nil {
				return flow.RolloutPreview{}, err
			}
			stages = append(stages, stage{name: st.Name, clusters: names})
		}
	} else {
		names, _, err := a.Contexts.StageClusters(ctx, in.ContextID, 0, in.Plan.Batches, math.MaxInt)
		if err != nil {
			return flow.RolloutPreview{}, err
		}
		stages = []stage{{name: flow.PreviewAllStage, clusters: names}}
	}
	var dropped []string
	for cl := range prev.byCluster {
		if next.byCluster[cl] == nil {
			dropped = append(dropped, cl)
		}
	}
	slices.Sort(dropped)
	sc := newScope(next.header.Namespace, next.apps)
	for _, placed := range prev.byCluster {
		sc.learn(side{placed: placed})
	}
	out := flow.RolloutPreview{Op: in.Start.Op, CurrentRevision: in.Start.Current, Revision: in.Start.Revision,
		Strategy: strategy, Limit: in.Limit}
	out.Stages, out.Totals = summarize(stages, dropped, in.Limit, func(cl string) flow.ClusterPreview {
		return diffCluster(cl, next.side(cl), prev.side(cl), sc)
	})
	return out, nil
}

// revision is a context's rendered apps and its placements by cluster.
type revision struct {
	header    *appctx.Context
	apps      map[string]*appctx.App
	byCluster map[string][]*appctx.ClusterApp
}

func (a *Activities) load(ctx context.Context, ctxID string) (*revision, error) {
	h, err := a.Contexts.Get(ctx, ctxID)
	if err != nil {
		return nil, err
	}
	apps, err := a.Contexts.Apps(ctx, h)
	if err != nil {
		return nil, err
	}
	placed, err := a.Contexts.Placements(ctx, ctxID, appctx.Filter{})
	if err != nil {
		return nil, err
	}
	r := &revision{header: h, apps: apps, byCluster: map[string][]*appctx.ClusterApp{}}
	for _, p := range placed {
		r.byCluster[p.Cluster] = append(r.byCluster[p.Cluster], p)
	}
	return r, nil
}

// side is the revision on one cluster, with the objects that cluster gets.
func (r *revision) side(cluster string) side {
	placed := r.byCluster[cluster]
	return side{placed: placed, apps: appctx.ForCluster(r.apps, placed)}
}

// DeletePreview deletes a preview's scratch context and everything in it. It deletes no
// other context: a header that is not a preview's is refused.
func (a *Activities) DeletePreview(ctx context.Context, ctxID string) error {
	h, err := a.Contexts.Get(ctx, ctxID)
	switch {
	case errors.Is(err, appctx.ErrNotFound): // never created, or deleted by an earlier attempt: its documents may remain
	case err != nil:
		return err
	case h.Op != flow.OpPreview:
		return refuse(lifecycle.ErrInvalidInput, "context %s is not a preview's: it is not deleted", ctxID)
	}
	return a.Contexts.DeleteContext(ctx, ctxID)
}
