package tlsconfig

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

type pki struct {
	dir    string
	ca     *x509.Certificate
	caKey  *ecdsa.PrivateKey
	serial int64
}

func newPKI(t *testing.T) *pki {
	t.Helper()
	p := &pki{dir: t.TempDir()}
	p.ca, p.caKey = p.issue(t, "ca", &x509.Certificate{IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign})
	return p
}

// issue writes <name>.crt and <name>.key, signed by the CA (self-signed for the CA).
func (p *pki) issue(t *testing.T, name string, tmpl *x509.Certificate) (*x509.Certificate, *ecdsa.PrivateKey) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	p.serial++
	tmpl.SerialNumber, tmpl.Subject = big.NewInt(p.serial), pkix.Name{CommonName: name}
	tmpl.NotBefore, tmpl.NotAfter = time.Now().Add(-time.Hour), time.Now().Add(time.Hour)
	parent, signer := tmpl, key
	if p.ca != nil {
		parent, signer = p.ca, p.caKey
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, signer)
	if err != nil {
		t.Fatal(err)
	}
	kder, _ := x509.MarshalECPrivateKey(key)
	write(t, filepath.Join(p.dir, name+".crt"), pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))
	write(t, filepath.Join(p.dir, name+".key"), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}))
	c, _ := x509.ParseCertificate(der)
	return c, key
}

func write(t *testing.T, path string, data []byte) {
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

func (p *pki) path(name string) string { return filepath.Join(p.dir, name) }

func server(name string) *x509.Certificate {
	return &x509.Certificate{DNSNames: []string{name}, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
}

// handshake connects client to server and returns the certificates each side saw.
func handshake(t *testing.T, srv, cli *tls.Config) (serverSaw, clientSaw *x509.Certificate, err error) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	errc := make(chan error, 1)
	var s *tls.Conn
	go func() {
		a, err := l.Accept()
		if err != nil {
			errc <- err
			return
		}
		defer a.Close()
		_ = a.SetDeadline(time.Now().Add(10 * time.Second))
		s = tls.Server(a, srv)
		errc <- s.Handshake()
	}()
	b, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	_ = b.SetDeadline(time.Now().Add(10 * time.Second))
	c := tls.Client(b, cli)
	err = c.Handshake()
	if serr := <-errc; err == nil {
		err = serr
	}
	if err != nil {
		return nil, nil, err
	}
	if pc := s.ConnectionState().PeerCertificates; len(pc) > 0 {
		serverSaw = pc[0]
	}
	return serverSaw, c.ConnectionState().PeerCertificates[0], nil
}

func TestMutualTLSAndRotation(t *testing.T) {
	p := newPKI(t)
	p.issue(t, "server", server("temporal.test"))
	p.issue(t, "client", &x509.Certificate{ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})
	srv, err := Server(p.path("server.crt"), p.path("server.key"))
	if err != nil {
		t.Fatal(err)
	}
	srv.ClientAuth, srv.ClientCAs = tls.RequireAndVerifyClientCert, x509.NewCertPool()
	srv.ClientCAs.AddCert(p.ca)
	cli, err := Client{CA: p.path("ca.crt"), Cert: p.path("client.crt"), Key: p.path("client.key"), ServerName: "temporal.test"}.Config()
	if err != nil {
		t.Fatal(err)
	}
	saw, got, err := handshake(t, srv, cli)
	if err != nil {
		t.Fatal(err)
	}
	if saw.Subject.CommonName != "client" || got.Subject.CommonName != "server" {
		t.Fatalf("server saw %s, client saw %s", saw.Subject.CommonName, got.Subject.CommonName)
	}

	// A renewed server certificate is served on the next connection.
	renewed, _ := p.issue(t, "server", server("temporal.test"))
	later := time.Now().Add(time.Minute)
	for _, f := range []string{"server.crt", "server.key"} {
		_ = os.Chtimes(p.path(f), later, later)
	}
	if _, got, err = handshake(t, srv, cli); err != nil || got.SerialNumber.Cmp(renewed.SerialNumber) != 0 {
		t.Errorf("after renewal the server still serves serial %v (err %v), want %v", got.SerialNumber, err, renewed.SerialNumber)
	}
	// A broken renewal keeps the last good pair in service.
	write(t, p.path("server.crt"), []byte("not a certificate"))
	_ = os.Chtimes(p.path("server.crt"), later.Add(time.Minute), later.Add(time.Minute))
	if _, got, err = handshake(t, srv, cli); err != nil || got.SerialNumber.Cmp(renewed.SerialNumber) != 0 {
		t.Errorf("a broken renewal interrupted service: %v", err)
	}
}

func TestClientVerifiesTheServer(t *testing.T) {
	p := newPKI(t)
	p.issue(t, "server", server("temporal.test"))
	srv, _ := Server(p.path("server.crt"), p.path("server.key"))
	wrongName, _ := Client{CA: p.path("ca.crt"), ServerName: "other.test"}.Config()
	if _, _, err := handshake(t, srv, wrongName); err == nil {
		t.Error("a certificate for another name was accepted")
	}
	systemRoots, _ := Client{Enabled: true, ServerName: "temporal.test"}.Config()
	if _, _, err := handshake(t, srv, systemRoots); err == nil {
		t.Error("a private CA was trusted without being configured")
	}
}

func TestConfigErrors(t *testing.T) {
	p := newPKI(t)
	if cfg, err := (Client{}).Config(); cfg != nil || err != nil {
		t.Errorf("no settings: %v %v, want TLS off", cfg, err)
	}
	write(t, p.path("empty.pem"), []byte("nothing"))
	for name, c := range map[string]Client{
		"CA not PEM":     {CA: p.path("empty.pem")},
		"CA missing":     {CA: p.path("nope.pem")},
		"cert, no key":   {Cert: p.path("ca.crt")},
		"key not a pair": {Cert: p.path("ca.crt"), Key: p.path("empty.pem")},
	} {
		if _, err := c.Config(); err == nil {
			t.Errorf("%s: accepted", name)
		} else if strings.Contains(err.Error(), "PRIVATE KEY-----") {
			t.Errorf("%s: the error quotes key material: %v", name, err)
		}
	}
}
