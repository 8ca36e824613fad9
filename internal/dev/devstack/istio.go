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
// and credential Secret there, and ca-certs its KNCC ConfigCtrl; neither EMCO's rsync nor
// temco's apply creates a namespace, so every local cluster has it, as a cluster with
// Istio installed does (its CRDs come with ClusterCRDFiles).
const istioNamespace = "istio-system"

// ensureIstioNamespace creates istioNamespace on the running cluster unless it exists.
func (c *Cluster) ensureIstioNamespace(ctx context.Context) error {
	cs, err := c.Clientset()
	if err != nil {
		return err
	}
	if err := ensureNamespace(ctx, cs, istioNamespace); err != nil {
		return fmt.Errorf("cluster %s: %w", c.Name, err)
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
