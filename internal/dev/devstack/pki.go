package devstack

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// clusterPKI is the key material of one local cluster, as PEM files in one directory:
// its CA, the apiserver serving cert, an admin client cert (system:masters) and the
// service-account signing key.
type clusterPKI struct{ dir string }

func (p clusterPKI) path(name string) string { return filepath.Join(p.dir, name) }

// ensure creates the key material once; a restarted cluster keeps its CA and keys.
func (p clusterPKI) ensure(clusterName string) error {
	if _, err := os.Stat(p.path("admin.crt")); err == nil {
		return nil
	}
	if err := os.MkdirAll(p.dir, 0o700); err != nil {
		return err
	}
	caKey, err := newKey()
	if err != nil {
		return err
	}
	caTmpl := &x509.Certificate{
		Subject:               pkix.Name{CommonName: clusterName + "-ca"},
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true, IsCA: true,
	}
	caDER, err := sign(caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return err
	}
	ca, _ := x509.ParseCertificate(caDER)
	if err := writeCert(p.path("ca"), caDER, caKey); err != nil {
		return err
	}
	certs := []struct {
		file string
		tmpl *x509.Certificate
	}{
		{"apiserver", &x509.Certificate{
			Subject:     pkix.Name{CommonName: "kube-apiserver"},
			KeyUsage:    x509.KeyUsageDigitalSignature,
			ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
			IPAddresses: []net.IP{net.ParseIP("127.0.0.1"), net.ParseIP("10.0.0.1")},
			DNSNames:    []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc"},
		}},
		{"admin", &x509.Certificate{
			Subject:     pkix.Name{CommonName: "admin", Organization: []string{"system:masters"}},
			KeyUsage:    x509.KeyUsageDigitalSignature,
			ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
		}},
	}
	// The service-account key signs tokens only; it needs no certificate.
	saKey, err := newKey()
	if err != nil {
		return err
	}
	if err := writeKey(p.path("sa.key"), saKey); err != nil {
		return err
	}
	for _, c := range certs {
		key, err := newKey()
		if err != nil {
			return err
		}
		der, err := sign(c.tmpl, ca, &key.PublicKey, caKey)
		if err != nil {
			return err
		}
		if err := writeCert(p.path(c.file), der, key); err != nil {
			return err
		}
	}
	return nil
}

func newKey() (*ecdsa.PrivateKey, error) { return ecdsa.GenerateKey(elliptic.P256(), rand.Reader) }

func sign(tmpl, parent *x509.Certificate, pub *ecdsa.PublicKey, signer *ecdsa.PrivateKey) ([]byte, error) {
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		return nil, err
	}
	tmpl.SerialNumber = serial
	tmpl.NotBefore = time.Now().Add(-time.Hour)
	tmpl.NotAfter = time.Now().AddDate(10, 0, 0)
	return x509.CreateCertificate(rand.Reader, tmpl, parent, pub, signer)
}

// writeCert writes <base>.crt and <base>.key.
func writeCert(base string, der []byte, key *ecdsa.PrivateKey) error {
	if err := os.WriteFile(base+".crt", pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644); err != nil {
		return err
	}
	return writeKey(base+".key", key)
}

func writeKey(path string, key *ecdsa.PrivateKey) error {
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return err
	}
	return os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der}), 0o600)
}

func (p clusterPKI) read(file string) ([]byte, error) {
	b, err := os.ReadFile(p.path(file))
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("missing %s: remove %s to regenerate the cluster's keys", file, p.dir)
	}
	return b, err
}
