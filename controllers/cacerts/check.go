package cacerts

import (
	"context"
	"crypto/x509"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/temco/temco/api"
	"github.com/temco/temco/internal/core/lifecycle"
	"github.com/temco/temco/internal/core/model"
)

// Issuer groups: EMCO's cert-manager, and the issuing cluster's own certificate signer
// (temco's; see issuer.go).
const (
	GroupCertManager = "cert-manager.io"
	GroupKubernetes  = "certificates.k8s.io"
)

// The one issuer of group certificates.k8s.io: the signer every kube-controller-manager
// runs that signs any subject (kube-apiserver-client); its name is the signer's without
// the "kubernetes.io/" domain, as EMCO's names allow no slash.
const (
	KindSigner            = "Signer"
	SignerAPIServerClient = "kube-apiserver-client"
)

// Key sizes temco generates: below 2048 bits Go refuses or the key is weak; above 8192 a
// key takes minutes to generate.
const (
	minKeySize = 2048
	maxKeySize = 8192
)

// maxItemLen is EMCO's schema limit of every string in csrInfo's lists.
const maxItemLen = 128

// signatureAlgorithms are EMCO's schema's, with what signing with an RSA key (the only
// keys EMCO and temco make) needs of each: "" means it cannot sign with one.
var signatureAlgorithms = map[string]x509.SignatureAlgorithm{
	"MD5WithRSA": 0, "SHA1WithRSA": 0, // Go refuses to sign with them
	"SHA256WithRSA": x509.SHA256WithRSA, "SHA384WithRSA": x509.SHA384WithRSA, "SHA512WithRSA": x509.SHA512WithRSA,
	"SHA256WithRSAPSS": x509.SHA256WithRSAPSS, "SHA384WithRSAPSS": x509.SHA384WithRSAPSS, "SHA512WithRSAPSS": x509.SHA512WithRSAPSS,
	"ECDSAWithSHA1": 0, "ECDSAWithSHA256": 0, "ECDSAWithSHA384": 0, "ECDSAWithSHA512": 0, "PureEd25519": 0,
}

var publicKeyAlgorithms = []string{"RSA", "DSA", "ECDSA", "Ed25519"}

// checkCertSpec validates a certificate intent as EMCO's schema and API do; every problem
// is named, joined. Unlike EMCO it also refuses what would only fail the enrolment later
// for certain: a duration or signature algorithm Go cannot use, a key size it will not
// generate, an issuer temco has no way to reach, key usages cert-manager does not know
// (EMCO ignores keyUsages; temco asks a cert-manager issuer for them). It checks, in this
// order: the issuer, the issuing cluster, the duration, csrInfo, the certificate.
func checkCertSpec(sp *CertSpec) error {
	var p problems
	p.checkIssuerRef(sp.IssuerRef, sp.CSRInfo.KeyUsages)
	p.name("spec.issuingCluster.cluster", sp.IssuingCluster.Cluster)
	p.name("spec.issuingCluster.clusterProvider", sp.IssuingCluster.ClusterProvider)
	p.checkDuration(sp.Duration, sp.IssuerRef.Group)
	p.checkCSRInfo(sp.CSRInfo)
	if len(sp.Certificate.CommonName) > maxItemLen {
		p.bad("spec.certificate.commonName is longer than %d characters", maxItemLen)
	}
	return p.err()
}

// problems are what a check found wrong, in the order found.
type problems []string

func (p *problems) bad(format string, args ...any) { *p = append(*p, fmt.Sprintf(format, args...)) }

// name checks that v is a valid name for field what.
func (p *problems) name(what, v string) {
	if err := model.ValidateName(what, v); err != nil {
		p.bad("%v", err)
	}
}

// err joins the problems into one error; nil if there are none.
func (p problems) err() error {
	if len(p) > 0 {
		return fmt.Errorf("%s", strings.Join(p, "; "))
	}
	return nil
}

// checkIssuerRef checks the issuer: its name, that temco reaches its group and kind,
// usages a cert-manager issuer is asked for, its version.
func (p *problems) checkIssuerRef(ir IssuerRef, usages []string) {
	p.name("spec.issuerRef.name", ir.Name)
	switch {
	case ir.Group == "":
		p.bad("spec.issuerRef.group is required: %s (a cert-manager issuer) or %s (the issuing cluster's signer)", GroupCertManager, GroupKubernetes)
	case ir.Group == GroupCertManager:
		if ir.Kind != "ClusterIssuer" && ir.Kind != "Issuer" {
			p.bad("spec.issuerRef.kind %q is invalid: a %s issuer is a ClusterIssuer or an Issuer (in namespace %s of the issuing cluster, where the requests go)",
				ir.Kind, GroupCertManager, requestNamespace)
		}
		for i, u := range usages {
			if !slices.Contains(certManagerUsages, u) {
				p.bad("spec.csrInfo.keyUsages[%d] %q is not a usage cert-manager knows: use %s", i, u, strings.Join(certManagerUsages, ", "))
			}
		}
	case ir.Group == GroupKubernetes:
		if ir.Kind != KindSigner || ir.Name != SignerAPIServerClient {
			p.bad("spec.issuerRef of group %s must be {kind: %s, name: %s} (the kubernetes.io/%s signer of the issuing cluster), not {kind: %q, name: %q}",
				GroupKubernetes, KindSigner, SignerAPIServerClient, SignerAPIServerClient, ir.Kind, ir.Name)
		}
	default:
		p.bad("spec.issuerRef.group %q is not supported: use %s or %s", ir.Group, GroupCertManager, GroupKubernetes)
	}
	if ir.Version != "" {
		p.name("spec.issuerRef.version", ir.Version)
	}
}

// checkDuration checks a certificate's duration, if it has one: positive, and not below
// what a Kubernetes signer (issuer group group) issues for.
func (p *problems) checkDuration(duration, group string) {
	if duration == "" {
		return
	}
	if d, err := time.ParseDuration(duration); err != nil || d <= 0 {
		p.bad("spec.duration %q is not a positive duration (e.g. 8760h)", duration)
	} else if group == GroupKubernetes && d < minSignerDuration {
		p.bad("spec.duration %q is shorter than the %s a Kubernetes signer issues for at least", duration, minSignerDuration)
	}
}

// checkCSRInfo checks what the requests say: a key size temco generates, algorithms it
// signs with, and EMCO's limit on every string of its lists and on the common name prefix.
func (p *problems) checkCSRInfo(ci CSRInfo) {
	if ci.KeySize != 0 && (ci.KeySize < minKeySize || ci.KeySize > maxKeySize) {
		p.bad("spec.csrInfo.keySize %d is out of range: RSA keys of %d to %d bits (e.g. 4096)", ci.KeySize, minKeySize, maxKeySize)
	}
	if a := ci.Algorithm.PublicKeyAlgorithm; a != "" && !slices.Contains(publicKeyAlgorithms, a) {
		p.bad("spec.csrInfo.algorithm.publicKeyAlgorithm %q is invalid: use one of %v (keys are RSA whatever it says, as in EMCO)", a, publicKeyAlgorithms)
	}
	if a := ci.Algorithm.SignatureAlgorithm; a != "" {
		if alg, ok := signatureAlgorithms[a]; !ok {
			p.bad("spec.csrInfo.algorithm.signatureAlgorithm %q is invalid", a)
		} else if alg == 0 {
			p.bad("spec.csrInfo.algorithm.signatureAlgorithm %q cannot sign with an RSA key: use SHA256WithRSA, SHA384WithRSA, SHA512WithRSA or their RSAPSS forms", a)
		}
	}
	lists := map[string][]string{
		"dnsNames": ci.DNSNames, "emailAddresses": ci.EmailAddresses, "keyUsages": ci.KeyUsages,
		"subject.locale.country": ci.Subject.Locale.Country, "subject.locale.locality": ci.Subject.Locale.Locality,
		"subject.locale.postalCode": ci.Subject.Locale.PostalCode, "subject.locale.province": ci.Subject.Locale.Province,
		"subject.locale.streetAddress": ci.Subject.Locale.StreetAddress,
		"subject.organization.names":   ci.Subject.Organization.Names, "subject.organization.units": ci.Subject.Organization.Units,
	}
	for _, field := range slices.Sorted(maps.Keys(lists)) {
		for i, v := range lists[field] {
			if len(v) > maxItemLen {
				p.bad("spec.csrInfo.%s[%d] is longer than %d characters", field, i, maxItemLen)
			}
		}
	}
	if len(ci.Subject.Names.CommonNamePrefix) > maxItemLen {
		p.bad("spec.csrInfo.subject.names.commonNamePrefix is longer than %d characters", maxItemLen)
	}
}

// checkClusterGroupSpec validates a cluster group as EMCO does; provider, for a cluster
// provider's certificate, is that provider, which the group must name (EMCO would enrol
// another provider's clusters under this one's certificate).
func checkClusterGroupSpec(sp *ClusterGroupSpec, provider string) error {
	var errs []string
	bad := func(format string, args ...any) { errs = append(errs, fmt.Sprintf(format, args...)) }
	switch sp.Scope {
	case "":
		bad("spec.scope is required: name or label")
	case "name":
		if sp.Cluster == "" {
			bad(`spec.cluster is required when spec.scope is "name"`)
		}
	case "label":
		if sp.Label == "" {
			bad(`spec.label is required when spec.scope is "label"`)
		}
	default:
		bad("spec.scope %q is invalid: use name or label", sp.Scope)
	}
	if err := model.ValidateName("spec.clusterProvider", sp.Provider); err != nil {
		bad("%v", err)
	} else if provider != "" && sp.Provider != provider {
		bad("spec.clusterProvider %q is not this certificate intent's cluster provider %q", sp.Provider, provider)
	}
	if sp.Cluster != "" {
		if err := model.ValidateName("spec.cluster", sp.Cluster); err != nil {
			bad("%v", err)
		}
	}
	if sp.Label != "" {
		if err := model.ValidateName("spec.label", sp.Label); err != nil {
			bad("%v", err)
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("%s", strings.Join(errs, "; "))
	}
	return nil
}

// certCheck validates a certificate intent, and a project's tenancy (tenancy.go): a
// tenant's against p, an admin's marked as the admin's.
func certCheck(p Policy) func(context.Context, *api.Request[CertSpec]) error {
	return func(ctx context.Context, r *api.Request[CertSpec]) error {
		res := r.Resource()
		if err := checkCertSpec(&res.Spec); err != nil {
			return api.BadRequest("CA certificate intent %q: %v", res.Metadata.Name, err)
		}
		if t := targetOf(r.ID(), ""); t.Project != "" {
			admin := api.CallerIsAdmin(ctx)
			if admin {
				r.Field(fieldWriter, writerAdmin)
			}
			return checkTenancy(ctx, r.Store(), t.Project, &res.Spec, admin, p)
		}
		return nil
	}
}

func checkClusterGroup(_ context.Context, r *api.Request[ClusterGroupSpec]) error {
	res := r.Resource()
	provider := ""
	if t := targetOf(certOf(r.ID()), ""); t.ClusterProvider != "" {
		provider = t.ClusterProvider
	}
	if err := checkClusterGroupSpec(&res.Spec, provider); err != nil {
		return api.BadRequest("cluster group %q: %v", res.Metadata.Name, err)
	}
	return nil
}

func checkLogicalCloud(_ context.Context, r *api.Request[LogicalCloudSpec]) error {
	res := r.Resource()
	if err := model.ValidateName("spec.logicalCloud", res.Spec.LogicalCloud); err != nil {
		return api.BadRequest("logical cloud %q of the CA certificate intent: %v", res.Metadata.Name, err)
	}
	t := targetOf(certOf(r.ID()), "")
	// Loose, as in EMCO: the cloud may come later; it cannot go while named here.
	r.Ref(lifecycle.LogicalCloudID(t.Project, res.Spec.LogicalCloud))
	return nil
}

// certOf is the store id of the certificate intent a resource below it belongs to.
func certOf(id string) string {
	parts := splitID(id)
	if len(parts) < 4 {
		return id
	}
	return "/" + strings.Join(parts[:4], "/")
}

func splitID(id string) []string { return strings.Split(strings.Trim(id, "/"), "/") }
