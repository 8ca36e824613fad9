package devstack

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// istioNamespace is the namespace an Istio installation runs its control plane and
// ingress gateway in. EMCO's its puts the gateways' Gateway, ServiceEntry, DestinationRule
// and credential Secret there, and ca-certs its KNCC ConfigCtrl.
const istioNamespace = "istio-system"

// installedNamespaces are the namespaces of the software whose CRDs every local cluster
// serves (ClusterCRDFiles): Istio's, and cert-manager's, where ca-certs distributes a
// cluster issuer's CA Secret. Neither EMCO's rsync nor temco's apply creates a namespace,
// so every local cluster has them, as a cluster with both installed does.
var installedNamespaces = []string{istioNamespace, CertManagerNamespace}

// ensureInstalledNamespaces creates installedNamespaces on the running cluster, unless
// they exist.
func (c *Cluster) ensureInstalledNamespaces(ctx context.Context) error {
	cs, err := c.Clientset()
	if err != nil {
		return err
	}
	for _, ns := range installedNamespaces {
		if err := ensureNamespace(ctx, cs, ns); err != nil {
			return fmt.Errorf("cluster %s: %w", c.Name, err)
		}
	}
	return nil
}

// ensureNamespace creates the namespace; one that exists (a restart on the same data,
// or a user made it) is left as it is. A create the server was too slow to finish is
// tried again.
func ensureNamespace(ctx context.Context, cs kubernetes.Interface, name string) error {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	err := retryTransient(ctx, applyBound, func(ctx context.Context) error {
		_, err := cs.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			return nil
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("create namespace %s: %w", name, err)
	}
	return nil
}
