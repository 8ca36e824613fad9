package sfc

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/temco/temco/contract"
)

// podLabels is where each kind of workload keeps the labels of its pods: the kinds EMCO
// labels (any other kind has no pods to label).
var podLabels = map[string][]string{
	"Deployment":            {"spec", "template", "metadata", "labels"},
	"DaemonSet":             {"spec", "template", "metadata", "labels"},
	"StatefulSet":           {"spec", "template", "metadata", "labels"},
	"ReplicaSet":            {"spec", "template", "metadata", "labels"},
	"ReplicationController": {"spec", "template", "metadata", "labels"},
	"Job":                   {"spec", "template", "metadata", "labels"},
	"CronJob":               {"spec", "jobTemplate", "spec", "template", "metadata", "labels"},
	"Pod":                   {"metadata", "labels"},
}

// CheckWorkloadKind refuses a kind whose objects have no pods to label.
func CheckWorkloadKind(field, kind string) error {
	if _, ok := podLabels[kind]; !ok {
		return fmt.Errorf("%s %q is not a kind of workload whose pods can be labelled: use one of %s",
			field, kind, strings.Join(slices.Sorted(maps.Keys(podLabels)), ", "))
	}
	return nil
}

// Workload is an app's workload as a link or sfc client names it.
type Workload struct {
	App, Kind, Name string
}

func (w Workload) String() string { return fmt.Sprintf("%s %q of app %q", w.Kind, w.Name, w.App) }

// CheckPodLabels checks, on one cluster whose objects are objs, that the workload is there
// and that labels keep its pods selected by its own selector (the API server refuses a
// pod template its selector does not match).
func CheckPodLabels(w Workload, cluster string, objs []contract.Resource, labels map[string]string) error {
	i := slices.IndexFunc(objs, func(o contract.Resource) bool { return o.Kind == w.Kind && o.Name == w.Name })
	if i < 0 {
		return fmt.Errorf("%s is not on cluster %s", w, cluster)
	}
	var obj struct {
		Spec struct {
			Selector json.RawMessage `json:"selector"`
		} `json:"spec"`
	}
	if err := json.Unmarshal(objs[i].Manifest, &obj); err != nil {
		return fmt.Errorf("%s on cluster %s cannot be read: %v", w, cluster, err)
	}
	selector := map[string]string{}
	if len(obj.Spec.Selector) > 0 && w.Kind != "Job" && w.Kind != "Pod" && w.Kind != "CronJob" {
		if w.Kind == "ReplicationController" { // a plain map
			_ = json.Unmarshal(obj.Spec.Selector, &selector)
		} else {
			var ls struct {
				MatchLabels map[string]string `json:"matchLabels"`
			}
			_ = json.Unmarshal(obj.Spec.Selector, &ls)
			selector = ls.MatchLabels
		}
	}
	for _, k := range slices.Sorted(maps.Keys(labels)) {
		if v, ok := selector[k]; ok && v != labels[k] {
			return fmt.Errorf("label %s=%s would make the pods of %s on cluster %s leave its selector (%s=%s)",
				k, labels[k], w, cluster, k, v)
		}
	}
	return nil
}

// LabelPods is the edit adding labels to the workload's pod template (to a Pod's own
// labels) on clusters (nil: all the app's), creating the labels where there are none.
func LabelPods(w Workload, clusters []string, labels map[string]string) (contract.Edit, error) {
	path, ok := podLabels[w.Kind]
	if !ok {
		return contract.Edit{}, CheckWorkloadKind("resource type", w.Kind)
	}
	var patch any = labels
	for i := len(path) - 1; i >= 0; i-- {
		patch = map[string]any{path[i]: patch}
	}
	data, err := json.Marshal(patch)
	if err != nil {
		return contract.Edit{}, err
	}
	return contract.Edit{Op: contract.EditPatch, App: w.App, Clusters: clusters, Kind: w.Kind, Name: w.Name,
		Type: contract.PatchMerge, Data: data}, nil
}
