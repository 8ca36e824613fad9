// Package detect is a drift check's comparison of one cluster: it reads the live objects
// a context applied there (one LIST per collection) and compares each with what was
// applied (internal/core/drift). The worker's DetectDrift (features/drift/work) runs it on
// the clusters temco reaches, temco agent (edgeagent) on its own cluster: one comparison
// for both. It holds no Temporal workflow code, so the agent's binary carries none of the
// drift check's.
package detect

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/temco/temco/activities/cluster"
	"github.com/temco/temco/internal/core/appctx"
	"github.com/temco/temco/internal/core/drift"
	"github.com/temco/temco/internal/core/lifecycle"
)

// Applied counts the objects the context has applied on a cluster: those a check compares.
func Applied(placements []*appctx.ClusterApp) int {
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

// Cluster reads the cluster's live objects and compares them with the applied ones (the
// placements' objects whose status is Applied; apps are the rendered apps as the cluster
// gets them, index-aligned with the placements' resources), adding what differs to rec
// (Objects, InSync, Requests). It costs one LIST per API resource and namespace the
// cluster's objects are in (selected by their emco/deployment-id labels; a page per
// listPage objects), plus one GET per object whose manifest has no such label — never
// one request per object.
func Cluster(ctx context.Context, api *cluster.API, placements []*appctx.ClusterApp, apps map[string]*appctx.App,
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
