// Package tlsconfig builds TLS configurations from PEM files mounted into the pod: the
// Temporal client's (server-verified, optionally mutual) and the API server's. Both
// reread the key pair when its file changes, so a rotated certificate (cert-manager,
// a renewed Secret) takes effect without a restart.
package tlsconfig

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"
)

// Client are the TLS settings of a client connection.
type Client struct {
	Enabled    bool   // TLS with the system roots, even when no file is given
	CA         string // PEM roots that verify the server, instead of the system's
	Cert, Key  string // client certificate and key, for mutual TLS
	ServerName string // expected in the server certificate, when not the dialled host
}

// Config returns the client configuration, or nil when TLS is off.
func (c Client) Config() (*tls.Config, error) {
	if !c.Enabled && c.CA == "" && c.Cert == "" && c.Key == "" {
		return nil, nil
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: c.ServerName}
	if c.CA != "" {
		pem, err := os.ReadFile(c.CA)
		if err != nil {
			return nil, fmt.Errorf("TLS CA: %w", err)
		}
		cfg.RootCAs = x509.NewCertPool()
		if !cfg.RootCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("TLS CA %s holds no PEM certificate", c.CA)
		}
	}
	if (c.Cert == "") != (c.Key == "") {
		return nil, errors.New("a TLS client certificate needs both its certificate and its key file")
	}
	if c.Cert != "" {
		kp, err := newKeyPair(c.Cert, c.Key)
		if err != nil {
			return nil, err
		}
		cfg.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return kp.get() }
	}
	return cfg, nil
}

// Server returns a server configuration serving the key pair in cert and key.
func Server(cert, key string) (*tls.Config, error) {
	kp, err := newKeyPair(cert, key)
	if err != nil {
		return nil, err
	}
	return &tls.Config{MinVersion: tls.VersionTLS12,
		GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) { return kp.get() }}, nil
}

// keyPair is a certificate and key reloaded when either file's modification time changes.
type keyPair struct {
	cert, key string
	mu        sync.Mutex
	loaded    *tls.Certificate
	stamp     [2]time.Time
}

func newKeyPair(cert, key string) (*keyPair, error) {
	kp := &keyPair{cert: cert, key: key}
	if _, err := kp.get(); err != nil {
		return nil, err
	}
	return kp, nil
}

// get returns the current pair; a pair that fails to load after a change keeps the old
// one in use (a half-written Secret update), reporting the error only at the start.
func (kp *keyPair) get() (*tls.Certificate, error) {
	kp.mu.Lock()
	defer kp.mu.Unlock()
	var stamp [2]time.Time
	for i, f := range []string{kp.cert, kp.key} {
		fi, err := os.Stat(f)
		if err != nil {
			return kp.fallback(fmt.Errorf("TLS key pair: %w", err))
		}
		stamp[i] = fi.ModTime()
	}
	if kp.loaded != nil && stamp == kp.stamp {
		return kp.loaded, nil
	}
	c, err := tls.LoadX509KeyPair(kp.cert, kp.key)
	if err != nil {
		return kp.fallback(fmt.Errorf("TLS key pair %s, %s: %w", kp.cert, kp.key, err))
	}
	kp.loaded, kp.stamp = &c, stamp
	return kp.loaded, nil
}

func (kp *keyPair) fallback(err error) (*tls.Certificate, error) {
	if kp.loaded != nil {
		return kp.loaded, nil
	}
	return nil, err
}
