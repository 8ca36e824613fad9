// Package work holds the autoscaler's per-cluster activities (features/autoscale/flow):
// the reading of a cluster's signals for a DIG's workloads, and the drain of their HPAs.
// Clusters are reached as activities/cluster reaches them (cluster.Access), with the DIG's
// running context's credentials.
package work

import (
	"cmp"
	"context"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/temco/temco/activities/cluster"
	"github.com/temco/temco/features/autoscale/flow"
	"github.com/temco/temco/internal/core/appctx"
	"github.com/temco/temco/internal/core/capacity"
)

// Activities read and drain clusters for the autoscaler.
type Activities struct {
	Clusters cluster.Access
}

// FieldManager owns the maximum a drain lowers (server-side apply): an update, or a
// restore, applies temco's own back, forced.
const FieldManager = "temco-autoscaler"

// readTimeout bounds a cluster's reads: one that takes longer is unreachable for this
// evaluation.
const readTimeout = 10 * time.Second

var (
	deployments = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
	hpas        = schema.GroupVersionResource{Group: "autoscaling", Version: "v2", Resource: "horizontalpodautoscalers"}
	pods        = schema.GroupVersionResource{Version: "v1", Resource: "pods"}
)

// CapacitySignals reads the workloads' Deployments, HPAs and pods on the cluster. A
// cluster that cannot be read answers Reachable false with the reason; only a context
// that cannot be read is an error.
func (a *Activities) CapacitySignals(ctx context.Context, in flow.CapacitySignalsInput) (capacity.Signals, error) {
	header, _, err := a.Clusters.Context(ctx, in.ContextID)
	if err != nil {
		return capacity.Signals{}, err
	}
	api, err := a.Clusters.API(ctx, in.Cluster, header)
	if err != nil || api == nil {
		return unreachable(err, in.Cluster), nil
	}
	rctx, cancel := context.WithTimeout(ctx, readTimeout)
	defer cancel()
	var observed []capacity.Observed
	for _, w := range in.Workloads {
		o, err := observe(rctx, api, w)
		if err != nil {
			return unreachable(err, in.Cluster), nil
		}
		observed = append(observed, o)
	}
	return capacity.SignalsOf(observed, in.Floor), nil
}

// DrainCapacity lowers the maximum of the workloads' HPAs on the cluster to in.Floor (and
// their minimum, where it is higher), or with in.Restore applies the context's own HPAs
// back. An HPA the cluster does not have is left alone.
func (a *Activities) DrainCapacity(ctx context.Context, in flow.CapacityDrainInput) error {
	header, own, err := a.Clusters.Context(ctx, in.ContextID)
	if err != nil {
		return err
	}
	api, err := a.Clusters.API(ctx, in.Cluster, header)
	if err != nil || api == nil {
		return cmp.Or(err, fmt.Errorf("%s is reached through git: temco does not drain it", in.Cluster))
	}
	for _, w := range in.Workloads {
		if w.HPA == "" {
			continue
		}
		ns := cmp.Or(w.Namespace, api.Namespace())
		live, err := api.Resource(hpas).Namespace(ns).Get(ctx, w.HPA, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return err
		}
		if in.Restore {
			if obj := hpaOf(own[w.App], w.HPA); obj != nil {
				if err := api.Apply(ctx, obj); err != nil {
					return err
				}
			}
			continue
		}
		if err := drain(ctx, api, ns, live, int64(in.Floor)); err != nil {
			return err
		}
	}
	return nil
}

func drain(ctx context.Context, api *cluster.API, ns string, live *unstructured.Unstructured, floor int64) error {
	spec := map[string]any{"maxReplicas": floor}
	if m, ok, _ := unstructured.NestedInt64(live.Object, "spec", "minReplicas"); ok && m > floor {
		spec["minReplicas"] = floor // a maximum below the minimum is refused
	}
	patch := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
		"metadata": map[string]any{"name": live.GetName(), "namespace": ns},
		"spec":     spec,
	}}
	_, err := api.Resource(hpas).Namespace(ns).Apply(ctx, live.GetName(), patch, metav1.ApplyOptions{FieldManager: FieldManager, Force: true})
	return err
}

// hpaOf is the app's HPA named name, as the context has it.
func hpaOf(app *appctx.App, name string) *appctx.Object {
	if app == nil {
		return nil
	}
	for i, o := range app.Objects {
		if o.Kind == "HorizontalPodAutoscaler" && o.Name == name {
			return &app.Objects[i]
		}
	}
	return nil
}

func unreachable(err error, key string) capacity.Signals {
	if err == nil {
		err = fmt.Errorf("%s is reached through git: temco cannot read its signals", key)
	}
	return capacity.Signals{Error: err.Error()}
}

// observe reads one workload: its Deployment, its HPA and the Deployment's pods.
func observe(ctx context.Context, api *cluster.API, w capacity.Workload) (capacity.Observed, error) {
	ns := cmp.Or(w.Namespace, api.Namespace())
	var o capacity.Observed
	dep, err := get[appsv1.Deployment](ctx, api, deployments, ns, w.Deployment)
	if err != nil {
		return o, err
	}
	o.Deployment = dep
	if w.HPA != "" {
		if o.HPA, err = get[autoscalingv2.HorizontalPodAutoscaler](ctx, api, hpas, ns, w.HPA); err != nil {
			return o, err
		}
	}
	if dep == nil || dep.Spec.Selector == nil {
		return o, nil
	}
	sel, err := metav1.LabelSelectorAsSelector(dep.Spec.Selector)
	if err != nil {
		return o, nil // the API server accepted it; nothing to count if it did not mean anything
	}
	list, err := api.Resource(pods).Namespace(ns).List(ctx, metav1.ListOptions{LabelSelector: sel.String()})
	if err != nil {
		return o, err
	}
	for _, item := range list.Items {
		var p corev1.Pod
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(item.Object, &p); err == nil {
			o.Pods = append(o.Pods, p)
		}
	}
	return o, nil
}

// get reads one object as T (nil, no error: not there).
func get[T any](ctx context.Context, api *cluster.API, gvr schema.GroupVersionResource, ns, name string) (*T, error) {
	u, err := api.Resource(gvr).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out T
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &out); err != nil {
		return nil, err
	}
	return &out, nil
}
