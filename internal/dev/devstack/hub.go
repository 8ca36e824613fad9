package devstack

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// HubNamespace is the namespace of `temco hub` on the stack's hub (cluster1): its lease,
// and the Secrets (kubeconfigs) its cluster-scoped objects name.
const HubNamespace = "temco-system"

// Hub is the cluster temco's declarative kinds are kept on: cluster1.
func (s *Stack) Hub() *Cluster { return s.Clusters[0] }

// StartHub (re)starts `temco hub` against cluster1 and waits until it is ready.
func (s *Stack) StartHub(ctx context.Context) error {
	cs, err := s.Hub().Clientset()
	if err != nil {
		return err
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: HubNamespace}}
	if _, err := cs.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("hub namespace: %w", err)
	}
	if s.hubPort == 0 {
		if s.hubPort, err = FreePort(); err != nil {
			return err
		}
	}
	env := append(s.env(), "KUBECONFIG="+s.Hub().Kubeconfig(), "TEMCO_API=http://127.0.0.1:"+strconv.Itoa(s.cfg.APIPort),
		"TEMCO_HUB_NAMESPACE="+HubNamespace, "TEMCO_HUB_HEALTH_ADDR=127.0.0.1:"+strconv.Itoa(s.hubPort))
	p, err := StartProc("temco hub", filepath.Join(s.cfg.DataDir, "logs", "hub.log"), s.cfg.Self, []string{"hub"}, env)
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.HubProc = p
	s.mu.Unlock()
	ready := fmt.Sprintf("http://127.0.0.1:%d/readyz", s.hubPort)
	return WaitReady(ctx, p, 60*time.Second, func(ctx context.Context) error { return HTTPOK(ctx, ready) })
}
