// Package v1alpha1 holds temco's declarative resources: the kinds of the API group
// temco.io that a hub cluster stores and `temco hub` reconciles into temco through the
// same REST API every other client uses (docs/hub.md).
//
// Scope follows who may write: cluster providers, clusters, projects and logical clouds
// are cluster-scoped (an admin's, as over REST, where a logical cloud's level decides the
// credentials temco issues); composite apps and deployment intent groups live in the
// namespace named after their project, so a tenant's RBAC on that namespace is its grant.
//
// Every kind's temco name is spec.name when set, else metadata.name: EMCO names may hold
// what Kubernetes names may not, and two projects may both have a "default" cloud.
//
// The CustomResourceDefinitions in ../crds are generated from these types by
// controller-gen (`make generate`); a test fails when they are stale.
//
// +kubebuilder:object:generate=true
// +groupName=temco.io
package v1alpha1

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

// GroupVersion is temco.io/v1alpha1.
var GroupVersion = schema.GroupVersion{Group: "temco.io", Version: "v1alpha1"}

var (
	// SchemeBuilder registers the kinds with a runtime.Scheme.
	SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}
	// AddToScheme adds the kinds to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)
