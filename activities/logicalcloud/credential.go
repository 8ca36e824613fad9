package logicalcloud

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	certificatesv1 "k8s.io/api/certificates/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/temco/temco/activities/cluster"
	"github.com/temco/temco/internal/adapters/credentials"
	"github.com/temco/temco/internal/adapters/csr"
	"github.com/temco/temco/internal/core/lifecycle"
	"github.com/temco/temco/internal/core/model"
)

// credentialLifetime is how long an issued user certificate is valid.
const credentialLifetime = 365 * 24 * time.Hour

// issue gives the cloud's user a credential on a cluster, unless it has one: a new key,
// a CertificateSigningRequest approved on the user's behalf and signed by the cluster,
// and a kubeconfig confined to the cloud's namespace, stored sealed. The key never
// leaves this function except inside that sealed kubeconfig.
//
// On a GitOps cluster no certificate is issued (dcm submits no CSR there, and temco
// cannot reach the cluster's API): the credential kept is the name of the cloud's
// account there, which the objects just committed bound to the cloud's roles — on fluxcd
// its ServiceAccount, which Flux impersonates to apply the cloud's deployments; on
// anthos the reconciler of its RepoSync, which applies them.
func (a *Activities) issue(ctx context.Context, cloudID string, c cloud, clusterKey string) error {
	if c.spec.Level == model.LevelAdmin {
		return nil
	}
	access, err := a.Clients.GitOpsAccess(ctx, clusterKey)
	if err != nil {
		return err
	}
	existing, _, err := a.Credentials.Get(ctx, cloudID, clusterKey)
	if err != nil && !errors.Is(err, credentials.ErrNotFound) {
		return err
	}
	if access != nil {
		namespace, name, aerr := c.account(access)
		if aerr != nil {
			return invalid("%s: %v", cloudID, aerr)
		}
		account := cluster.CloudAccountCredential(namespace, name)
		if err == nil && bytes.Equal(existing, account) {
			return nil
		}
		return a.Credentials.Put(ctx, cloudID, clusterKey, account)
	}
	if err == nil && !cluster.IsCloudAccountCredential(existing) {
		return nil // issued before (a cluster that was reached through git gets a certificate now)
	}
	cfg, cs, err := a.admin(ctx, clusterKey)
	if err != nil {
		return err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	csrDER, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: pkix.Name{CommonName: c.user()}}, key)
	if err != nil {
		return err
	}
	cert, err := signed(ctx, cs, csrName(cloudID), pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: csrDER}))
	if err != nil {
		return lifecycle.Within(err, "credential of %s on %s", cloudID, clusterKey)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return err
	}
	kc := clientcmdapi.NewConfig()
	kc.Clusters[clusterKey] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData, InsecureSkipTLSVerify: cfg.Insecure}
	kc.AuthInfos[c.user()] = &clientcmdapi.AuthInfo{ClientCertificateData: cert,
		ClientKeyData: pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})}
	kc.Contexts[c.name] = &clientcmdapi.Context{Cluster: clusterKey, AuthInfo: c.user(), Namespace: c.spec.Namespace}
	kc.CurrentContext = c.name
	data, err := clientcmd.Write(*kc)
	if err != nil {
		return err
	}
	return a.Credentials.Put(ctx, cloudID, clusterKey, data)
}

// signed submits a CSR (replacing a leftover of an earlier attempt), approves it and
// waits for the cluster's signer to issue the certificate.
func signed(ctx context.Context, cs kubernetes.Interface, name string, request []byte) ([]byte, error) {
	csrs := cs.CertificatesV1().CertificateSigningRequests()
	if err := csrs.Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return nil, err
	}
	seconds := int32(credentialLifetime / time.Second)
	_, err := csrs.Create(ctx, &certificatesv1.CertificateSigningRequest{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: certificatesv1.CertificateSigningRequestSpec{Request: request, SignerName: certificatesv1.KubeAPIServerClientSignerName,
			ExpirationSeconds: &seconds, Usages: []certificatesv1.KeyUsage{certificatesv1.UsageClientAuth}},
	}, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("submit CertificateSigningRequest %s: %w", name, err)
	}
	if err := csr.Approve(ctx, csrs, name, "TemcoLogicalCloud", "approved by temco for a logical cloud user"); err != nil {
		return nil, err
	}
	cert, err := csr.Wait{Timeout: signWait, Poll: 200 * time.Millisecond, Heartbeat: func(what string) { activity.RecordHeartbeat(ctx, what) }}.
		Certificate(ctx, csrs, name)
	var refusal *csr.Refused
	switch {
	case errors.As(err, &refusal): // a policy of the cluster's: asking again changes nothing
		return nil, temporal.NewNonRetryableApplicationError(fmt.Sprintf("CertificateSigningRequest %s was %s by the cluster: %s %s",
			name, refusal.Condition, refusal.Reason, refusal.Message), lifecycle.ErrInvalidInput, nil)
	case errors.Is(err, csr.ErrNotSigned):
		return nil, fmt.Errorf("%w: does the cluster's kube-controller-manager sign for %s?", err, certificatesv1.KubeAPIServerClientSignerName)
	}
	return cert, err
}

// signWait bounds one attempt's wait for the cluster's signature; the activity is then
// retried, its status saying why.
const signWait = 2 * time.Minute

// revoke forgets the cloud's credential on a cluster and deletes its CSR there. (A signed
// certificate cannot be withdrawn: the deleted role bindings are what ends its rights.)
// A GitOps cluster has no CSR: the ServiceAccount went with the cloud's other objects.
func (a *Activities) revoke(ctx context.Context, cloudID, clusterKey string) error {
	if gitOps, err := a.Clients.GitOps(ctx, clusterKey); err != nil {
		return err
	} else if gitOps {
		return a.Credentials.Delete(ctx, cloudID, clusterKey)
	}
	_, cs, err := a.admin(ctx, clusterKey)
	if err != nil {
		return err
	}
	err = cs.CertificatesV1().CertificateSigningRequests().Delete(ctx, csrName(cloudID), metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	return a.Credentials.Delete(ctx, cloudID, clusterKey)
}

// admin is a client of the cluster with its registered credentials.
func (a *Activities) admin(ctx context.Context, clusterKey string) (*rest.Config, kubernetes.Interface, error) {
	cfg, err := a.Clients.Admin(ctx, clusterKey)
	if err != nil {
		return nil, nil, err
	}
	cs, err := kubernetes.NewForConfig(cfg)
	return cfg, cs, err
}
