package cacerts

// cert-manager issuers (issuer.go), as EMCO's ca-certs drives them: a cert-manager.io/v1
// CertificateRequest per member on the issuing cluster, approved by cert-manager's
// approver (or the cluster's approval policy: temco approves nothing here) and signed by
// the issuer spec.issuerRef names; its status holds the certificate and the issuer's CA.

import (
	"context"
	"encoding/base64"
	"fmt"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/temco/temco/internal/core/appctx"
)

// requestNamespace is where the CertificateRequests go on the issuing cluster, and so
// where an issuer of kind Issuer (namespaced) must be. EMCO sets no namespace and its
// rsync applies them to the namespace of the cluster's kubeconfig, "default" as a rule.
const requestNamespace = "default"

// certManagerUsages are the usages a CertificateRequest may ask for (cert-manager.io/v1's
// KeyUsage), which spec.csrInfo.keyUsages names for a cert-manager issuer.
var certManagerUsages = []string{"signing", "digital signature", "content commitment", "key encipherment",
	"key agreement", "data encipherment", "cert sign", "crl sign", "encipher only", "decipher only", "any",
	"server auth", "client auth", "code signing", "email protection", "s/mime", "ipsec end system",
	"ipsec tunnel", "ipsec user", "timestamping", "ocsp signing", "microsoft sgc", "netscape sgc"}

var certificateRequests = schema.GroupVersionResource{Group: GroupCertManager, Version: "v1", Resource: "certificaterequests"}

type certManager struct{ ref IssuerRef }

// request is EMCO's CertificateRequest: the member's request, isCA, the duration and the
// issuer; and, where EMCO sends none, spec.csrInfo.keyUsages as its usages (none: the
// issuer's defaults, digital signature and key encipherment, plus cert sign for a CA).
func (m certManager) request(name string, sp *CertSpec, csrPEM []byte, labels map[string]string) (appctx.Object, error) {
	duration, err := time.ParseDuration(sp.Duration)
	if err != nil {
		return appctx.Object{}, invalid("spec.duration %q: %v", sp.Duration, err)
	}
	spec := map[string]any{"request": base64.StdEncoding.EncodeToString(csrPEM), "isCA": sp.IsCA,
		"duration":  duration.String(),
		"issuerRef": map[string]any{"name": m.ref.Name, "kind": m.ref.Kind, "group": m.ref.Group}}
	if len(sp.CSRInfo.KeyUsages) > 0 {
		usages := make([]any, len(sp.CSRInfo.KeyUsages))
		for i, u := range sp.CSRInfo.KeyUsages {
			usages[i] = u
		}
		spec["usages"] = usages
	}
	objs, err := toObjects([]map[string]any{{"apiVersion": apiCertManager, "kind": "CertificateRequest",
		"metadata": meta(name, requestNamespace, labels, nil), "spec": spec}})
	if err != nil {
		return appctx.Object{}, err
	}
	return objs[0], nil
}

// issued waits until the request has its certificate; one denied, failed or invalid fails
// at once with cert-manager's reason and message.
func (m certManager) issued(ctx context.Context, on *issuingCluster, name string) ([]byte, []byte, error) {
	ri := on.dyn.Resource(certificateRequests).Namespace(requestNamespace)
	what := fmt.Sprintf("CertificateRequest %s/%s", requestNamespace, name)
	var cert, ca []byte
	var last *unstructured.Unstructured
	err := on.waitFor(ctx, "waiting for cert-manager to issue "+what, func() (bool, error) {
		u, err := ri.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, fmt.Errorf("read %s: %w", what, err)
		}
		last = u
		if err := requestRefused(u); err != nil {
			return false, refused("%s (%s %q) %v", what, m.ref.Kind, m.ref.Name, err)
		}
		if cert, err = statusPEM(u, "certificate"); err != nil || len(cert) == 0 {
			return false, err
		}
		if ca, err = statusPEM(u, "ca"); err != nil {
			return false, err
		}
		if len(ca) == 0 { // EMCO's distribution refuses it too
			return false, refused("%s was issued without the issuer's CA (status.ca): %s %q does not report it, and the members' chain needs it",
				what, m.ref.Kind, m.ref.Name)
		}
		return true, nil
	}, func() error {
		return fmt.Errorf("%s (%s %q) is not issued after %s: %s", what, m.ref.Kind, m.ref.Name, on.wait, pendingReason(last))
	})
	return cert, ca, err
}

// statusPEM decodes a status field of bytes (base64 in JSON).
func statusPEM(u *unstructured.Unstructured, field string) ([]byte, error) {
	s, _, _ := unstructured.NestedString(u.Object, "status", field)
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return nil, refused("CertificateRequest %s: status.%s is not base64: %v", u.GetName(), field, err)
	}
	return b, nil
}

// crCondition is one condition of a CertificateRequest's status.
type crCondition struct{ status, reason, message string }

func crConditions(u *unstructured.Unstructured) map[string]crCondition {
	out := map[string]crCondition{}
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		m, ok := c.(map[string]any)
		if !ok {
			continue
		}
		str := func(k string) string { s, _ := m[k].(string); return s }
		out[str("type")] = crCondition{str("status"), str("reason"), str("message")}
	}
	return out
}

// requestRefused says why a CertificateRequest will never be issued (nil if it may be):
// denied by an approver, marked invalid, or failed (Ready False for reason Failed or
// Denied, as cert-manager ends a request for good).
func requestRefused(u *unstructured.Unstructured) error {
	conds := crConditions(u)
	for _, t := range []string{"Denied", "InvalidRequest"} {
		if c := conds[t]; c.status == "True" {
			return fmt.Errorf("%s: %s: %s", strings.ToLower(t), c.reason, c.message)
		}
	}
	if c := conds["Ready"]; c.status == "False" && slices.Contains([]string{"Failed", "Denied"}, c.reason) {
		return fmt.Errorf("failed: %s: %s", c.reason, c.message)
	}
	return nil
}

// pendingReason says what a request still waits for, as cert-manager reports it.
func pendingReason(u *unstructured.Unstructured) string {
	if u == nil {
		return "not read"
	}
	conds := crConditions(u)
	if conds["Approved"].status != "True" {
		return "not approved yet (is cert-manager, or the cluster's approval policy, running?)"
	}
	if c, ok := conds["Ready"]; ok {
		return fmt.Sprintf("approved, Ready %s: %s: %s", c.status, c.reason, c.message)
	}
	return "approved, no Ready condition yet (is cert-manager running?)"
}
