package cluster

import (
	"testing"

	"k8s.io/client-go/rest"
)

// Clusters behind one API server with the same credentials share a connection; any
// difference in server or credentials gets its own.
func TestConnectionsAreSharedPerServerAndCredentials(t *testing.T) {
	base := func() *rest.Config {
		return &rest.Config{Host: "https://10.0.0.1:6443", TLSClientConfig: rest.TLSClientConfig{CAData: []byte("ca"), CertData: []byte("c"), KeyData: []byte("k")}}
	}
	c := &Clients{}
	plain := &rest.Config{Host: "http://10.0.0.1:8080", BearerToken: "t"}
	a, err := c.conn(plain)
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := c.conn(&rest.Config{Host: "http://10.0.0.1:8080", BearerToken: "t"}); b != a {
		t.Error("the same server and credentials got a second connection")
	}
	if connKey(base()) != connKey(base()) {
		t.Error("equal configurations have different keys")
	}
	for name, edit := range map[string]func(*rest.Config){
		"server": func(r *rest.Config) { r.Host = "https://10.0.0.2:6443" },
		"CA":     func(r *rest.Config) { r.CAData = []byte("other") },
		"key":    func(r *rest.Config) { r.KeyData = []byte("other") },
		"token":  func(r *rest.Config) { r.BearerToken = "t" },
	} {
		cfg := base()
		edit(cfg)
		if connKey(cfg) == connKey(base()) {
			t.Errorf("another %s shares the connection", name)
		}
	}
}

// Every token used on one server shares the server's HTTP transport (its connections); a
// client certificate is a TLS identity of its own. Beyond MaxConns, the least recently
// used connection is dropped and made anew when needed.
func TestTokensShareTheirServersTransportAndConnectionsAreBounded(t *testing.T) {
	c := &Clients{MaxConns: 2}
	server := func(token string) *rest.Config {
		return &rest.Config{Host: "https://10.0.0.1:6443", BearerToken: token, TLSClientConfig: rest.TLSClientConfig{Insecure: true}}
	}
	a, err := c.conn(server("a"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := c.conn(server("b"))
	if err != nil {
		t.Fatal(err)
	}
	if a == b {
		t.Fatal("two tokens share a connection")
	}
	if c.endpoints.Len() != 1 {
		t.Errorf("%d endpoints (transports, discovery) for one server and TLS identity, want 1", c.endpoints.Len())
	}
	if a.endpoint != b.endpoint {
		t.Error("two tokens on one server read its APIs twice")
	}
	if endpointKey(server("a")) == endpointKey(&rest.Config{Host: "https://10.0.0.1:6443", TLSClientConfig: rest.TLSClientConfig{Insecure: true, CertData: []byte("c"), KeyData: []byte("k")}}) {
		t.Error("a client certificate shares the transport of token clients")
	}
	if _, err := c.conn(server("c")); err != nil {
		t.Fatal(err)
	}
	if c.conns.Len() != 2 {
		t.Errorf("%d connections kept, want MaxConns (2)", c.conns.Len())
	}
	if again, _ := c.conn(server("a")); again == a {
		t.Error("the least recently used connection was kept beyond MaxConns")
	}
}
