package cacerts

import (
	"encoding/base64"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/temco/temco/internal/core/appctx"
	"github.com/temco/temco/internal/core/lifecycle"
)

// Names of the objects, EMCO's: "<context>-<cert>-<provider>-<cluster>-<suffix>", made
// DNS-safe (EMCO's names may hold capitals and underscores; Kubernetes' may not).
func objectName(parts ...string) string {
	n := strings.ToLower(strings.Join(parts, "-"))
	n = strings.ReplaceAll(n, "_", "-")
	if len(n) > 253 {
		n = strings.TrimRight(n[:253], "-.")
	}
	return n
}

func requestName(ctxID, cert, cluster string) string {
	p, c := lifecycle.SplitClusterKey(cluster)
	return objectName(ctxID, cert, p, c, "cr")
}

func secretName(ctxID, cert, cluster string) string {
	p, c := lifecycle.SplitClusterKey(cluster)
	return objectName(ctxID, cert, p, c, "ca")
}

func issuerName(ctxID, cert, cluster string) string {
	p, c := lifecycle.SplitClusterKey(cluster)
	return objectName(ctxID, cert, p, c, "issuer")
}

func proxyConfigName(ctxID, cert, cluster, namespace string) string {
	p, c := lifecycle.SplitClusterKey(cluster)
	return objectName(ctxID, cert, p, c, namespace, "pc")
}

func knccName(ctxID, cert, cluster string) string {
	p, c := lifecycle.SplitClusterKey(cluster)
	return objectName(ctxID, cert, p, c, "kncc")
}

// Where EMCO's distribution puts its objects.
const (
	certManagerNamespace = "cert-manager"
	istioNamespace       = "istio-system"
	istioConfigMap       = "istio"
)

// The apiVersions of the objects, EMCO's.
const (
	apiCertManager = "cert-manager.io/v1"
	apiProxyConfig = "networking.istio.io/v1beta1"
	apiKncc        = "kncc.k8sappconfig.com.gitlab.com/v1alpha1"
)

// keyAnnotation marks a distributed Secret whose tls.key the distribution puts in on the
// cluster itself: its value is the enrolment context holding the key (the stored
// manifest, and so every status answer, never holds it).
const keyAnnotation = "ca-certs.temco.dev/enrollment"

// distributed is what one member cluster gets from a distribution.
type distributed struct {
	cluster    string   // provider+cluster
	namespaces []string // logical clouds' namespaces there (ProxyConfigs)
	chain      []byte   // PEM: the cluster's certificate, then the issuing CA
	enrollment string   // the enrolment context holding the key
}

// distributionObjects renders EMCO's objects for one member cluster: the Secret holding
// the certificate chain (its key is added on the cluster, see keyAnnotation), the
// ClusterIssuer using it, a ProxyConfig per logical cloud namespace setting the Istio
// proxies' certificate signer, and the kncc ConfigCtrl patching Istio's mesh config with
// the chain (and, outside logical clouds, making the issuer the default signer).
func distributionObjects(ctxID, cert string, m distributed, labels map[string]string) ([]appctx.Object, error) {
	secret, issuer := secretName(ctxID, cert, m.cluster), issuerName(ctxID, cert, m.cluster)
	objs := []map[string]any{
		{"apiVersion": "v1", "kind": "Secret",
			"metadata": meta(secret, certManagerNamespace, labels, map[string]string{keyAnnotation: m.enrollment}),
			"data":     map[string]any{"tls.crt": base64.StdEncoding.EncodeToString(m.chain)}},
		{"apiVersion": apiCertManager, "kind": "ClusterIssuer", "metadata": meta(issuer, "", labels, nil),
			"spec": map[string]any{"ca": map[string]any{"secretName": secret}}},
	}
	for _, ns := range m.namespaces {
		objs = append(objs, map[string]any{"apiVersion": apiProxyConfig, "kind": "ProxyConfig",
			"metadata": meta(proxyConfigName(ctxID, cert, m.cluster, ns), ns, labels, nil),
			"spec":     map[string]any{"environmentVariables": map[string]any{"ISTIO_META_CERT_SIGNER": issuer}}})
	}
	patch := []any{map[string]any{"key": "mesh:\n  caCertificates\n", "value": caCertificates(issuer, m.chain)}}
	if len(m.namespaces) == 0 {
		patch = append(patch, map[string]any{"key": "mesh:\n  defaultConfig:\n    proxyMetadata:\n      ISTIO_META_CERT_SIGNER\n", "value": issuer})
	}
	objs = append(objs, map[string]any{"apiVersion": apiKncc, "kind": "ConfigCtrl",
		"metadata": meta(knccName(ctxID, cert, m.cluster), istioNamespace, labels, nil),
		"spec":     map[string]any{"resource": map[string]any{"name": istioConfigMap, "namespace": istioNamespace}, "patch": patch}})
	return toObjects(objs)
}

// caCertificates is the mesh config entry trusting the chain for the issuer's certificates,
// as EMCO writes it.
func caCertificates(issuer string, chain []byte) string {
	pem := strings.ReplaceAll(strings.TrimRight(string(chain), "\n"), "\n", "\n    ")
	return fmt.Sprintf("- certSigners:\n  - clusterissuers.cert-manager.io/%s\n  pem: |\n    %s", issuer, pem)
}

func meta(name, namespace string, labels, annotations map[string]string) map[string]any {
	m := map[string]any{"name": name}
	if namespace != "" {
		m["namespace"] = namespace
	}
	if len(labels) > 0 {
		l := map[string]any{}
		for k, v := range labels {
			l[k] = v
		}
		m["labels"] = l
	}
	if len(annotations) > 0 {
		a := map[string]any{}
		for k, v := range annotations {
			a[k] = v
		}
		m["annotations"] = a
	}
	return m
}

func toObjects(objs []map[string]any) ([]appctx.Object, error) {
	out := make([]appctx.Object, 0, len(objs))
	for _, o := range objs {
		obj, err := appctx.NewObject(&unstructured.Unstructured{Object: o})
		if err != nil {
			return nil, err
		}
		out = append(out, obj)
	}
	return out, nil
}
