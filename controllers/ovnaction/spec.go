package ovnaction

// The specs keep EMCO's field names, so EMCO's clients and files work unchanged.

// WorkloadIntentSpec names the workload whose pods get interfaces: the object
// "<workloadResource>+<type>" of the app, type being its kind (Deployment, ...).
type WorkloadIntentSpec struct {
	App              string `json:"app"`
	WorkloadResource string `json:"workloadResource"`
	Type             string `json:"type"`
}

// InterfaceSpec is one interface of the workload's pods. Its JSON is also an entry of the
// nfn-network annotation, in EMCO's field order.
type InterfaceSpec struct {
	Interface      string `json:"interface"`      // the pod's interface name, e.g. eth1
	Network        string `json:"name"`           // a network or provider network of the cluster
	DefaultGateway string `json:"defaultGateway"` // "false" unless given, as EMCO stores it
	IPAddress      string `json:"ipAddress,omitempty"`
	MACAddress     string `json:"macAddress,omitempty"`
}

// sameInterface is EMCO's identity of an interface in the annotation: network and name.
func sameInterface(a, b InterfaceSpec) bool {
	return a.Network == b.Network && a.Interface == b.Interface
}
