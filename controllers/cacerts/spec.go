// Package cacerts is EMCO's ca-certs: CA certificate intents of a cluster provider or of a
// project's logical clouds, which give each member cluster an intermediate certificate
// signed on one issuing cluster, and install it there as a cert-manager ClusterIssuer
// that Istio uses. Each intent has two lifecycles of its own, enrolment and distribution
// (lifecycle.Target.CACert), run by the same workflows as a DIG's:
//
//   - enrolment: temco generates an RSA key per member cluster (kept sealed in its own
//     collection, never in a resource, a context or a workflow payload), asks the issuing
//     cluster to sign it — a cert-manager.io/v1 CertificateRequest for a cert-manager
//     issuer, as EMCO does, or a certificates.k8s.io/v1 CertificateSigningRequest for the
//     cluster's own signer, which temco approves — and waits until it is issued, then
//     records the certificate and the issuer's CA beside the key;
//   - distribution: once the enrolment is instantiated, it puts on every member cluster
//     EMCO's objects: a Secret "...-ca" in namespace cert-manager (tls.crt the
//     certificate and the issuing CA, tls.key the key), a cert-manager ClusterIssuer
//     "...-issuer" using it, for a logical cloud with a namespace an Istio ProxyConfig
//     there, and a kncc ConfigCtrl patching Istio's mesh configuration.
//
// Where temco departs from EMCO, and why, is said where it does (issuer.go names the
// issuers: cert-manager's, and temco's addition, the issuing cluster's own signer).
package cacerts

import "github.com/temco/temco/internal/core/lifecycle"

// Stored kinds.
const (
	KindCert         = "ca-cert"
	KindClusterGroup = "ca-cert-cluster-group"
	KindLogicalCloud = "ca-cert-logical-cloud"
	// The state history of each lifecycle of an intent, in a child document of the
	// intent named after it (lifecycle.Target.ID).
	KindEnrollment   = "ca-cert-enrollment"
	KindDistribution = "ca-cert-distribution"
)

// Routes, with EMCO's path parameter names.
const (
	providerCerts = "/cluster-providers/:clusterProvider/ca-certs"
	projectCerts  = "/projects/:project/ca-certs"
	certParam     = "caCert"
	clusterGroups = "/clusters"
	logicalClouds = "/logical-clouds"
)

// The apps of the contexts, EMCO's names.
const (
	AppEnrollment   = "cert-enrollment"
	AppDistribution = "cert-distribution"
)

// CertSpec is a CA certificate intent: EMCO's CaCertSpec.
type CertSpec struct {
	Certificate    Certificate    `json:"certificate"`
	CSRInfo        CSRInfo        `json:"csrInfo"`
	Duration       string         `json:"duration,omitempty"`
	IsCA           bool           `json:"isCA,omitempty"`
	IssuerRef      IssuerRef      `json:"issuerRef"`
	IssuingCluster IssuingCluster `json:"issuingCluster"`
}

// Certificate is EMCO's certificate template (its commonName is stored, not used).
type Certificate struct {
	CommonName string `json:"commonName,omitempty"`
}

// CSRInfo is what every member's certificate request says.
type CSRInfo struct {
	KeySize        int       `json:"keySize,omitempty"`
	Version        int       `json:"version,omitempty"`
	DNSNames       []string  `json:"dnsNames,omitempty"`
	EmailAddresses []string  `json:"emailAddresses,omitempty"`
	KeyUsages      []string  `json:"keyUsages,omitempty"`
	Algorithm      Algorithm `json:"algorithm"`
	Subject        Subject   `json:"subject"`
}

// Algorithm names x509 algorithms as EMCO's schema does.
type Algorithm struct {
	PublicKeyAlgorithm string `json:"publicKeyAlgorithm,omitempty"`
	SignatureAlgorithm string `json:"signatureAlgorithm,omitempty"`
}

// Subject is the requests' subject.
type Subject struct {
	Locale       Locale       `json:"locale"`
	Names        Names        `json:"names"`
	Organization Organization `json:"organization"`
}

// Locale is the subject's location.
type Locale struct {
	Country       []string `json:"country,omitempty"`
	Locality      []string `json:"locality,omitempty"`
	PostalCode    []string `json:"postalCode,omitempty"`
	Province      []string `json:"province,omitempty"`
	StreetAddress []string `json:"streetAddress,omitempty"`
}

// Names is the subject's common name prefix.
type Names struct {
	CommonNamePrefix string `json:"commonNamePrefix"`
}

// Organization is the subject's organisation.
type Organization struct {
	Names []string `json:"names,omitempty"`
	Units []string `json:"units,omitempty"`
}

// IssuerRef names what signs the requests on the issuing cluster.
type IssuerRef struct {
	Name    string `json:"name"`
	Kind    string `json:"kind"`
	Group   string `json:"group"`
	Version string `json:"version,omitempty"`
}

// IssuingCluster is the cluster that signs.
type IssuingCluster struct {
	Cluster         string `json:"cluster"`
	ClusterProvider string `json:"clusterProvider"`
}

// ClusterGroupSpec selects member clusters, by name or by label.
type ClusterGroupSpec struct {
	Label    string `json:"label,omitempty"`
	Cluster  string `json:"cluster,omitempty"`
	Provider string `json:"clusterProvider"`
	Scope    string `json:"scope"`
}

// LogicalCloudSpec names a logical cloud of the project whose clusters (those its
// cluster groups select among the cloud's) take part.
type LogicalCloudSpec struct {
	LogicalCloud string `json:"logicalCloud"`
}

// targetOf is the lifecycle target a certificate intent's store id names in stage.
func targetOf(certID, stage string) lifecycle.Target {
	// /cluster-providers/{cp}/ca-certs/{cert} or /projects/{p}/ca-certs/{cert}
	var owner, ownerName, cert string
	parts := splitID(certID)
	if len(parts) >= 4 {
		owner, ownerName, cert = parts[0], parts[1], parts[3]
	}
	t := lifecycle.Target{CACert: cert, CertStage: stage}
	if owner == "cluster-providers" {
		t.ClusterProvider = ownerName
	} else {
		t.Project = ownerName
	}
	return t
}
