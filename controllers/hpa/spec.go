package hpa

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// Stored kinds; "hpa-" keeps them apart from every other kind in temco.
const (
	kindIntent      = "hpa-intent"
	kindConsumer    = "hpa-consumer"
	kindRequirement = "hpa-requirement"
)

// IntentSpec names the app an hpa intent constrains.
type IntentSpec struct {
	App string `json:"app"`
}

// ConsumerSpec names the Deployment (and, for allocatable requirements, its container)
// whose pods need the resources.
type ConsumerSpec struct {
	APIVersion string `json:"apiVersion,omitempty"`
	Kind       string `json:"kind,omitempty"`
	Replicas   int64  `json:"replicas,omitempty"`
	Name       string `json:"name"`
	Container  string `json:"container,omitempty"`
}

// RequirementSpec is one resource a consumer's pods need. Mandatory, Weight and Units are
// kept for EMCO's clients; EMCO does not use them either.
type RequirementSpec struct {
	Allocatable *bool    `json:"allocatable"`
	Mandatory   bool     `json:"mandatory,omitempty"`
	Weight      int32    `json:"weight,omitempty"`
	Resource    Resource `json:"resource"`
}

// Resource is either allocatable {name, requests, limits, units} or a node label
// {key, value}; EMCO stores both shapes in one flat object.
type Resource struct {
	Name     string `json:"name,omitempty"`
	Requests int64  `json:"requests,omitempty"`
	Limits   int64  `json:"limits,omitempty"`
	Units    string `json:"units,omitempty"`
	Key      string `json:"key,omitempty"`
	Value    string `json:"value,omitempty"`
}

// IsAllocatable reports whether the requirement asks for capacity rather than a label.
func (s RequirementSpec) IsAllocatable() bool { return s.Allocatable != nil && *s.Allocatable }

// amount converts a requirement's number to the resource's base unit, as EMCO does:
// memory is given in MB (10^6 bytes); CPU in whole cores; anything else in its own unit.
func amount(name string, n int64) int64 {
	if name == string(corev1.ResourceMemory) {
		return n * 1000 * 1000
	}
	return n
}

// quantity is amount as a Kubernetes quantity.
func quantity(name string, n int64) resource.Quantity {
	return *resource.NewQuantity(amount(name, n), resource.DecimalSI)
}

// wholeUnits is q rounded down to whole units (CPU in cores), as EMCO counts free capacity.
func wholeUnits(q resource.Quantity) int64 {
	const maxMilli = 1<<63/1000 - 1
	if v := q.Value(); v > maxMilli || v < -maxMilli {
		return v
	}
	return q.MilliValue() / 1000
}

// isDeployment reports whether a consumer's kind means a Deployment (EMCO patches only
// those; an empty kind is EMCO's default).
func isDeployment(kind string) bool { return kind == "" || strings.EqualFold(kind, "Deployment") }
