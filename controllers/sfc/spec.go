package sfc

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// The specs keep EMCO's field names, so EMCO's clients and files work unchanged.

// ChainSpec is a network chain: its type (only Routing exists) and the namespace Nodus
// chains in.
type ChainSpec struct {
	ChainType string `json:"chainType"`
	Namespace string `json:"namespace"`
}

// LinkSpec is one network function of a chain: the app's workload between two networks,
// and the label ("key=value") its pods get and the chain string names it by.
type LinkSpec struct {
	LeftNet          string `json:"leftNet"`
	RightNet         string `json:"rightNet"`
	LinkLabel        string `json:"linkLabel"`
	App              string `json:"app"`
	WorkloadResource string `json:"workloadResource"` // the workload's name
	ResourceType     string `json:"resourceType"`     // its kind, e.g. Deployment
}

// ClientSelectorSpec selects the pods, in the namespaces, that use one end of a chain.
// sfcclient gives a client DIG's workload the pod labels of the first selector whose
// namespace labels its logical cloud carries.
type ClientSelectorSpec struct {
	ChainEnd          string               `json:"chainEnd"` // left or right
	PodSelector       metav1.LabelSelector `json:"podSelector"`
	NamespaceSelector metav1.LabelSelector `json:"namespaceSelector"`
}

// ProviderNetworkSpec is a provider network at one end of a chain.
type ProviderNetworkSpec struct {
	ChainEnd        string `json:"chainEnd"`
	ProviderNetwork string `json:"providerNetwork"`
	GatewayIP       string `json:"gatewayIp"`
	Subnet          string `json:"subnet"` // optional
}

// Values of the spec fields that have a fixed set.
const (
	ChainTypeRouting = "Routing"
	EndLeft          = "left"
	EndRight         = "right"
)
