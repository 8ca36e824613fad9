package v1alpha1

import (
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Desired states of a DIG.
const (
	StateCreated      = ""             // stored, nothing more
	StateApproved     = "Approved"     // approved, not deployed
	StateInstantiated = "Instantiated" // deployed; a change of the configuration is an update
	StateTerminated   = "Terminated"   // nothing deployed (the DIG kept)
)

// Annotations that ask for one operation each; the DIG's status records the value it
// carried out, so an annotation left in place is not carried out again.
const (
	// AnnotationUpdate: any new value asks for an update of an Instantiated DIG whose
	// configuration did not change (a chart tag moved, say).
	AnnotationUpdate = "temco.io/update"
	// AnnotationRollback: a revision number, or a snapshot id, to roll back to.
	AnnotationRollback = "temco.io/rollback"
)

// ClusterMatch selects clusters of a provider by name or by label.
type ClusterMatch struct {
	// +kubebuilder:validation:MinLength=1
	ClusterProvider string `json:"clusterProvider"`
	// +optional
	Cluster string `json:"cluster,omitempty"`
	// +optional
	ClusterLabel string `json:"clusterLabel,omitempty"`
}

// AllOf is a cluster match that may carry a nested anyOf choice.
type AllOf struct {
	ClusterMatch `json:",inline"`
	// +optional
	AnyOf []ClusterMatch `json:"anyOf,omitempty"`
}

// AppPlacement places one app: every allOf entry, and one cluster among anyOf.
type AppPlacement struct {
	// +kubebuilder:validation:MinLength=1
	App string `json:"app"`
	// +optional
	AllOf []AllOf `json:"allOf,omitempty"`
	// +optional
	AnyOf []ClusterMatch `json:"anyOf,omitempty"`
}

// OverrideValues sets Helm values of one app.
type OverrideValues struct {
	// +kubebuilder:validation:MinLength=1
	App    string            `json:"app"`
	Values map[string]string `json:"values"`
}

// IntentResource is a resource under an action intent (a gac intent's resources, a
// resource's customizations), EMCO's body under spec, its file from a ConfigMap or Secret.
type IntentResource struct {
	// Resource is the collection's path segment, e.g. "resources", "customizations".
	// +kubebuilder:validation:Pattern=`^[a-z][a-z0-9-]{0,62}$`
	Resource string `json:"resource"`
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`
	// +kubebuilder:pruning:PreserveUnknownFields
	// +optional
	Spec *apiextensionsv1.JSON `json:"spec,omitempty"`
	// +optional
	File *KeyRef `json:"file,omitempty"`
	// Resources nested under this one (a customization under its resource).
	// +kubebuilder:validation:MaxItems=256
	// +optional
	Resources []IntentLeaf `json:"resources,omitempty"`
}

// IntentLeaf is a resource two levels under an action intent.
type IntentLeaf struct {
	// +kubebuilder:validation:Pattern=`^[a-z][a-z0-9-]{0,62}$`
	Resource string `json:"resource"`
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`
	// +kubebuilder:pruning:PreserveUnknownFields
	// +optional
	Spec *apiextensionsv1.JSON `json:"spec,omitempty"`
	// +optional
	File *KeyRef `json:"file,omitempty"`
}

// ActionIntent is one controller's intent on the DIG (EMCO's action intents: gac's
// generic-k8s-intents, hpa's, ovnaction's network-controller-intent, dtc's...), named in
// the DIG's intents under Controller.
type ActionIntent struct {
	// Controller is the intent's key in the DIG's intents (e.g. "genericK8sIntent").
	// +kubebuilder:validation:MinLength=1
	Controller string `json:"controller"`
	// Resource is the intent collection's path segment under the DIG (e.g.
	// "generic-k8s-intents").
	// +kubebuilder:validation:Pattern=`^[a-z][a-z0-9-]{0,62}$`
	Resource string `json:"resource"`
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`
	// +kubebuilder:pruning:PreserveUnknownFields
	// +optional
	Spec *apiextensionsv1.JSON `json:"spec,omitempty"`
	// +kubebuilder:validation:MaxItems=256
	// +optional
	Resources []IntentResource `json:"resources,omitempty"`
}

// DeploymentIntentGroupSpec is a DIG: what to deploy (a composite app's version and
// profile), where (placement, logical cloud), how (action intents, rollout strategy), and
// the state it should be in.
type DeploymentIntentGroupSpec struct {
	Named `json:",inline"`
	// +kubebuilder:validation:MinLength=1
	CompositeApp string `json:"compositeApp"`
	// +kubebuilder:validation:MinLength=1
	CompositeAppVersion string `json:"compositeAppVersion"`
	// +kubebuilder:validation:MinLength=1
	CompositeProfile string `json:"compositeProfile"`
	// Version is the DIG's own version (EMCO's spec.version).
	// +kubebuilder:validation:MinLength=1
	Version string `json:"version"`
	// +kubebuilder:validation:MinLength=1
	LogicalCloud string `json:"logicalCloud"`
	// +optional
	OverrideValues []OverrideValues `json:"overrideValues,omitempty"`
	// Placement: one entry per app (EMCO's generic placement intent's app intents).
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=256
	// +listType=map
	// +listMapKey=app
	Placement []AppPlacement `json:"placement"`
	// +kubebuilder:validation:MaxItems=64
	// +optional
	ActionIntents []ActionIntent `json:"actionIntents,omitempty"`
	// RolloutStrategy is the body's spec of a rollout strategy (docs/rollout.md).
	// +kubebuilder:pruning:PreserveUnknownFields
	// +optional
	RolloutStrategy *apiextensionsv1.JSON `json:"rolloutStrategy,omitempty"`
	// +kubebuilder:pruning:PreserveUnknownFields
	// +optional
	DriftDetection *apiextensionsv1.JSON `json:"driftDetection,omitempty"`
	// +kubebuilder:pruning:PreserveUnknownFields
	// +optional
	ImagePinning *apiextensionsv1.JSON `json:"imagePinning,omitempty"`
	// State is the desired lifecycle state; empty: stored only.
	// +kubebuilder:validation:Enum="";Approved;Instantiated;Terminated
	// +optional
	State string `json:"state,omitempty"`
}

// Counts are a DIG's clusters (or objects) by state.
type Counts struct {
	Total    int `json:"total"`
	Deployed int `json:"deployed"`
	Pending  int `json:"pending,omitempty"`
	Failed   int `json:"failed,omitempty"`
	Retrying int `json:"retrying,omitempty"`
}

// AppCounts are one app's clusters by state.
type AppCounts struct {
	App      string `json:"app"`
	Clusters Counts `json:"clusters"`
}

// DeploymentIntentGroupStatus is temco's state of the DIG, written back.
type DeploymentIntentGroupStatus struct {
	CommonStatus `json:",inline"`
	// State is temco's lifecycle state of the DIG.
	State string `json:"state,omitempty"`
	// Revision and ContextID of the DIG's current deployment.
	Revision  int    `json:"revision,omitempty"`
	ContextID string `json:"contextId,omitempty"`
	// Snapshot is the id of the configuration snapshot the current revision deployed.
	Snapshot string `json:"snapshot,omitempty"`
	// WorkflowID of the running (or last) operation.
	WorkflowID string `json:"workflowId,omitempty"`
	// Operation is the running (or last) operation, e.g. "instantiate".
	Operation string `json:"operation,omitempty"`
	// RolloutStage is the stage a staged rollout is in, with its state
	// ("edge: WaitingForApproval"), or the rollout's end ("Succeeded").
	RolloutStage string `json:"rolloutStage,omitempty"`
	// Apps is the number of apps the current revision deploys.
	Apps int `json:"apps,omitempty"`
	// Clusters and Objects of the current revision, by state.
	Clusters Counts `json:"clusters,omitempty"`
	Objects  Counts `json:"objects,omitempty"`
	// AppClusters are each app's clusters by state (the app's state on each cluster it
	// is placed on), read when no operation runs.
	// +listType=map
	// +listMapKey=app
	// +optional
	AppClusters []AppCounts `json:"appClusters,omitempty"`
	// DeployedHash is the configuration's hash the last instantiate or update deployed.
	DeployedHash string `json:"deployedHash,omitempty"`
	// IntentCollections are the action intents' collections (e.g. "generic-k8s-intents")
	// the hub wrote to: one an intent left is emptied of the hub's items.
	IntentCollections []string `json:"intentCollections,omitempty"`
	// UpdateRequest and RollbackRequest are the annotations' values carried out.
	UpdateRequest   string `json:"updateRequest,omitempty"`
	RollbackRequest string `json:"rollbackRequest,omitempty"`
	// Requested is an update or rollback asked of temco whose answer is not recorded yet.
	// +optional
	Requested *RequestedOperation `json:"requested,omitempty"`
}

// RequestedOperation is an update or rollback, written down before the hub asks for it:
// both leave the DIG's state as it was, so a hub killed before recording temco's answer
// learns from the DIG's deployment whether temco took it, instead of asking twice.
type RequestedOperation struct {
	// Op is "update" or "rollback".
	Op string `json:"op"`
	// Revision and Context are the DIG's deployment when it was asked: temco took it if
	// the deployment is now another one, made by Op.
	Revision int    `json:"revision"`
	Context  string `json:"context,omitempty"`
	// Hash is the configuration's hash an update deploys.
	Hash string `json:"hash,omitempty"`
	// Request is the annotation's value it carries out.
	Request string `json:"request,omitempty"`
}

// DeploymentIntentGroup is a temco DIG, in its project's namespace.
// +kubebuilder:object:root=true
// +kubebuilder:resource:shortName=dig,categories=temco
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Desired",type=string,JSONPath=`.spec.state`
// +kubebuilder:printcolumn:name="State",type=string,JSONPath=`.status.state`
// +kubebuilder:printcolumn:name="Revision",type=integer,JSONPath=`.status.revision`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type DeploymentIntentGroup struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              DeploymentIntentGroupSpec   `json:"spec"`
	Status            DeploymentIntentGroupStatus `json:"status,omitempty"`
}

// DeploymentIntentGroupList lists DeploymentIntentGroups.
// +kubebuilder:object:root=true
type DeploymentIntentGroupList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []DeploymentIntentGroup `json:"items"`
}

func init() {
	SchemeBuilder.Register(&DeploymentIntentGroup{}, &DeploymentIntentGroupList{})
}
