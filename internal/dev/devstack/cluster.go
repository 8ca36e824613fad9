package devstack

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// Cluster is one real local Kubernetes cluster: etcd, kube-apiserver,
// kube-controller-manager, kube-scheduler and kwok with one fake Ready node, so
// Deployments get ReplicaSets and Pods and become Available. Ports: BasePort is etcd's
// client port, +1 its peer port, +2 the apiserver.
type Cluster struct {
	Name     string
	BinDir   string // holds etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kwok
	Dir      string // data, keys, logs and kubeconfig of this cluster
	BasePort int
	// The node's hardware, as node feature discovery and device plugins would report it:
	// extra labels, and extra capacity (extended resources such as example.com/gpu), which
	// is also allocatable. Both are set on an existing node too, so a restart converges.
	NodeLabels    map[string]string
	NodeResources corev1.ResourceList
	// AuditApplies has kube-apiserver log every patch of a ConfigMap (server-side applies
	// among them) to audit.log in Dir: tests count applies per object from it.
	AuditApplies bool

	mu    sync.Mutex // procs: a restart replaces one while others read them
	procs map[string]*Proc
}

// NodeName is the fake node kwok keeps Ready.
const NodeName = "kwok-node-0"

// APIPort is the apiserver's port.
func (c *Cluster) APIPort() int { return c.BasePort + 2 }

// Kubeconfig is the path of the admin kubeconfig.
func (c *Cluster) Kubeconfig() string { return filepath.Join(c.Dir, "kubeconfig") }

// Ports lists the ports this cluster binds, for conflict checks.
func (c *Cluster) Ports() map[string]int {
	return map[string]int{
		c.Name + " etcd": c.BasePort, c.Name + " etcd peer": c.BasePort + 1, c.Name + " kube-apiserver": c.APIPort(),
	}
}

// Start brings the cluster up and returns once the apiserver is ready, the node and
// Istio's namespace exist and the apiserver serves the custom resources of
// ClusterCRDFiles (crds/ and the modules' definitions in BinDir/crds). It waits for one
// of the machine's start slots (startGate) first.
func (c *Cluster) Start(ctx context.Context) error {
	return c.inStartSlot(ctx, func() error { return c.bringUp(ctx) })
}

// bringUp is Start within its slot.
func (c *Cluster) bringUp(ctx context.Context) error {
	c.mu.Lock()
	c.procs = map[string]*Proc{}
	c.mu.Unlock()
	pki := clusterPKI{dir: filepath.Join(c.Dir, "pki")}
	if err := pki.ensure(c.Name); err != nil {
		return fmt.Errorf("cluster %s keys: %w", c.Name, err)
	}
	if err := c.writeKubeconfig(pki); err != nil {
		return err
	}
	if err := c.startEtcd(ctx); err != nil {
		return err
	}
	if err := c.startAPIServer(ctx); err != nil {
		c.Stop()
		return err
	}
	// The definitions are applied first, so the apiserver establishes them while the
	// controllers start and the node is registered.
	crds, err := c.applyCRDs(ctx)
	if err != nil {
		c.Stop()
		return err
	}
	if err := c.ensureInstalledNamespaces(ctx); err != nil {
		c.Stop()
		return err
	}
	if err := c.startControllers(); err != nil {
		c.Stop()
		return err
	}
	if err := c.ensureNode(ctx); err != nil {
		c.Stop()
		return err
	}
	if err := c.awaitCRDs(ctx, crds); err != nil {
		c.Stop()
		return err
	}
	return nil
}

// clusterNice is the CPU priority (nice value) of a local cluster's running processes.
// They stand in for remote machines: on a shared dev machine they yield the CPU to the
// control plane (Temporal, FerretDB, temco) instead of delaying its every step, which a
// cluster on its own machine would never do. They start at the normal priority, in a
// start slot, and yieldCPU lowers them once ready: a start that yields to everything
// may never end on a busy machine.
const clusterNice = 10

func (c *Cluster) startProc(name string, args ...string) (*Proc, error) {
	p, err := StartProc(c.Name+"/"+name, filepath.Join(c.Dir, name+".log"), filepath.Join(c.BinDir, name), args, nil)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	c.procs[name] = p
	c.mu.Unlock()
	return p, nil
}

// inStartSlot runs start in one of the machine's cluster start slots, then lowers the
// cluster's processes to clusterNice.
func (c *Cluster) inStartSlot(ctx context.Context, start func() error) error {
	release, err := clusterStarts.take(ctx)
	if err != nil {
		return err
	}
	defer release()
	defer c.yieldCPU()
	return start()
}

// yieldCPU lowers every thread of the cluster's running processes to clusterNice (each
// leads its own process group, which PRIO_PGRP covers thread by thread).
func (c *Cluster) yieldCPU() {
	for _, p := range c.Procs() {
		if p.Exited() == nil {
			_ = syscall.Setpriority(syscall.PRIO_PGRP, p.Cmd.Process.Pid, clusterNice)
		}
	}
}

// proc is the named component's process (nil: not running).
func (c *Cluster) proc(name string) *Proc {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.procs[name]
}

func (c *Cluster) startEtcd(ctx context.Context) error {
	client := "http://127.0.0.1:" + strconv.Itoa(c.BasePort)
	peer := "http://127.0.0.1:" + strconv.Itoa(c.BasePort+1)
	p, err := c.startProc("etcd", "--name", c.Name, "--data-dir", filepath.Join(c.Dir, "etcd"),
		"--listen-client-urls", client, "--advertise-client-urls", client,
		"--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
		"--initial-cluster", c.Name+"="+peer, "--quota-backend-bytes", strconv.Itoa(512<<20),
		"--snapshot-count", "10000", "--log-level", "warn")
	if err != nil {
		return err
	}
	return WaitReady(ctx, p, time.Minute, func(ctx context.Context) error {
		return dialable(ctx, "127.0.0.1:"+strconv.Itoa(c.BasePort))
	})
}

// StartAPIServer (re)starts kube-apiserver in a start slot and waits for /readyz; tests
// use it with StopAPIServer to make a cluster unreachable for a while.
func (c *Cluster) StartAPIServer(ctx context.Context) error {
	return c.inStartSlot(ctx, func() error { return c.startAPIServer(ctx) })
}

func (c *Cluster) startAPIServer(ctx context.Context) error {
	pki := clusterPKI{dir: filepath.Join(c.Dir, "pki")}
	var audit []string
	if c.AuditApplies {
		policy := filepath.Join(c.Dir, "audit-policy.yaml")
		if err := os.WriteFile(policy, []byte(auditPolicy), 0o644); err != nil {
			return err
		}
		audit = []string{"--audit-policy-file=" + policy, "--audit-log-path=" + filepath.Join(c.Dir, "audit.log"),
			"--audit-log-format=json", "--audit-log-mode=blocking"}
	}
	p, err := c.startProc("kube-apiserver", append(audit,
		"--etcd-servers=http://127.0.0.1:"+strconv.Itoa(c.BasePort),
		"--bind-address=127.0.0.1", "--advertise-address=127.0.0.1", "--secure-port="+strconv.Itoa(c.APIPort()),
		"--tls-cert-file="+pki.path("apiserver.crt"), "--tls-private-key-file="+pki.path("apiserver.key"),
		"--client-ca-file="+pki.path("ca.crt"), "--authorization-mode=RBAC",
		"--service-account-issuer=https://kubernetes.default.svc", "--service-account-key-file="+pki.path("sa.key"),
		"--service-account-signing-key-file="+pki.path("sa.key"), "--api-audiences=https://kubernetes.default.svc",
		"--service-cluster-ip-range=10.0.0.0/24", "--allow-privileged=true", "--profiling=false",
		// No real endpoints exist on loopback; this silences the kubernetes Endpoints reconciler.
		"--endpoint-reconciler-type=none", "--cert-dir="+filepath.Join(c.Dir, "apiserver-certs"))...)
	if err != nil {
		return err
	}
	cs, err := c.Clientset()
	if err != nil {
		return err
	}
	// Its RBAC bootstrap has taken over 90 s on a machine running four stacks, before the
	// start slots: slow, not failed.
	return WaitReady(ctx, p, 3*time.Minute, func(ctx context.Context) error {
		return cs.Discovery().RESTClient().Get().AbsPath("/readyz").Do(ctx).Error()
	})
}

// auditPolicy logs the patches of ConfigMaps once each, when answered, and nothing else.
const auditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived, ResponseStarted, Panic]
rules:
- level: Metadata
  verbs: [patch]
  resources: [{group: "", resources: [configmaps]}]
- level: None
`

// StopAPIServer stops kube-apiserver only.
func (c *Cluster) StopAPIServer() {
	c.proc("kube-apiserver").Stop(10 * time.Second)
	c.mu.Lock()
	delete(c.procs, "kube-apiserver")
	c.mu.Unlock()
}

// clusterControllers are the components that follow the apiserver, in start order.
var clusterControllers = []string{"kube-controller-manager", "kube-scheduler", "kwok"}

func (c *Cluster) startControllers() error {
	for _, name := range clusterControllers {
		if err := c.startController(name); err != nil {
			return err
		}
	}
	return nil
}

// startController (re)starts one of clusterControllers. None has a readiness check: they
// serve nothing (--secure-port=0) and only act through the apiserver.
func (c *Cluster) startController(name string) error {
	pki := clusterPKI{dir: filepath.Join(c.Dir, "pki")}
	kc := c.Kubeconfig()
	common := []string{"--kubeconfig=" + kc, "--authentication-kubeconfig=" + kc, "--authorization-kubeconfig=" + kc,
		"--leader-elect=false", "--secure-port=0", "--bind-address=127.0.0.1"}
	var args []string
	switch name {
	case "kube-controller-manager":
		// It also signs CertificateSigningRequests with the cluster CA. Its HPA controller is
		// off: there is no metrics server, so tests set HPAs' status themselves (the
		// autoscaler's signals) and nothing may overwrite it.
		args = append(common, "--controllers=*,-horizontal-pod-autoscaler-controller",
			"--service-account-private-key-file="+pki.path("sa.key"), "--root-ca-file="+pki.path("ca.crt"),
			"--use-service-account-credentials=false",
			"--cluster-signing-cert-file="+pki.path("ca.crt"), "--cluster-signing-key-file="+pki.path("ca.key"))
	case "kube-scheduler":
		args = common
	case "kwok":
		args = []string{"--kubeconfig=" + kc, "--manage-all-nodes=false",
			"--manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake",
			"--node-ip=10.244.0.1", "--node-lease-duration-seconds=40", "--cidr=10.244.0.0/16", "--server-address="}
	default:
		return fmt.Errorf("cluster %s: no component %q", c.Name, name)
	}
	_, err := c.startProc(name, args...)
	return err
}

// startComponent (re)starts one named component of the running cluster and waits until it
// is ready, as Start does; the supervisor restarts a crashed one with it.
func (c *Cluster) startComponent(ctx context.Context, name string) error {
	return c.inStartSlot(ctx, func() error {
		switch name {
		case "etcd":
			return c.startEtcd(ctx)
		case "kube-apiserver":
			return c.startAPIServer(ctx)
		}
		return c.startController(name)
	})
}

// Clientset is an admin client of this cluster.
func (c *Cluster) Clientset() (*kubernetes.Clientset, error) {
	cfg, err := c.restConfig()
	if err != nil {
		return nil, err
	}
	return kubernetes.NewForConfig(cfg)
}

// Dynamic is an admin client of this cluster for objects of any kind, custom ones included.
func (c *Cluster) Dynamic() (*dynamic.DynamicClient, error) {
	cfg, err := c.restConfig()
	if err != nil {
		return nil, err
	}
	return dynamic.NewForConfig(cfg)
}

func (c *Cluster) restConfig() (*rest.Config, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", c.Kubeconfig())
	if err != nil {
		return nil, err
	}
	// A local test cluster needs no client-side throttle: client-go's default (5 requests/s)
	// made preparing 10,000 namespaces take half an hour.
	cfg.QPS, cfg.Burst = -1, 0
	return cfg, nil
}

func (c *Cluster) writeKubeconfig(pki clusterPKI) error {
	ca, err := pki.read("ca.crt")
	if err != nil {
		return err
	}
	crt, err := pki.read("admin.crt")
	if err != nil {
		return err
	}
	key, err := pki.read("admin.key")
	if err != nil {
		return err
	}
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[c.Name] = &clientcmdapi.Cluster{
		Server: "https://127.0.0.1:" + strconv.Itoa(c.APIPort()), CertificateAuthorityData: ca,
	}
	cfg.AuthInfos[c.Name+"-admin"] = &clientcmdapi.AuthInfo{ClientCertificateData: crt, ClientKeyData: key}
	cfg.Contexts[c.Name] = &clientcmdapi.Context{Cluster: c.Name, AuthInfo: c.Name + "-admin"}
	cfg.CurrentContext = c.Name
	if err := os.MkdirAll(c.Dir, 0o700); err != nil {
		return err
	}
	return clientcmd.WriteToFile(*cfg, c.Kubeconfig())
}

// Procs lists the running processes of the cluster.
func (c *Cluster) Procs() []*Proc {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []*Proc
	for _, p := range c.procs {
		out = append(out, p)
	}
	return out
}

// Stop ends the components first (together), etcd last.
func (c *Cluster) Stop() {
	c.mu.Lock()
	procs := c.procs
	c.procs = map[string]*Proc{}
	c.mu.Unlock()
	done := make(chan struct{})
	n := 0
	for name, p := range procs {
		if name == "etcd" {
			continue
		}
		n++
		go func() { p.Stop(10 * time.Second); done <- struct{}{} }()
	}
	for range n {
		<-done
	}
	if p := procs["etcd"]; p != nil {
		p.Stop(10 * time.Second)
	}
}
