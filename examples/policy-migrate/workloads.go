package main

import (
	"context"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
)

// deploymentID is the label temco (as EMCO) puts on every object it applies:
// "<context>-<app>", the context being the DIG instance's.
const deploymentID = "emco/deployment-id"

// workload is one Deployment temco applied, and the context and app it belongs to.
type workload struct {
	namespace, name string
	contextID, app  string
}

var deployments = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}

// workloadsOn lists the labelled Deployments of the cluster, in every namespace. EMCO's
// collector lists labelled pods; temco labels the objects it applies, not their pods.
func workloadsOn(kube dynamic.Interface) func(context.Context) ([]workload, error) {
	return func(ctx context.Context) ([]workload, error) {
		list, err := kube.Resource(deployments).List(ctx, metav1.ListOptions{LabelSelector: deploymentID})
		if err != nil {
			return nil, err
		}
		var out []workload
		for _, d := range list.Items {
			// The context id is a number: the app is what follows its first "-".
			ctxID, app, ok := strings.Cut(d.GetLabels()[deploymentID], "-")
			if ok && ctxID != "" && app != "" {
				out = append(out, workload{namespace: d.GetNamespace(), name: d.GetName(), contextID: ctxID, app: app})
			}
		}
		return out, nil
	}
}
