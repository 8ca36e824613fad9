// The per-cluster steps of a drift check: a batch's clusters, and DetectDrift, which
// compares what one cluster has with what the context applied there and (correctDrift)
// applies again what drifted. The cluster is reached as activities/cluster reaches it
// (cluster.Access); of an agent cluster, its agent's report is read (agent.go).

package work

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.temporal.io/sdk/temporal"

	"github.com/temco/temco/activities/cluster"
	"github.com/temco/temco/features/drift/detect"
	"github.com/temco/temco/internal/core/appctx"
	"github.com/temco/temco/internal/core/lifecycle"
	"github.com/temco/temco/internal/core/model"
)

// DriftBatchClusters returns the clusters of one batch for a drift check, leaving the
// batch's status counts alone (ListBatch drops them: an apply changes statuses).
func (a *Activities) DriftBatchClusters(ctx context.Context, in lifecycle.BatchInput) ([]string, error) {
	return a.Contexts.BatchClusters(ctx, in.ContextID, in.Batch)
}

// gitOpsNotChecked is why a GitOps cluster's objects are not compared.
const gitOpsNotChecked = "GitOps cluster: its Flux controllers reconcile it from git; temco does not read it"

// DetectDriftGroup is DetectDrift on each cluster of a group (cluster.RunGroup).
func (a *Activities) DetectDriftGroup(ctx context.Context, in lifecycle.GroupInput) (lifecycle.GroupResult, error) {
	return cluster.RunGroup(ctx, in, a.DetectDrift)
}

// DetectDrift compares the objects the context applied on one cluster with the live ones
// and stores the result (appctx.ClusterDrift): per object, deleted or the fields that
// differ. With in.Drift.Correct the drifted objects are applied again, as ApplyCluster
// applies them. A cluster that does not answer is recorded as such, not retried: the next
// check comes soon enough. The comparison is features/drift/detect's, which temco agent
// runs too: on an agent cluster the record is its agent's last report (fromAgent). The
// result counts objects: Done in sync, Failed drifted, NotReady not compared.
func (a *Activities) DetectDrift(ctx context.Context, in lifecycle.ClusterInput) (_ lifecycle.ClusterResult, err error) {
	defer a.Clusters.Observe(ctx, in, "drift", time.Now(), &err)
	if in.Drift == nil {
		return lifecycle.ClusterResult{}, temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("DetectDrift of %s: no drift check named", in.Cluster), lifecycle.ErrInvalidInput, nil)
	}
	header, apps, err := a.Clusters.Context(ctx, in.ContextID)
	if err != nil {
		return lifecycle.ClusterResult{}, err
	}
	placements, err := a.Contexts.PlacedApps(ctx, in.ContextID, in.Cluster)
	if err != nil {
		return lifecycle.ClusterResult{}, err
	}
	apps = appctx.ForCluster(apps, placements)
	appctx.List(placements, apps)
	rec := &appctx.ClusterDrift{Context: in.ContextID, Cluster: in.Cluster, Check: in.Drift.ID, Checked: time.Now().UTC()}
	var res lifecycle.ClusterResult
	api, via, err := a.Clusters.Reach(ctx, in.Cluster, header)
	var appErr *temporal.ApplicationError
	switch {
	case errors.As(err, &appErr) && appErr.NonRetryable():
		rec.Error = appErr.Message()
		res.NotReady = detect.Applied(placements)
	case err != nil:
		return res, err
	case via == model.AccessAgent:
		if res, err = a.fromAgent(ctx, in, placements, rec); err != nil {
			return res, err
		}
	case api == nil:
		rec.Skipped = gitOpsNotChecked
		res.NotReady = detect.Applied(placements)
	default:
		if err := detect.Cluster(ctx, api, placements, apps, rec); err != nil {
			rec.Error, rec.Objects, rec.InSync = err.Error(), nil, 0
			res.NotReady = detect.Applied(placements)
			break
		}
		if in.Drift.Correct && len(rec.Objects) > 0 {
			a.correct(ctx, api, in.ContextID, apps, rec)
		}
		res.Done, res.Failed = rec.InSync, len(rec.Objects)
	}
	return res, a.Contexts.PutClusterDrift(ctx, rec)
}

// correct applies the drifted objects of rec again, each as ApplyCluster applies it
// (server-side apply as temco's field manager, forced), once the context is found still
// running undisturbed: an operation that started since the check began applies what it
// wants itself, and an older revision must not be written over it.
func (a *Activities) correct(ctx context.Context, api *cluster.API, ctxID string, apps map[string]*appctx.App, rec *appctx.ClusterDrift) {
	now, err := a.Contexts.Get(ctx, ctxID)
	if err == nil && now.Status != lifecycle.StatusInstantiated {
		err = fmt.Errorf("the context is %s now: an operation started", now.Status)
	}
	if err != nil {
		for i := range rec.Objects {
			rec.Objects[i].Error = "not corrected: " + err.Error()
		}
		return
	}
	for i := range rec.Objects {
		o := &rec.Objects[i]
		obj := objectOf(apps[o.App], o.Ref)
		if obj == nil || o.Error != "" {
			continue
		}
		err := api.Apply(ctx, obj)
		rec.Requests++
		if err != nil {
			o.Error = "not corrected: " + err.Error()
			continue
		}
		o.Corrected = true
	}
}

// objectOf finds the rendered object of app that ref names (its namespace aside: ref's is
// where it was applied).
func objectOf(app *appctx.App, ref appctx.Ref) *appctx.Object {
	if app == nil {
		return nil
	}
	for i, o := range app.Objects {
		if o.Group == ref.Group && o.Kind == ref.Kind && o.Name == ref.Name && (o.Namespace == "" || o.Namespace == ref.Namespace) {
			return &app.Objects[i]
		}
	}
	return nil
}
