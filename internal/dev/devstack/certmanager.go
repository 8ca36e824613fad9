package devstack

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// CertManager is cert-manager's controller (tools/build.sh builds it) run outside one
// local cluster, as Flux's controllers run outside the GitOps cluster: it reconciles the
// cluster's cert-manager issuers, Certificates and CertificateRequests (its own approver
// approves the requests), so that the cluster can sign what ca-certs' enrolment asks with
// a cert-manager issuer. The cluster holds cert-manager's definitions like every local
// cluster (moduleCRDFolders); no webhook runs (SelfSigned, CA, Vault and Venafi issuers
// need none), and neither do ACME and the ingress shim, which need pods that serve.
type CertManager struct {
	Cluster *Cluster
	BinDir  string               // holds cert-manager-controller
	proc    atomic.Pointer[Proc] // replaced by a restart while others read it
}

const (
	certManagerBinary = "cert-manager-controller"
	// CertManagerNamespace is cert-manager's own namespace on the cluster: where a
	// ClusterIssuer's Secrets are (--cluster-resource-namespace), as a standard install
	// has it.
	CertManagerNamespace = "cert-manager"
	// certManagerControllers: every controller cert-manager runs by default but ACME's and
	// the ingress shim.
	certManagerControllers = "*,-orders,-challenges,-certificaterequests-issuer-acme,-ingress-shim"
)

// MetricsPort is the port of its metrics, the cluster's first free port in its range of
// ten (the GitOps cluster's Flux takes +3 .. +7 of its own).
func (m *CertManager) MetricsPort() int { return m.Cluster.BasePort + 3 }

// Log is where it logs, beside the cluster's components.
func (m *CertManager) Log() string { return filepath.Join(m.Cluster.Dir, certManagerBinary+".log") }

func (m *CertManager) ports() map[string]int {
	return map[string]int{m.Cluster.Name + " cert-manager metrics": m.MetricsPort()}
}

// Start creates cert-manager's namespace on the running cluster, starts the controller and
// waits until it serves its metrics (v1.11 has no health endpoint; the controllers start
// right after, with no leader election).
func (m *CertManager) Start(ctx context.Context) error {
	dc, err := m.Cluster.Dynamic()
	if err != nil {
		return err
	}
	ns := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace",
		"metadata": map[string]any{"name": CertManagerNamespace}}}
	if err := apply(ctx, dc, namespaceResource, ns); err != nil {
		return fmt.Errorf("cluster %s: %w", m.Cluster.Name, err)
	}
	metrics := "127.0.0.1:" + strconv.Itoa(m.MetricsPort())
	p, err := StartProc(m.Cluster.Name+"/cert-manager", m.Log(), "nice", []string{"-n", strconv.Itoa(clusterNice),
		filepath.Join(m.BinDir, certManagerBinary), "--kubeconfig=" + m.Cluster.Kubeconfig(), "--leader-elect=false",
		"--cluster-resource-namespace=" + CertManagerNamespace, "--metrics-listen-address=" + metrics,
		"--controllers=" + certManagerControllers}, nil)
	if err != nil {
		return err
	}
	m.proc.Store(p)
	return WaitReady(ctx, p, 60*time.Second, func(ctx context.Context) error { return HTTPOK(ctx, "http://"+metrics+"/metrics") })
}

// Proc is the running controller (nil before Start).
func (m *CertManager) Proc() *Proc { return m.proc.Load() }

// Stop ends the controller.
func (m *CertManager) Stop() {
	m.proc.Load().Stop(10 * time.Second)
	m.proc.Store(nil)
}

func (m *CertManager) summary(w io.Writer) {
	fmt.Fprintf(w, "  cert-manager      controller on %s, metrics http://127.0.0.1:%d/metrics, log %s\n",
		m.Cluster.Name, m.MetricsPort(), m.Log())
}
