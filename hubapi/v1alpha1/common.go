package v1alpha1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// Condition types every kind reports.
const (
	// Accepted: temco took the object's configuration (False: the REST API's refusal,
	// its message the API's own).
	Accepted = "Accepted"
	// Ready: what the object asks for is done (a DIG: its desired state reached).
	Ready = "Ready"
	// Progressing: an operation the object asked for is running.
	Progressing = "Progressing"
	// Degraded: the last operation failed, or clusters are failing.
	Degraded = "Degraded"
)

// Owner says who owns the temco resource behind an object: the hub, unless a resource of
// that name was created over REST first (then the object is not Accepted and REST keeps it).
const OwnerHub = "hub"

// CommonStatus is what every kind's status holds.
type CommonStatus struct {
	// ObservedGeneration is the generation the conditions describe.
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Conditions: Accepted, Ready, Progressing, Degraded.
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// Owner of the temco resource ("hub").
	Owner string `json:"owner,omitempty"`
	// Path of the temco resource in the REST API (/v2/...).
	Path string `json:"path,omitempty"`
	// AppliedHash is the hash of the configuration (files included) temco last took.
	AppliedHash string `json:"appliedHash,omitempty"`
}

// Named is a temco name, spec.name, when an object sets one.
type Named struct {
	// Name in temco (EMCO's metadata.name); default: the object's metadata.name.
	// +kubebuilder:validation:MaxLength=128
	// +optional
	Name string `json:"name,omitempty"`
	// Description, EMCO's metadata.description.
	// +optional
	Description string `json:"description,omitempty"`
}

// KeyRef names a key of a ConfigMap or Secret in the object's own namespace (for the
// cluster-scoped kinds: the hub controller's namespace); no other namespace is read.
type KeyRef struct {
	// +kubebuilder:validation:Enum=ConfigMap;Secret
	// +kubebuilder:default=ConfigMap
	Kind string `json:"kind,omitempty"`
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`
	// +kubebuilder:validation:MinLength=1
	Key string `json:"key"`
}

// StatusCommon is the part of the status every kind has (the hub's reconciler's view).
func (o *ClusterProvider) StatusCommon() *CommonStatus { return &o.Status }

// StatusCommon is the part of the status every kind has.
func (o *Cluster) StatusCommon() *CommonStatus { return &o.Status }

// StatusCommon is the part of the status every kind has.
func (o *Project) StatusCommon() *CommonStatus { return &o.Status }

// StatusCommon is the part of the status every kind has.
func (o *LogicalCloud) StatusCommon() *CommonStatus { return &o.Status }

// StatusCommon is the part of the status every kind has.
func (o *CompositeApp) StatusCommon() *CommonStatus { return &o.Status }

// StatusCommon is the part of the status every kind has.
func (o *DeploymentIntentGroup) StatusCommon() *CommonStatus { return &o.Status.CommonStatus }
