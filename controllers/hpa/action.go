package hpa

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/temco/temco/contract"
)

// action is hpa-ac: it writes the hpa intents into the consumers' Deployments (replicas,
// a nodeSelector per label, requests and limits per resource), so that the clusters'
// schedulers put the pods on the nodes hpa-plc counted on.
type action struct {
	intents intentSource
}

func (a *action) Run(ctx context.Context, c contract.Context) error {
	apps, intents, err := load(ctx, a.intents, c)
	if err != nil || intents == nil {
		return err
	}
	for _, app := range apps {
		if len(intents[app.Name]) == 0 || len(app.Clusters) == 0 {
			continue
		}
		objs, err := c.Resources(ctx, app.Name, "")
		if err != nil {
			return err
		}
		for _, it := range intents[app.Name] {
			for _, cs := range it.Consumers {
				e, err := consumerPatch(app.Name, it, cs, objs)
				if err != nil {
					return err
				}
				if e == nil {
					continue
				}
				if err := c.Edit(*e); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// consumerPatch is the strategic merge patch of a consumer's Deployment (nil when the
// consumer asks for nothing). It merges into the named container by name, keeping the
// container's other requests and limits and the pod's other node selectors.
func consumerPatch(app string, it intent, cs consumer, objs []contract.Resource) (*contract.Edit, error) {
	if cs.Spec.Replicas <= 0 && len(cs.Requirements) == 0 {
		return nil, nil
	}
	dep, err := findDeployment(app, cs.Spec.Name, objs)
	if err != nil {
		return nil, contract.Refuse("%s: %v", cs.where(it), err)
	}
	spec := map[string]any{}
	if cs.Spec.Replicas > 0 {
		spec["replicas"] = cs.Spec.Replicas
	}
	selector := map[string]string{}
	requests, limits := map[string]resource.Quantity{}, map[string]resource.Quantity{}
	requirementOf := map[string]string{} // resource name -> requirement name, for messages
	for _, r := range cs.Requirements {
		res := r.Spec.Resource
		if !r.Spec.IsAllocatable() {
			selector[res.Key] = res.Value
			continue
		}
		requests[res.Name] = quantity(res.Name, res.Requests)
		requirementOf[res.Name] = r.Name
		if res.Limits > 0 {
			limits[res.Name] = quantity(res.Name, res.Limits)
		}
	}
	pod := map[string]any{}
	if len(selector) > 0 {
		pod["nodeSelector"] = selector
	}
	if len(requests) > 0 {
		ctr, err := findContainer(dep, cs.Spec.Container)
		if err != nil {
			return nil, contract.Refuse("%s: %v", cs.where(it), err)
		}
		if err := checkLimits(ctr, requests, limits, requirementOf); err != nil {
			return nil, contract.Refuse("%s: %v", cs.where(it), err)
		}
		resources := map[string]any{"requests": requests}
		if len(limits) > 0 {
			resources["limits"] = limits
		}
		pod["containers"] = []any{map[string]any{"name": cs.Spec.Container, "resources": resources}}
	}
	if len(pod) > 0 {
		spec["template"] = map[string]any{"spec": pod}
	}
	data, err := json.Marshal(map[string]any{"spec": spec})
	if err != nil {
		return nil, err
	}
	return &contract.Edit{Op: contract.EditPatch, App: app, Kind: "Deployment", Name: cs.Spec.Name,
		Type: contract.PatchStrategic, Data: data}, nil
}

func findDeployment(app, name string, objs []contract.Resource) (*appsv1.Deployment, error) {
	for _, o := range objs {
		if o.Kind != "Deployment" || o.Name != name {
			continue
		}
		dep := &appsv1.Deployment{}
		if err := json.Unmarshal(o.Manifest, dep); err != nil {
			return nil, fmt.Errorf("Deployment %q of app %q cannot be read: %v", name, app, err)
		}
		return dep, nil
	}
	return nil, fmt.Errorf("app %q has no Deployment %q", app, name)
}

func findContainer(dep *appsv1.Deployment, name string) (*corev1.Container, error) {
	cs := dep.Spec.Template.Spec.Containers
	for i := range cs {
		if cs[i].Name == name {
			return &cs[i], nil
		}
	}
	names := make([]string, len(cs))
	for i, c := range cs {
		names[i] = c.Name
	}
	return nil, fmt.Errorf("Deployment %q has no container %q (its containers: %v)", dep.Name, name, names)
}

// checkLimits refuses what the API server would reject only once the Deployment is
// applied: a request above a limit the container keeps, and a request of a resource
// Kubernetes does not overcommit (extended resources such as GPUs, hugepages) whose limit
// is missing or differs from it. EMCO writes these as they are and the apply fails.
func checkLimits(ctr *corev1.Container, requests, limits map[string]resource.Quantity, requirementOf map[string]string) error {
	for _, r := range slices.Sorted(maps.Keys(requests)) {
		req := requests[r]
		lim, fromRequirement := limits[r]
		kept, inContainer := ctr.Resources.Limits[corev1.ResourceName(r)]
		if !fromRequirement {
			lim = kept
		}
		which := fmt.Sprintf("resource requirement %q", requirementOf[r])
		switch {
		case !overcommitAllowed(r) && !fromRequirement && !inContainer:
			return fmt.Errorf("%s requests %s %s without limits, which Kubernetes requires of a resource it does not overcommit: give it limits %s",
				which, req.String(), r, req.String())
		case !overcommitAllowed(r) && req.Cmp(lim) != 0 && fromRequirement:
			return fmt.Errorf("%s requests %s %s with limits %s; Kubernetes does not overcommit %s: its limits must equal its requests",
				which, req.String(), r, lim.String(), r)
		case !overcommitAllowed(r) && req.Cmp(lim) != 0:
			return fmt.Errorf("%s requests %s %s, but container %q limits it to %s; Kubernetes does not overcommit %s: give the requirement limits %s",
				which, req.String(), r, ctr.Name, lim.String(), r, req.String())
		case !fromRequirement && inContainer && req.Cmp(lim) > 0:
			return fmt.Errorf("container %q limits %s to %s, below the requested %s: give the requirement limits too", ctr.Name, r, lim.String(), req.String())
		}
	}
	return nil
}

// overcommitAllowed is Kubernetes' rule (helper.IsOvercommitAllowed): native resources
// (no domain, or a kubernetes.io domain) other than hugepages may have requests below
// their limits; everything else must request exactly its limit.
func overcommitAllowed(name string) bool {
	native := !strings.Contains(name, "/") || strings.Contains(name, corev1.ResourceDefaultNamespacePrefix)
	return native && !strings.HasPrefix(name, corev1.ResourceHugePagesPrefix)
}
