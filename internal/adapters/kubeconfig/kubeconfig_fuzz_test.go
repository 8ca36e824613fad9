package kubeconfig

import (
	"strings"
	"testing"

	"k8s.io/client-go/tools/clientcmd"
)

const valid = `apiVersion: v1
kind: Config
clusters:
- name: c1
  cluster: {server: "https://127.0.0.1:6443", certificate-authority-data: "dGVzdC1jYQ=="}
users:
- name: admin
  user: {client-certificate-data: "dGVzdC1jZXJ0", client-key-data: "S3CR3T-S3CR3T-S3CR3T==", token: "S3CR3T-TOKEN"}
contexts:
- name: c1
  context: {cluster: c1, user: admin, namespace: ns1}
current-context: c1
`

// Uploaded kubeconfigs are parsed without panics, without touching the host (files,
// plugins), and errors never quote the credentials they carry.
func FuzzParse(f *testing.F) {
	f.Add([]byte(valid))
	f.Add([]byte(strings.Replace(valid, "token: \"S3CR3T-TOKEN\"", "tokenFile: /var/run/secrets/S3CR3T", 1)))
	f.Add([]byte(strings.Replace(valid, `client-key-data: "S3CR3T-S3CR3T-S3CR3T=="`, "exec: {command: /bin/sh, apiVersion: client.authentication.k8s.io/v1}", 1)))
	f.Add([]byte(strings.Replace(valid, "current-context: c1", "current-context: c2", 1)))
	f.Add([]byte(strings.Replace(valid, `token: "S3CR3T-TOKEN"`, `username: u, password: "S3CR3T-PASSWORD"`, 1)))
	f.Add([]byte(`{"kind":"Config","clusters":[{"name":"a","cluster":{"server":"S3CR3T"}}]}`))
	f.Add([]byte("\x00\xff S3CR3T"))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := Parse(data)
		if err != nil {
			for _, c := range credentials(data) {
				if strings.Contains(err.Error(), c) {
					t.Fatalf("error quotes credential %q: %v", c, err)
				}
			}
			return
		}
		if p.Config.Host == "" || p.Config.ExecProvider != nil || p.Config.AuthProvider != nil ||
			p.Config.CAFile != "" || p.Config.CertFile != "" || p.Config.KeyFile != "" || p.Config.BearerTokenFile != "" {
			t.Fatalf("accepted a kubeconfig reaching outside itself: %+v", p.Config)
		}
	})
}

// credentials are the secret values of a kubeconfig that loads (names are not secrets).
func credentials(data []byte) []string {
	cfg, err := clientcmd.Load(data)
	if err != nil {
		return nil
	}
	var out []string
	for _, a := range cfg.AuthInfos {
		for _, v := range []string{a.Token, a.Password, string(a.ClientKeyData), string(a.ClientCertificateData)} {
			if len(v) >= 6 {
				out = append(out, v)
			}
		}
	}
	return out
}
