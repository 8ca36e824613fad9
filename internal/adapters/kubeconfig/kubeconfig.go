// Package kubeconfig turns an uploaded kubeconfig into a client configuration.
package kubeconfig

import (
	"errors"
	"fmt"
	"strings"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// Parsed is a usable kubeconfig: where to connect and, if its context names one,
// the namespace its current context names ("" when none).
type Parsed struct {
	Config    *rest.Config
	Namespace string
}

// Parse loads a kubeconfig and resolves its current context. Errors never quote the
// input: it holds credentials.
func Parse(data []byte) (*Parsed, error) {
	if len(strings.TrimSpace(string(data))) == 0 {
		return nil, errors.New("the kubeconfig is empty")
	}
	cfg, err := clientcmd.Load(data)
	if err != nil {
		return nil, errors.New("the file is not a kubeconfig (YAML or JSON of kind Config)")
	}
	if cfg.CurrentContext == "" && len(cfg.Contexts) != 1 {
		return nil, errors.New("the kubeconfig has no current-context")
	}
	if cfg.CurrentContext == "" {
		for name := range cfg.Contexts {
			cfg.CurrentContext = name
		}
	}
	if err := selfContained(cfg); err != nil {
		return nil, err
	}
	cc := clientcmd.NewDefaultClientConfig(*cfg, &clientcmd.ConfigOverrides{})
	rc, err := cc.ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("the kubeconfig is incomplete: %s", firstLine(err.Error()))
	}
	if rc.Host == "" {
		return nil, errors.New("the kubeconfig names no server")
	}
	return &Parsed{Config: rc, Namespace: cfg.Contexts[cfg.CurrentContext].Namespace}, nil
}

// selfContained refuses kubeconfigs that would make temco read files or run programs
// on its own hosts: credentials must be inline.
func selfContained(cfg *clientcmdapi.Config) error {
	for name, c := range cfg.Clusters {
		if c.CertificateAuthority != "" {
			return fmt.Errorf("cluster %q refers to a CA file; inline it as certificate-authority-data", name)
		}
	}
	for name, a := range cfg.AuthInfos {
		switch {
		case a.Exec != nil || a.AuthProvider != nil:
			return fmt.Errorf("user %q uses an exec or auth-provider plugin; use inline client certificates or a token", name)
		case a.ClientCertificate != "" || a.ClientKey != "":
			return fmt.Errorf("user %q refers to certificate files; inline them as client-certificate-data and client-key-data", name)
		case a.TokenFile != "":
			return fmt.Errorf("user %q refers to a token file; inline the token", name)
		}
	}
	return nil
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}
