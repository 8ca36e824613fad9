package dtc

import (
	"encoding/json"
	"fmt"
	"strconv"
)

// InboundSpec is an inbound intent: a server app's service, as its clients reach it.
type InboundSpec struct {
	App             string     `json:"app"`
	AppLabel        string     `json:"appLabel"` // "key=value": selects the server's pods
	ServiceName     string     `json:"serviceName"`
	ExternalName    string     `json:"externalName,omitempty"`
	Port            int        `json:"port"`
	Protocol        string     `json:"protocol"`
	ExternalSupport bool       `json:"externalSupport,omitempty"`
	ServiceMesh     string     `json:"serviceMesh,omitempty"` // "istio" for its
	Management      Management `json:"management"`
	External        External   `json:"external"`
	EdgeCNF         string     `json:"edgeCNF,omitempty"` // "sdewan" for swc
}

// Management says how the service mesh manages the service.
type Management struct {
	SidecarProxy YesNo  `json:"sidecarProxy"`
	TLSType      string `json:"tlsType"` // MUTUAL, SIMPLE or NONE
}

// External holds the certificates of external access. EMCO's schema documents them
// directly under external; its code (and so temco) reads external.externalCerts.
type External struct {
	ExternalCerts ExternalCerts `json:"externalCerts"`
}

// ExternalCerts are PEM certificates, base64-encoded as EMCO takes them. The private key
// is stored sealed and answered as a mask (see checkInbound).
type ExternalCerts struct {
	ServiceCertificate string `json:"serviceCertificate,omitempty"`
	ServicePrivateKey  string `json:"servicePrivateKey,omitempty"`
	CACertificate      string `json:"caCertificate,omitempty"`
}

// ClientSpec is a client of an inbound intent: an app allowed to reach the server.
type ClientSpec struct {
	App         string   `json:"app"`
	AppLabel    string   `json:"appLabel"`
	ServiceName string   `json:"serviceName"`
	Namespaces  []string `json:"namespaces"`
	CIDRs       []string `json:"cidrs"`
}

// AccessPointSpec limits what a client may do on the server (its: an Istio
// AuthorizationPolicy).
type AccessPointSpec struct {
	Action string   `json:"action"` // ALLOW
	URL    []string `json:"url"`
	Access []string `json:"access"` // GET, PUT, POST, DELETE
}

// YesNo is "yes" or "no". EMCO's example files write sidecarProxy: yes unquoted, which
// YAML 1.1 readers (emcoctl's and temco's) send as a boolean: both spellings are taken.
type YesNo string

// UnmarshalJSON takes a string or a boolean.
func (y *YesNo) UnmarshalJSON(b []byte) error {
	if v, err := strconv.ParseBool(string(b)); err == nil {
		*y = map[bool]YesNo{true: "yes", false: "no"}[v]
		return nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("sidecarProxy: yes or no, not %s", b)
	}
	*y = YesNo(s)
	return nil
}
