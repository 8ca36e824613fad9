// Package work holds the activities of the Relocate workflow (features/relocate/flow):
// where an app runs, its placement intent rewritten (the DIG then updated with
// activities/operation's UpdateDIG), and the wait until the app is Ready on a cluster.
package work

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/temco/temco/features/relocate/flow"
	"github.com/temco/temco/internal/core/appctx"
	"github.com/temco/temco/internal/core/digstate"
	"github.com/temco/temco/internal/core/lifecycle"
	"github.com/temco/temco/internal/core/model"
	"github.com/temco/temco/internal/core/store"
	"github.com/temco/temco/starter"
)

// Activities move apps between clusters.
type Activities struct {
	Store    *store.Store
	Contexts *appctx.Store
	Ops      *starter.Starter
}

func permanent(typ, format string, args ...any) error {
	return temporal.NewNonRetryableApplicationError(fmt.Sprintf(format, args...), typ, nil)
}

// PlanRelocation checks that the DIG is instantiated (its running context too), that the
// app is one of it and the new cluster registered and reachable by temco, and answers the
// clusters the app runs on.
func (a *Activities) PlanRelocation(ctx context.Context, req flow.RelocateRequest) (flow.RelocationPlan, error) {
	ctxID, err := a.running(ctx, req.DIG)
	if err != nil {
		return flow.RelocationPlan{}, err
	}
	cl, err := a.Store.Get(ctx, lifecycle.ClusterID(req.To))
	if store.CodeOf(err) == store.ErrNotFound {
		return flow.RelocationPlan{}, permanent(lifecycle.ErrInvalidInput, "cluster %s is not registered", req.To)
	}
	if err != nil {
		return flow.RelocationPlan{}, err
	}
	if spec, err := model.Decode[model.ClusterSpec](cl.Body); err == nil && spec.Spec.IsGitOps() {
		return flow.RelocationPlan{}, permanent(lifecycle.ErrInvalidInput, "cluster %s is reached through GitOps; relocate moves apps only to clusters temco reaches with a kubeconfig (it checks the app ready there before leaving the old cluster)", req.To)
	}
	placed, err := a.Contexts.Placements(ctx, ctxID, appctx.Filter{Apps: []string{req.App}})
	if err != nil {
		return flow.RelocationPlan{}, err
	}
	plan := flow.RelocationPlan{ContextID: ctxID}
	for _, p := range placed {
		plan.Clusters = append(plan.Clusters, p.Cluster)
	}
	if len(plan.Clusters) == 0 {
		return plan, permanent(lifecycle.ErrInvalidInput, "%s has no app %q in its running context %s", req.DIG, req.App, ctxID)
	}
	slices.Sort(plan.Clusters)
	return plan, nil
}

// running returns the running context of an instantiated DIG whose last operation
// succeeded; anything else is refused.
func (a *Activities) running(ctx context.Context, dig lifecycle.Target) (string, error) {
	_, info, err := digstate.Load(ctx, a.Store, dig.ID())
	if store.CodeOf(err) == store.ErrNotFound {
		return "", permanent(lifecycle.ErrInvalidInput, "%s does not exist", dig)
	}
	if err != nil {
		return "", err
	}
	if info.Current() != lifecycle.StateInstantiated {
		return "", permanent(lifecycle.ErrInvalidState, "%s is %s: relocate needs it Instantiated", dig, info.Current())
	}
	c, err := a.Contexts.Get(ctx, info.ContextID())
	if err != nil {
		return "", err
	}
	if c.Status != lifecycle.StatusInstantiated {
		return "", permanent(lifecycle.ErrInvalidState, "%s's running context %s is %s: relocate needs it Instantiated", dig, c.ID, c.Status)
	}
	return c.ID, nil
}

// PlaceApp rewrites the app's placement intent to place it on exactly in.Clusters, by
// name. An app with several app intents is refused: which one to rewrite would be a guess.
func (a *Activities) PlaceApp(ctx context.Context, in flow.PlaceAppInput) error {
	gpi, err := a.placementIntent(ctx, in.DIG)
	if err != nil {
		return err
	}
	docs, err := a.Store.List(ctx, store.Query{Parent: gpi, Kind: model.KindAppIntent, Full: true})
	if err != nil {
		return err
	}
	var mine []*store.Doc
	var intent model.Resource[model.AppIntentSpec]
	for _, d := range docs {
		r, err := model.Decode[model.AppIntentSpec](d.Body)
		if err != nil {
			return err
		}
		if r.Spec.App == in.App {
			mine, intent = append(mine, d), r
		}
	}
	if len(mine) != 1 {
		return permanent(lifecycle.ErrInvalidInput, "app %q has %d app intents in %s: relocate rewrites exactly one", in.App, len(mine), gpi)
	}
	intent.Spec.Intent = model.PlacementIntent{}
	for _, c := range in.Clusters {
		p, name := lifecycle.SplitClusterKey(c)
		intent.Spec.Intent.AllOf = append(intent.Spec.Intent.AllOf, model.AllOf{ClusterMatch: model.ClusterMatch{ClusterProvider: p, Cluster: name}})
	}
	body, err := json.Marshal(intent)
	if err != nil {
		return err
	}
	d := mine[0]
	if d.Body == string(body) {
		return nil // an earlier attempt wrote it
	}
	d.Body = string(body)
	return a.Store.Update(ctx, d) // a conflict is retried, on the intent as it is then
}

// placementIntent is the _id of the DIG's generic placement intent.
func (a *Activities) placementIntent(ctx context.Context, dig lifecycle.Target) (string, error) {
	docs, err := a.Store.List(ctx, store.Query{Parent: dig.ID(), Kind: model.KindDIGIntent, Full: true})
	if err != nil {
		return "", err
	}
	for _, d := range docs {
		r, err := model.Decode[model.DIGIntentSpec](d.Body)
		if err != nil {
			return "", err
		}
		if gpi := r.Spec.Intent[model.GenericPlacementIntentKey]; gpi != "" {
			return dig.ID() + "/generic-placement-intents/" + gpi, nil
		}
	}
	return "", permanent(lifecycle.ErrInvalidInput, "no intents of %s name a %s", dig, model.GenericPlacementIntentKey)
}

// readyEvery is the pause between two reads of the app's objects on the cluster.
const readyEvery = 2 * time.Second

// AwaitAppReady reads the context's objects on the live clusters (the DIG's status read)
// until every object of the app on the cluster is present and Ready, for at most
// in.Timeout; then it fails, naming what is not Ready.
func (a *Activities) AwaitAppReady(ctx context.Context, in flow.AwaitAppReadyInput) error {
	deadline := time.Now().Add(in.Timeout)
	for {
		activity.RecordHeartbeat(ctx, nil)
		if _, err := a.Ops.Readiness(ctx, in.DIG, in.ContextID); err != nil {
			return err
		}
		pending, err := a.notReady(ctx, in)
		if err != nil || len(pending) == 0 {
			return err
		}
		if time.Now().After(deadline) {
			return permanent(flow.ErrNotReady, "%s is not Ready on %s after %s: %s", in.App, in.Cluster, in.Timeout, strings.Join(pending, ", "))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(readyEvery):
		}
	}
}

// notReady lists the app's objects on the cluster that the last read did not find Ready.
func (a *Activities) notReady(ctx context.Context, in flow.AwaitAppReadyInput) ([]string, error) {
	placed, err := a.Contexts.Placements(ctx, in.ContextID, appctx.Filter{Apps: []string{in.App}, Clusters: []string{in.Cluster}})
	if err != nil {
		return nil, err
	}
	if len(placed) == 0 {
		return nil, permanent(lifecycle.ErrInvalidState, "context %s does not place %s on %s", in.ContextID, in.App, in.Cluster)
	}
	var out []string
	for _, p := range placed {
		for i, r := range p.Resources {
			if i >= len(p.Live) || p.Live[i].State != appctx.LivePresent {
				out = append(out, r.Ref.String()+" not present")
			} else if !p.Live[i].Ready {
				out = append(out, r.Ref.String()+" not Ready")
			}
		}
	}
	return out, nil
}
