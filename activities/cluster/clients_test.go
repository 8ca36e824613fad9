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
