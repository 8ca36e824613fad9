package cacerts

import (
	"context"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"strings"
	"testing"

	"github.com/temco/temco/internal/core/lifecycle"
	"github.com/temco/temco/internal/core/store"
)

func validCert() CertSpec {
	return CertSpec{IsCA: true, Duration: "8760h",
		IssuerRef:      IssuerRef{Name: SignerAPIServerClient, Kind: KindSigner, Group: GroupKubernetes},
		IssuingCluster: IssuingCluster{Cluster: "cluster1", ClusterProvider: "local"},
		CSRInfo:        CSRInfo{KeySize: 4096, Version: 1, Algorithm: Algorithm{PublicKeyAlgorithm: "RSA", SignatureAlgorithm: "SHA512WithRSA"}}}
}

func TestCertSpecChecks(t *testing.T) {
	cases := []struct {
		name   string
		change func(*CertSpec)
		want   string // "" valid, else a part of the message
	}{
		{"the issuing cluster's signer", func(*CertSpec) {}, ""},
		{"EMCO's cert-manager issuer", func(s *CertSpec) {
			s.IssuerRef = IssuerRef{Name: "ca-issuer", Kind: "ClusterIssuer", Group: GroupCertManager}
		}, ""},
		{"no key size or duration: the enrolment says so", func(s *CertSpec) { s.CSRInfo.KeySize, s.Duration = 0, "" }, ""},
		{"no issuer name", func(s *CertSpec) { s.IssuerRef.Name = "" }, "spec.issuerRef.name is required"},
		{"no issuer group", func(s *CertSpec) { s.IssuerRef.Group = "" }, "spec.issuerRef.group is required"},
		{"another issuer group", func(s *CertSpec) { s.IssuerRef.Group = "vault.io" }, `spec.issuerRef.group "vault.io" is not supported`},
		{"a cert-manager issuer of another kind", func(s *CertSpec) { s.IssuerRef = IssuerRef{Name: "x", Kind: "Signer", Group: GroupCertManager} }, `spec.issuerRef.kind "Signer" is invalid`},
		{"a namespaced cert-manager issuer, with usages", func(s *CertSpec) {
			s.IssuerRef = IssuerRef{Name: "ca", Kind: "Issuer", Group: GroupCertManager}
			s.CSRInfo.KeyUsages = []string{"cert sign", "digital signature"}
		}, ""},
		{"a usage cert-manager does not know", func(s *CertSpec) {
			s.IssuerRef = IssuerRef{Name: "ca", Kind: "ClusterIssuer", Group: GroupCertManager}
			s.CSRInfo.KeyUsages = []string{"cert sign", "certSign"}
		}, `spec.csrInfo.keyUsages[1] "certSign" is not a usage cert-manager knows`},
		{"usages are the signer's own, whatever csrInfo says", func(s *CertSpec) { s.CSRInfo.KeyUsages = []string{"certSign"} }, ""},
		{"another signer", func(s *CertSpec) { s.IssuerRef.Name = "kubelet-serving" }, "must be {kind: Signer, name: kube-apiserver-client}"},
		{"no issuing cluster", func(s *CertSpec) { s.IssuingCluster.Cluster = "" }, "spec.issuingCluster.cluster is required"},
		{"a bad issuing provider name", func(s *CertSpec) { s.IssuingCluster.ClusterProvider = "-x" }, "spec.issuingCluster.clusterProvider"},
		{"a duration that is none", func(s *CertSpec) { s.Duration = "a year" }, `spec.duration "a year" is not a positive duration`},
		{"a negative duration", func(s *CertSpec) { s.Duration = "-1h" }, "is not a positive duration"},
		{"a duration below the signer's minimum", func(s *CertSpec) { s.Duration = "5m" }, "shorter than the 10m0s"},
		{"a small key", func(s *CertSpec) { s.CSRInfo.KeySize = 1024 }, "spec.csrInfo.keySize 1024 is out of range"},
		{"a huge key", func(s *CertSpec) { s.CSRInfo.KeySize = 16384 }, "out of range"},
		{"an unknown public key algorithm", func(s *CertSpec) { s.CSRInfo.Algorithm.PublicKeyAlgorithm = "RSA2" }, "publicKeyAlgorithm \"RSA2\" is invalid"},
		{"an ECDSA signature with RSA keys", func(s *CertSpec) { s.CSRInfo.Algorithm.SignatureAlgorithm = "ECDSAWithSHA256" }, "cannot sign with an RSA key"},
		{"MD5", func(s *CertSpec) { s.CSRInfo.Algorithm.SignatureAlgorithm = "MD5WithRSA" }, "cannot sign with an RSA key"},
		{"an unknown signature algorithm", func(s *CertSpec) { s.CSRInfo.Algorithm.SignatureAlgorithm = "ROT13" }, `signatureAlgorithm "ROT13" is invalid`},
		{"a long DNS name", func(s *CertSpec) { s.CSRInfo.DNSNames = []string{"a", strings.Repeat("x", 129)} }, "spec.csrInfo.dnsNames[1] is longer than 128"},
		{"a long prefix", func(s *CertSpec) { s.CSRInfo.Subject.Names.CommonNamePrefix = strings.Repeat("x", 129) }, "commonNamePrefix is longer"},
		{"two problems, both named", func(s *CertSpec) { s.Duration, s.IssuingCluster.Cluster = "x", "" }, "spec.issuingCluster.cluster is required; spec.duration \"x\""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			sp := validCert()
			c.change(&sp)
			err := checkCertSpec(&sp)
			switch {
			case c.want == "" && err != nil:
				t.Errorf("refused: %v", err)
			case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
				t.Errorf("error %v, want one saying %q", err, c.want)
			}
		})
	}
}

// A certificate intent's problems are named in one message, in the order of its checks:
// issuer, issuing cluster, duration, csrInfo, certificate.
func TestCertSpecProblemsInOrder(t *testing.T) {
	sp := validCert()
	sp.IssuerRef.Group = "vault.io"
	sp.IssuingCluster.Cluster = ""
	sp.Duration = "x"
	sp.CSRInfo.Algorithm.SignatureAlgorithm = "ROT13"
	sp.CSRInfo.Subject.Names.CommonNamePrefix = strings.Repeat("x", 129)
	sp.Certificate.CommonName = strings.Repeat("x", 129)
	want := `spec.issuerRef.group "vault.io" is not supported: use cert-manager.io or certificates.k8s.io; ` +
		`spec.issuingCluster.cluster is required; spec.duration "x" is not a positive duration (e.g. 8760h); ` +
		`spec.csrInfo.algorithm.signatureAlgorithm "ROT13" is invalid; spec.csrInfo.subject.names.commonNamePrefix is longer than 128 characters; ` +
		`spec.certificate.commonName is longer than 128 characters`
	if err := checkCertSpec(&sp); err == nil || err.Error() != want {
		t.Errorf("error\n%v\nwant\n%s", err, want)
	}
}

func TestClusterGroupChecks(t *testing.T) {
	cases := []struct {
		name     string
		spec     ClusterGroupSpec
		provider string // a cluster provider's intent
		want     string
	}{
		{"by name", ClusterGroupSpec{Scope: "name", Cluster: "c1", Provider: "p"}, "p", ""},
		{"by label, in a project", ClusterGroupSpec{Scope: "label", Label: "edge", Provider: "p"}, "", ""},
		{"no scope", ClusterGroupSpec{Cluster: "c1", Provider: "p"}, "", "spec.scope is required"},
		{"a bad scope", ClusterGroupSpec{Scope: "all", Provider: "p"}, "", `spec.scope "all" is invalid`},
		{"by name without one", ClusterGroupSpec{Scope: "name", Label: "edge", Provider: "p"}, "", `spec.cluster is required when spec.scope is "name"`},
		{"by label without one", ClusterGroupSpec{Scope: "label", Provider: "p"}, "", `spec.label is required when spec.scope is "label"`},
		{"no provider", ClusterGroupSpec{Scope: "name", Cluster: "c1"}, "", "spec.clusterProvider is required"},
		{"another provider", ClusterGroupSpec{Scope: "name", Cluster: "c1", Provider: "q"}, "p", `spec.clusterProvider "q" is not this certificate intent's cluster provider "p"`},
		{"a bad label", ClusterGroupSpec{Scope: "label", Label: "a b", Provider: "p"}, "", "spec.label"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := checkClusterGroupSpec(&c.spec, c.provider)
			switch {
			case c.want == "" && err != nil:
				t.Errorf("refused: %v", err)
			case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
				t.Errorf("error %v, want one saying %q", err, c.want)
			}
		})
	}
}

// Every signature algorithm the checks accept signs a request with an RSA key.
func TestAcceptedSignatureAlgorithmsSign(t *testing.T) {
	key, err := newKey(2048)
	if err != nil {
		t.Fatal(err)
	}
	for name, alg := range signatureAlgorithms {
		sp := validCert()
		sp.CSRInfo.Algorithm.SignatureAlgorithm = name
		if checkCertSpec(&sp) != nil {
			if alg != 0 {
				t.Errorf("%s is refused but has an algorithm", name)
			}
			continue
		}
		csrPEM, err := certificateRequest(&sp, "cn", key)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		b, _ := pem.Decode(csrPEM)
		csr, err := x509.ParseCertificateRequest(b.Bytes)
		if err != nil || csr.SignatureAlgorithm != alg || csr.CheckSignature() != nil {
			t.Errorf("%s: request %v signed with %v", name, err, csr.SignatureAlgorithm)
		}
	}
}

// The request carries csrInfo's subject and names and the member's common name, EMCO's.
func TestCertificateRequest(t *testing.T) {
	sp := validCert()
	sp.CSRInfo.DNSNames = []string{"mesh.example.com"}
	sp.CSRInfo.Subject.Organization.Names = []string{"Intel"}
	sp.CSRInfo.Subject.Locale.Country = []string{"US"}
	key, err := newKey(2048)
	if err != nil {
		t.Fatal(err)
	}
	cn := commonName("edge-ca", "local+cluster2", "foo")
	if cn != "edge-ca-local-cluster2-ca-foo" {
		t.Errorf("common name %q", cn)
	}
	if got := commonName("edge-ca", "local+cluster2", ""); got != "edge-ca-local-cluster2-ca" {
		t.Errorf("common name without a prefix %q", got)
	}
	csrPEM, err := certificateRequest(&sp, cn, key)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := pem.Decode(csrPEM)
	csr, err := x509.ParseCertificateRequest(b.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	k, _ := parseKey(key)
	if csr.Subject.CommonName != cn || csr.Subject.Organization[0] != "Intel" || csr.Subject.Country[0] != "US" ||
		csr.DNSNames[0] != "mesh.example.com" || !k.PublicKey.Equal(csr.PublicKey) {
		t.Errorf("request %+v", csr.Subject)
	}
	if strings.Contains(string(csrPEM), "PRIVATE") {
		t.Error("the request holds the key")
	}
}

func TestObjectNames(t *testing.T) {
	for _, c := range []struct{ got, want string }{
		{requestName("123", "Edge_CA", "local+cluster1"), "123-edge-ca-local-cluster1-cr"},
		{secretName("9", "ca", "p+c"), "9-ca-p-c-ca"},
		{issuerName("9", "ca", "p+c"), "9-ca-p-c-issuer"},
		{proxyConfigName("9", "ca", "p+c", "ns1"), "9-ca-p-c-ns1-pc"},
		{knccName("9", "ca", "p+c"), "9-ca-p-c-kncc"},
		{objectName(strings.Repeat("a", 300)), strings.Repeat("a", 253)},
	} {
		if c.got != c.want {
			t.Errorf("name %q, want %q", c.got, c.want)
		}
	}
}

// A member's objects, as EMCO's distribution makes them: the Secret holds the chain but
// never the key; a logical cloud's namespace gets a ProxyConfig and the issuer is not
// made the mesh's default signer.
func TestDistributionObjects(t *testing.T) {
	chain := []byte("-----BEGIN CERTIFICATE-----\nAAA\n-----END CERTIFICATE-----\n-----BEGIN CERTIFICATE-----\nBBB\n-----END CERTIFICATE-----\n")
	labels := map[string]string{lifecycle.DeploymentIDLabel: "7-cert-distribution"}
	for _, c := range []struct {
		name       string
		namespaces []string
		kinds      []string
		patches    int
	}{
		{"a cluster provider's", nil, []string{"Secret", "ClusterIssuer", "ConfigCtrl"}, 2},
		{"a logical cloud's", []string{"ns1", "ns2"}, []string{"Secret", "ClusterIssuer", "ProxyConfig", "ProxyConfig", "ConfigCtrl"}, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			objs, err := distributionObjects("7", "ca", distributed{cluster: "p+c", namespaces: c.namespaces, chain: chain, enrollment: "5"}, labels)
			if err != nil {
				t.Fatal(err)
			}
			var kinds []string
			byKind := map[string]map[string]any{}
			for _, o := range objs {
				kinds = append(kinds, o.Kind)
				var m map[string]any
				if err := json.Unmarshal([]byte(o.Manifest), &m); err != nil {
					t.Fatal(err)
				}
				byKind[o.Kind] = m
				if m["metadata"].(map[string]any)["labels"].(map[string]any)[lifecycle.DeploymentIDLabel] != "7-cert-distribution" {
					t.Errorf("%s has no deployment-id label", o.Kind)
				}
			}
			if strings.Join(kinds, ",") != strings.Join(c.kinds, ",") {
				t.Fatalf("kinds %v, want %v", kinds, c.kinds)
			}
			secret := byKind["Secret"]
			data := secret["data"].(map[string]any)
			crt, _ := base64.StdEncoding.DecodeString(data["tls.crt"].(string))
			if string(crt) != string(chain) || len(data) != 1 || objs[0].Namespace != "cert-manager" || objs[0].Name != "7-ca-p-c-ca" {
				t.Errorf("Secret %s", objs[0].Manifest)
			}
			if secret["metadata"].(map[string]any)["annotations"].(map[string]any)[keyAnnotation] != "5" {
				t.Error("the Secret does not name the enrolment holding its key")
			}
			if sn := byKind["ClusterIssuer"]["spec"].(map[string]any)["ca"].(map[string]any)["secretName"]; sn != "7-ca-p-c-ca" {
				t.Errorf("ClusterIssuer uses %v", sn)
			}
			kncc := byKind["ConfigCtrl"]
			patch := kncc["spec"].(map[string]any)["patch"].([]any)
			first := patch[0].(map[string]any)
			if len(patch) != c.patches || first["key"] != "mesh:\n  caCertificates\n" ||
				first["value"] != "- certSigners:\n  - clusterissuers.cert-manager.io/7-ca-p-c-issuer\n  pem: |\n    -----BEGIN CERTIFICATE-----\n    AAA\n    -----END CERTIFICATE-----\n    -----BEGIN CERTIFICATE-----\n    BBB\n    -----END CERTIFICATE-----" {
				t.Errorf("ConfigCtrl patch %q", patch)
			}
			if kncc["metadata"].(map[string]any)["namespace"] != "istio-system" || kncc["spec"].(map[string]any)["resource"].(map[string]any)["name"] != "istio" {
				t.Errorf("ConfigCtrl %v", kncc)
			}
			if pc := byKind["ProxyConfig"]; pc != nil {
				env := pc["spec"].(map[string]any)["environmentVariables"].(map[string]any)
				if env["ISTIO_META_CERT_SIGNER"] != "7-ca-p-c-issuer" || pc["apiVersion"] != "networking.istio.io/v1beta1" {
					t.Errorf("ProxyConfig %v", pc)
				}
			}
		})
	}
}

func TestRequestObject(t *testing.T) {
	sp := validCert()
	sp.Duration = "24h"
	obj, err := kubeSigner{}.request("1-ca-p-c-cr", &sp, []byte("REQ"), nil)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	_ = json.Unmarshal([]byte(obj.Manifest), &m)
	spec := m["spec"].(map[string]any)
	if obj.Kind != "CertificateSigningRequest" || obj.Group != "certificates.k8s.io" || spec["signerName"] != "kubernetes.io/kube-apiserver-client" ||
		spec["request"] != base64.StdEncoding.EncodeToString([]byte("REQ")) || spec["expirationSeconds"] != float64(86400) {
		t.Errorf("request object %s", obj.Manifest)
	}
}

func TestTargetOf(t *testing.T) {
	if got := targetOf("/cluster-providers/local/ca-certs/c1", "enrollment"); got != (lifecycle.Target{ClusterProvider: "local", CACert: "c1", CertStage: "enrollment"}) {
		t.Errorf("provider's: %+v", got)
	}
	if got := targetOf("/projects/p/ca-certs/c1", "distribution"); got != (lifecycle.Target{Project: "p", CACert: "c1", CertStage: "distribution"}) {
		t.Errorf("project's: %+v", got)
	}
	if got := certOf("/projects/p/ca-certs/c1/logical-clouds/lc/clusters/g"); got != "/projects/p/ca-certs/c1" {
		t.Errorf("certOf %s", got)
	}
}

// A tenant's certificate names only the subject organizations an admin allowed: with a
// cluster's own signer they are Kubernetes groups there.
func TestTenantsNameOnlyAllowedOrganizations(t *testing.T) {
	sp := &CertSpec{}
	sp.CSRInfo.Subject.Organization.Names = []string{"edge"}
	sp.CSRInfo.Subject.Organization.Units = []string{"system:masters"}
	err := checkTenancy(context.Background(), nil, "pa", sp, false, Policy{Organizations: []string{"edge"}})
	if err == nil || !strings.Contains(err.Error(), `spec.csrInfo.subject.organization.units[0] "system:masters"`) {
		t.Errorf("error %v, want the unit refused", err)
	}
}

// An admin's project intent may name any issuing cluster and organization, checked
// against no cloud (EMCO's example signs on issuer1, in none of the project's clouds);
// enrolment knows it by the mark the write stored.
func TestAdminsNameAnyIssuingCluster(t *testing.T) {
	sp := &CertSpec{IssuingCluster: IssuingCluster{Cluster: "issuer1", ClusterProvider: "provider1"}}
	sp.CSRInfo.Subject.Organization.Units = []string{"system:masters"}
	if err := checkTenancy(context.Background(), nil, "proj1", sp, true, Policy{}); err != nil {
		t.Errorf("an admin's intent: %v", err)
	}
	if writtenByAdmin(&store.Doc{}) || !writtenByAdmin(&store.Doc{Fields: map[string]string{fieldWriter: writerAdmin}}) {
		t.Error("an intent is the admin's exactly when marked so")
	}
}
