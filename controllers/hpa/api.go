package hpa

import (
	"context"
	"fmt"
	"math"
	"regexp"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/temco/temco/api"
	"github.com/temco/temco/internal/core/model"
	"github.com/temco/temco/internal/core/store"
)

// Paths and path parameters as EMCO's hpa-plc serves them (parameters spelled as in its
// OpenAPI description).
const (
	intentsPath      = "/hpa-intents"
	consumersPath    = intentsPath + "/:hpaIntentName/hpa-resource-consumers"
	requirementsPath = consumersPath + "/:hpaConsumerName/resource-requirements"
)

// kinds are the REST resources hpa-plc adds under the DIG (hpa-ac reads them too).
var kinds = []api.ResourceKind{
	api.DIGKind(api.KindDef[IntentSpec]{Name: kindIntent, Path: intentsPath, Param: "hpaIntentName", Check: checkIntent}),
	api.DIGKind(api.KindDef[ConsumerSpec]{Name: kindConsumer, Path: consumersPath, Param: "hpaConsumerName", Check: checkConsumer}),
	api.DIGKind(api.KindDef[RequirementSpec]{Name: kindRequirement, Path: requirementsPath, Param: "hpaResourceName", Check: checkRequirement}),
}

func checkIntent(_ context.Context, r *api.Request[IntentSpec]) error {
	sp := r.Resource().Spec
	if err := validateIntent(sp); err != nil {
		return api.BadRequest("%v", err)
	}
	r.Ref(compositeAppOf(r.DIG()) + "/apps/" + sp.App)
	return nil
}

func checkConsumer(ctx context.Context, r *api.Request[ConsumerSpec]) error {
	sp := r.Resource().Spec
	if err := validateConsumer(sp); err != nil {
		return api.BadRequest("%v", err)
	}
	if r.Old() == nil || sp.Container != "" {
		return nil
	}
	// A replace must not take the container away from allocatable requirements.
	reqs, err := r.Store().List(ctx, store.Query{Parent: r.ID(), Kind: kindRequirement})
	if err != nil {
		return err
	}
	for _, d := range reqs {
		req, err := model.Decode[RequirementSpec](d.Body)
		if err != nil {
			return err
		}
		if req.Spec.IsAllocatable() {
			return api.Conflict("spec.container is required: allocatable resource requirement %q of this consumer needs it", d.Name)
		}
	}
	return nil
}

func checkRequirement(ctx context.Context, r *api.Request[RequirementSpec]) error {
	d, err := r.Store().Get(ctx, r.Parent()) // the API has checked that the consumer exists
	if err != nil {
		return err
	}
	consumer, err := model.Decode[ConsumerSpec](d.Body)
	if err != nil {
		return err
	}
	sp := r.Resource().Spec
	if err := validateRequirement(sp, consumer.Spec); err != nil {
		return api.BadRequest("%v", err)
	}
	siblings, err := r.Store().List(ctx, store.Query{Parent: r.Parent(), Kind: kindRequirement})
	if err != nil {
		return err
	}
	for _, d := range siblings {
		if d.ID == r.ID() {
			continue
		}
		other, err := model.Decode[RequirementSpec](d.Body)
		if err != nil {
			return err
		}
		if msg := clash(sp, other.Spec); msg != "" {
			return api.Conflict("resource requirement %q of this consumer already %s", d.Name, msg)
		}
	}
	return nil
}

// clash says how two requirements of one consumer contradict each other ("" if they do
// not): one container request per resource, one value per node label.
func clash(a, b RequirementSpec) string {
	ra, rb := a.Resource, b.Resource
	switch {
	case a.IsAllocatable() && b.IsAllocatable() && ra.Name == rb.Name:
		return "requests " + ra.Name
	case !a.IsAllocatable() && !b.IsAllocatable() && ra.Key == rb.Key && ra.Value != rb.Value:
		return "asks for node label " + rb.Key + "=" + rb.Value
	}
	return ""
}

// compositeAppOf returns the composite app _id that holds a DIG _id.
func compositeAppOf(dig string) string {
	ca, _, _ := strings.Cut(dig, "/deployment-intent-groups/")
	return ca
}

func validateIntent(sp IntentSpec) error {
	return model.ValidateName("spec.app", sp.App)
}

func validateConsumer(sp ConsumerSpec) error {
	switch {
	case sp.Name == "":
		return fmt.Errorf("spec.name is required: the name of the Deployment whose pods need the resources")
	case sp.Replicas < 0:
		return fmt.Errorf("spec.replicas must be at least 1 (or omitted to keep the Deployment's)")
	case !isDeployment(sp.Kind):
		return fmt.Errorf("spec.kind %q is not supported: hpa consumers are Deployments", sp.Kind)
	}
	return nil
}

// unitsRE is EMCO's pattern for resource.units.
var unitsRE = regexp.MustCompile(`^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$`)

func validateRequirement(sp RequirementSpec, consumer ConsumerSpec) error {
	res := sp.Resource
	switch {
	case sp.Allocatable == nil:
		return fmt.Errorf("spec.allocatable is required: true for a resource of node capacity, false for a node label")
	case sp.Weight < 0:
		return fmt.Errorf("spec.weight must be at least 1")
	case consumer.Name == "":
		return fmt.Errorf("the consumer has no spec.name")
	}
	if !*sp.Allocatable {
		switch {
		case res.Name != "" || res.Requests != 0 || res.Limits != 0 || res.Units != "":
			return fmt.Errorf("spec.resource of a non-allocatable requirement is {key, value}; name, requests, limits and units belong to allocatable ones")
		case res.Key == "" || res.Value == "":
			return fmt.Errorf("spec.resource.key and spec.resource.value are required: the node label to match")
		}
		if errs := validation.IsQualifiedName(res.Key); len(errs) > 0 {
			return fmt.Errorf("spec.resource.key %q is not a label key: %s", res.Key, strings.Join(errs, "; "))
		}
		if errs := validation.IsValidLabelValue(res.Value); len(errs) > 0 {
			return fmt.Errorf("spec.resource.value %q is not a label value: %s", res.Value, strings.Join(errs, "; "))
		}
		return nil
	}
	switch {
	case res.Key != "" || res.Value != "":
		return fmt.Errorf("spec.resource of an allocatable requirement is {name, requests, limits, units}; key and value belong to non-allocatable ones")
	case res.Name == "":
		return fmt.Errorf("spec.resource.name is required: the resource to request, e.g. cpu, memory or nvidia.com/gpu")
	case len(validation.IsQualifiedName(res.Name)) > 0:
		return fmt.Errorf("spec.resource.name %q is not a Kubernetes resource name", res.Name)
	case res.Requests < 1:
		return fmt.Errorf("spec.resource.requests must be at least 1")
	case max(res.Requests, res.Limits) > math.MaxInt64/amount(res.Name, 1):
		return fmt.Errorf("spec.resource of %s is too large", res.Name)
	case res.Limits < 0:
		return fmt.Errorf("spec.resource.limits must not be negative")
	case res.Limits > 0 && res.Requests > res.Limits:
		return fmt.Errorf("spec.resource.requests (%d) must not exceed spec.resource.limits (%d)", res.Requests, res.Limits)
	case res.Units != "" && !unitsRE.MatchString(res.Units):
		return fmt.Errorf("spec.resource.units %q is invalid: use letters, digits, '-', '_' and '.'", res.Units)
	case consumer.Container == "":
		return fmt.Errorf("the consumer %q has no spec.container: allocatable requirements are set on a container", consumer.Name)
	}
	return nil
}
