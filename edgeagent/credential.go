package edgeagent

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// Credentials keeps the agent's credential where a restart finds it: it joins only when
// Load finds none.
type Credentials interface {
	Load(ctx context.Context) (string, error) // "" when none is kept
	Save(ctx context.Context, credential string) error
}

// File keeps the credential in a file (mode 0600), its folder made when missing.
type File string

// Load reads the file; a missing one holds none.
func (f File) Load(context.Context) (string, error) {
	b, err := os.ReadFile(string(f))
	if errors.Is(err, os.ErrNotExist) {
		return "", nil
	}
	return strings.TrimSpace(string(b)), err
}

// Save writes the file.
func (f File) Save(_ context.Context, credential string) error {
	if err := os.MkdirAll(filepath.Dir(string(f)), 0o700); err != nil {
		return err
	}
	return os.WriteFile(string(f), []byte(credential+"\n"), 0o600)
}

// CredentialKey is the key of the credential in its Secret.
const CredentialKey = "credential"

// Secret keeps the credential in a Secret of the agent's own cluster (in a pod: a file
// would be lost with the pod, and the join token is used once).
type Secret struct {
	Client          kubernetes.Interface
	Namespace, Name string
}

// Load reads the Secret; a missing one holds none.
func (s Secret) Load(ctx context.Context) (string, error) {
	sec, err := s.Client.CoreV1().Secrets(s.Namespace).Get(ctx, s.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("read the credential's Secret %s/%s: %w", s.Namespace, s.Name, err)
	}
	return strings.TrimSpace(string(sec.Data[CredentialKey])), nil
}

// Save creates the Secret, or replaces its data.
func (s Secret) Save(ctx context.Context, credential string) error {
	sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: s.Name, Namespace: s.Namespace,
		Labels: map[string]string{"app.kubernetes.io/name": "temco-agent"}},
		Data: map[string][]byte{CredentialKey: []byte(credential)}}
	_, err := s.Client.CoreV1().Secrets(s.Namespace).Create(ctx, sec, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		_, err = s.Client.CoreV1().Secrets(s.Namespace).Update(ctx, sec, metav1.UpdateOptions{})
	}
	if err != nil {
		return fmt.Errorf("keep the credential in Secret %s/%s: %w", s.Namespace, s.Name, err)
	}
	return nil
}
