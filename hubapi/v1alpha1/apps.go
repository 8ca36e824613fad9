package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ChartSource is a chart by reference: the REST API's app spec.chart (docs/artifacts.md).
// +kubebuilder:validation:XValidation:rule="(has(self.oci) ? 1 : 0) + (has(self.helmRepo) ? 1 : 0) + (has(self.url) ? 1 : 0) == 1",message="exactly one of oci, helmRepo and url"
type ChartSource struct {
	// +optional
	OCI string `json:"oci,omitempty"`
	// +optional
	HelmRepo string `json:"helmRepo,omitempty"`
	// +optional
	Chart string `json:"chart,omitempty"`
	// +optional
	URL string `json:"url,omitempty"`
	// +optional
	Version string `json:"version,omitempty"`
	// +kubebuilder:validation:Pattern=`^sha256:[0-9a-f]{64}$`
	// +optional
	Digest string `json:"digest,omitempty"`
	// +optional
	PlainHTTP bool `json:"plainHTTP,omitempty"`
}

// App is one Helm chart of a composite app: by reference, or a chart archive (.tgz) in a
// ConfigMap's binaryData or a Secret.
// +kubebuilder:validation:XValidation:rule="has(self.chart) != has(self.chartFrom)",message="exactly one of chart and chartFrom"
type App struct {
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=128
	Name string `json:"name"`
	// +optional
	Description string `json:"description,omitempty"`
	// +optional
	Chart *ChartSource `json:"chart,omitempty"`
	// +optional
	ChartFrom *KeyRef `json:"chartFrom,omitempty"`
}

// AppProfile is one app's profile: an archive holding override_values.yaml (EMCO's),
// by URL with its digest, or from a ConfigMap or Secret.
// +kubebuilder:validation:XValidation:rule="has(self.archive) != has(self.archiveFrom)",message="exactly one of archive and archiveFrom"
type AppProfile struct {
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`
	// +kubebuilder:validation:MinLength=1
	App string `json:"app"`
	// +optional
	Archive *ChartSource `json:"archive,omitempty"`
	// +optional
	ArchiveFrom *KeyRef `json:"archiveFrom,omitempty"`
}

// CompositeProfile is a composite app's profile: one profile per app at most.
type CompositeProfile struct {
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`
	// +kubebuilder:validation:MaxItems=256
	// +optional
	Profiles []AppProfile `json:"profiles,omitempty"`
}

// CompositeAppSpec is one version of a composite app with its apps and profiles.
type CompositeAppSpec struct {
	Named `json:",inline"`
	// +kubebuilder:validation:MinLength=1
	Version string `json:"version"`
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=256
	// +listType=map
	// +listMapKey=name
	Apps []App `json:"apps"`
	// +kubebuilder:validation:MaxItems=64
	// +optional
	// +listType=map
	// +listMapKey=name
	Profiles []CompositeProfile `json:"profiles,omitempty"`
}

// CompositeApp is a version of a temco composite app, in its project's namespace.
// +kubebuilder:object:root=true
// +kubebuilder:resource:categories=temco
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Version",type=string,JSONPath=`.spec.version`
// +kubebuilder:printcolumn:name="Accepted",type=string,JSONPath=`.status.conditions[?(@.type=="Accepted")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type CompositeApp struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              CompositeAppSpec `json:"spec"`
	Status            CommonStatus     `json:"status,omitempty"`
}

// CompositeAppList lists CompositeApps.
// +kubebuilder:object:root=true
type CompositeAppList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []CompositeApp `json:"items"`
}

func init() {
	SchemeBuilder.Register(&CompositeApp{}, &CompositeAppList{})
}
