package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ClusterProviderSpec is a cluster provider: a set of clusters.
type ClusterProviderSpec struct {
	Named `json:",inline"`
}

// ClusterProvider is temco's cluster provider.
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster,categories=temco
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Accepted",type=string,JSONPath=`.status.conditions[?(@.type=="Accepted")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type ClusterProvider struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              ClusterProviderSpec `json:"spec,omitempty"`
	Status            CommonStatus        `json:"status,omitempty"`
}

// ClusterProviderList lists ClusterProviders.
// +kubebuilder:object:root=true
type ClusterProviderList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ClusterProvider `json:"items"`
}

// ClusterSpec is a cluster of a provider, reached with a kubeconfig.
type ClusterSpec struct {
	Named `json:",inline"`
	// Provider is the cluster provider's temco name.
	// +kubebuilder:validation:MinLength=1
	Provider string `json:"provider"`
	// Kubeconfig is the key of a Secret in the hub controller's namespace holding it.
	Kubeconfig KeyRef `json:"kubeconfig"`
	// Labels are temco cluster labels, which placement intents select.
	// +listType=set
	// +optional
	Labels []string `json:"labels,omitempty"`
}

// Cluster is a temco cluster.
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster,categories=temco
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Provider",type=string,JSONPath=`.spec.provider`
// +kubebuilder:printcolumn:name="Accepted",type=string,JSONPath=`.status.conditions[?(@.type=="Accepted")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type Cluster struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              ClusterSpec  `json:"spec"`
	Status            CommonStatus `json:"status,omitempty"`
}

// ClusterList lists Clusters.
// +kubebuilder:object:root=true
type ClusterList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Cluster `json:"items"`
}

// ProjectSpec is a tenant. Its composite apps and DIGs are the objects of the hub
// namespaces it lists: an admin's binding (a Project is cluster-scoped), never a
// namespace's name.
type ProjectSpec struct {
	Named `json:",inline"`
	// Namespaces of the hub whose CompositeApps and DeploymentIntentGroups are this
	// project's: the hub writes them into temco with the project's authority alone. A
	// namespace listed by two Projects is refused for both.
	// +listType=set
	// +kubebuilder:validation:MaxItems=256
	// +kubebuilder:validation:items:MaxLength=63
	// +kubebuilder:validation:items:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	// +optional
	Namespaces []string `json:"namespaces,omitempty"`
}

// Project is a temco project.
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster,categories=temco
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Namespaces",type=string,JSONPath=`.spec.namespaces`
// +kubebuilder:printcolumn:name="Accepted",type=string,JSONPath=`.status.conditions[?(@.type=="Accepted")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type Project struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              ProjectSpec  `json:"spec,omitempty"`
	Status            CommonStatus `json:"status,omitempty"`
}

// ProjectList lists Projects.
// +kubebuilder:object:root=true
type ProjectList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Project `json:"items"`
}

// ClusterReference is a cluster of a logical cloud.
type ClusterReference struct {
	// +kubebuilder:validation:MinLength=1
	Provider string `json:"provider"`
	// +kubebuilder:validation:MinLength=1
	Cluster string `json:"cluster"`
}

// LogicalCloudSpec is a project's namespace on a set of clusters. Cluster-scoped and an
// admin's: its level decides what credentials temco issues on the clusters.
type LogicalCloudSpec struct {
	Named `json:",inline"`
	// +kubebuilder:validation:MinLength=1
	Project string `json:"project"`
	// Level "0" (admin: the clusters' own credentials) or "1" (standard or privileged).
	// +kubebuilder:validation:Enum="0";"1"
	Level string `json:"level"`
	// +optional
	Namespace string `json:"namespace,omitempty"`
	// +optional
	Labels map[string]string `json:"labels,omitempty"`
	// +kubebuilder:validation:MinItems=1
	Clusters []ClusterReference `json:"clusters"`
}

// LogicalCloud is a temco logical cloud, instantiated once its clusters are referenced.
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster,categories=temco
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Project",type=string,JSONPath=`.spec.project`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type LogicalCloud struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              LogicalCloudSpec `json:"spec"`
	Status            CommonStatus     `json:"status,omitempty"`
}

// LogicalCloudList lists LogicalClouds.
// +kubebuilder:object:root=true
type LogicalCloudList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []LogicalCloud `json:"items"`
}

func init() {
	SchemeBuilder.Register(&ClusterProvider{}, &ClusterProviderList{}, &Cluster{}, &ClusterList{},
		&Project{}, &ProjectList{}, &LogicalCloud{}, &LogicalCloudList{})
}
