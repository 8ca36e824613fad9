package testenv

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"

	"github.com/temco/temco/internal/adapters/policyevents"
)

// PolicyAgentTLS is PolicyAgent served over TLS, with a certificate for 127.0.0.1 and
// agent.test signed by a CA made for the test. It returns the agent's address, the CA
// (PEM) and, on auth, the authorization metadata of each call ("" when none came).
func PolicyAgentTLS(t *testing.T) (addr, caPEM string, events chan<- policyevents.Event, auth <-chan string) {
	t.Helper()
	ca, cert := TestCertificate(t, "agent.test")
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	evs, calls := make(chan policyevents.Event, 16), make(chan string, 16)
	s := grpc.NewServer(grpc.Creds(credentials.NewTLS(&tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{cert}})))
	policyevents.Register(s, func(ctx context.Context, _ int32, send func(policyevents.Event) error) error {
		md, _ := metadata.FromIncomingContext(ctx)
		select {
		case calls <- firstOf(md.Get("authorization")):
		default:
		}
		for {
			select {
			case <-ctx.Done():
				return nil
			case ev := <-evs:
				if err := send(ev); err != nil {
					return err
				}
			}
		}
	})
	go func() { _ = s.Serve(lis) }()
	t.Cleanup(s.Stop)
	return lis.Addr().String(), ca, evs, calls
}

func firstOf(values []string) string {
	if len(values) == 0 {
		return ""
	}
	return values[0]
}

// TestCertificate makes a CA for the test and a server certificate it signs for
// 127.0.0.1 and dnsName; it returns the CA as PEM.
func TestCertificate(t testing.TB, dnsName string) (string, tls.Certificate) {
	t.Helper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: dnsName},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour), KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, DNSNames: []string{dnsName}, IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, caTmpl, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca := string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}))
	return ca, tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}
