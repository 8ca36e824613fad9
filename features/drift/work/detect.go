// The per-cluster steps of a drift check: a batch's clusters, and DetectDrift, which
// compares what one cluster has with what the context applied there and (correctDrift)
// applies again what drifted. The cluster is reached as activities/cluster reaches it
// (cluster.Access).

package work

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"go.temporal.io/sdk/temporal"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/temco/temco/activities/cluster"
	"github.com/temco/temco/internal/core/appctx"
	"github.com/temco/temco/internal/core/drift"
	"github.com/temco/temco/internal/core/lifecycle"
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
// check comes soon enough. The result counts objects: Done in sync, Failed drifted,
// NotReady not compared.
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
	api, err := a.Clusters.API(ctx, in.Cluster, header)
	var appErr *temporal.ApplicationError
	switch {
	case errors.As(err, &appErr) && appErr.NonRetryable():
		rec.Error = appErr.Message()
		res.NotReady = applied(placements)
	case err != nil:
		return res, err
	case api == nil:
		rec.Skipped = gitOpsNotChecked
		res.NotReady = applied(placements)
	default:
		if err := detect(ctx, api, placements, apps, rec); err != nil {
			rec.Error, rec.Objects, rec.InSync = err.Error(), nil, 0
			res.NotReady = applied(placements)
			break
		}
		if in.Drift.Correct && len(rec.Objects) > 0 {
			a.correct(ctx, api, in.ContextID, apps, rec)
		}
		res.Done, res.Failed = rec.InSync, len(rec.Objects)
	}
	return res, a.Contexts.PutClusterDrift(ctx, rec)
}

// applied counts the objects the context has applied on a cluster.
func applied(placements []*appctx.ClusterApp) int {
	n := 0
	for _, p := range placements {
		for _, r := range p.Resources {
			if r.Status == lifecycle.ResApplied {
				n++
			}
		}
	}
	return n
}

// collection is where a group of objects is listed: one API resource in one namespace.
type collection struct {
	gvr       schema.GroupVersionResource
	namespace string
}

// expected is one applied object a check looks for.
type expected struct {
	app  string
	obj  *appctx.Object
	ref  appctx.Ref // with the namespace it was applied to
	body []byte     // what was applied: the manifest without the fields the cluster does not declare
}

// listPage is how many objects one LIST returns at most.
const listPage = 500

// detect reads the cluster's live objects and compares them with the applied ones. It
// costs one LIST per API resource and namespace the cluster's objects are in (selected by
// their emco/deployment-id labels; a page per listPage objects), plus one GET per object
// whose manifest has no such label — never one request per object.
func detect(ctx context.Context, api *cluster.API, placements []*appctx.ClusterApp, apps map[string]*appctx.App,
	rec *appctx.ClusterDrift) error {
	defaultNS := api.Namespace()
	groups := map[collection][]expected{}
	var order []collection
	for _, p := range placements {
		app := apps[p.App]
		if app == nil {
			continue
		}
		for i, r := range p.Resources {
			if r.Status != lifecycle.ResApplied || i >= len(app.Objects) {
				continue // never applied: nothing to compare (the apply reported why)
			}
			gvr, namespace, err := api.Locate(r.Ref, cmp.Or(r.Namespace, defaultNS))
			if cluster.Permanent(err) { // the kind is no longer served: the object is gone with it
				rec.Objects = append(rec.Objects, appctx.DriftObject{App: p.App, Ref: r.Ref, Missing: true, Error: err.Error()})
				continue
			}
			if err != nil {
				return err
			}
			body, err := api.Declared(ctx, &app.Objects[i])
			if err != nil {
				return err
			}
			ref := r.Ref
			ref.Namespace = namespace
			k := collection{gvr: gvr, namespace: namespace}
			if groups[k] == nil {
				order = append(order, k)
			}
			groups[k] = append(groups[k], expected{app: p.App, obj: &app.Objects[i], ref: ref, body: body})
		}
	}
	for _, k := range order {
		live, err := listLive(ctx, api, k, groups[k], &rec.Requests)
		if err != nil {
			return err
		}
		for _, e := range groups[k] {
			compareObject(rec, e, live[e.ref.Name])
		}
	}
	return nil
}

// listLive reads the live objects of one collection, by name: those labelled as the
// expected objects' manifests are, with one LIST (paged), and each unlabelled one by GET.
func listLive(ctx context.Context, api *cluster.API, k collection, want []expected, requests *int) (map[string]*unstructured.Unstructured, error) {
	ri := api.Resource(k.gvr)
	var rc interface {
		List(context.Context, metav1.ListOptions) (*unstructured.UnstructuredList, error)
		Get(context.Context, string, metav1.GetOptions, ...string) (*unstructured.Unstructured, error)
	} = ri
	if k.namespace != "" {
		rc = ri.Namespace(k.namespace)
	}
	live := map[string]*unstructured.Unstructured{}
	var ids, unlabelled []string
	for _, e := range want {
		if id := deploymentID(e.obj.Manifest); id != "" {
			if !slices.Contains(ids, id) {
				ids = append(ids, id)
			}
		} else {
			unlabelled = append(unlabelled, e.ref.Name)
		}
	}
	if len(ids) > 0 {
		slices.Sort(ids)
		opts := metav1.ListOptions{LabelSelector: lifecycle.DeploymentIDLabel + " in (" + strings.Join(ids, ",") + ")", Limit: listPage}
		for {
			lctx, cancel := context.WithTimeout(ctx, 30*time.Second)
			l, err := rc.List(lctx, opts)
			cancel()
			*requests++
			if err != nil {
				return nil, fmt.Errorf("list %s in %q: %w", k.gvr.Resource, k.namespace, err)
			}
			for i := range l.Items {
				live[l.Items[i].GetName()] = &l.Items[i]
			}
			if opts.Continue = l.GetContinue(); opts.Continue == "" {
				break
			}
		}
	}
	for _, name := range unlabelled {
		gctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		u, err := rc.Get(gctx, name, metav1.GetOptions{})
		cancel()
		*requests++
		switch {
		case apierrors.IsNotFound(err):
		case err != nil:
			return nil, fmt.Errorf("get %s %s in %q: %w", k.gvr.Resource, name, k.namespace, err)
		default:
			live[name] = u
		}
	}
	return live, nil
}

// deploymentID is the emco/deployment-id label a manifest sets ("" if none).
func deploymentID(manifest string) string {
	var m struct {
		Metadata struct {
			Labels map[string]string `json:"labels"`
		} `json:"metadata"`
	}
	if json.Unmarshal([]byte(manifest), &m) != nil {
		return ""
	}
	return m.Metadata.Labels[lifecycle.DeploymentIDLabel]
}

// compareObject records one expected object against what the cluster has of it (nil:
// nothing): in sync, deleted, or the fields that differ.
func compareObject(rec *appctx.ClusterDrift, e expected, live *unstructured.Unstructured) {
	if live == nil {
		rec.Objects = append(rec.Objects, appctx.DriftObject{App: e.app, Ref: e.ref, Missing: true})
		return
	}
	var desired map[string]any
	if err := json.Unmarshal(e.body, &desired); err != nil {
		rec.Objects = append(rec.Objects, appctx.DriftObject{App: e.app, Ref: e.ref, Error: "stored manifest: " + err.Error()})
		return
	}
	if fields := drift.Compare(desired, live.Object); len(fields) > 0 {
		rec.Objects = append(rec.Objects, appctx.DriftObject{App: e.app, Ref: e.ref, Fields: fields})
		return
	}
	rec.InSync++
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
