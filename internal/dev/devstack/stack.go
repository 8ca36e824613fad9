package devstack

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	taskqueuepb "go.temporal.io/api/taskqueue/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/temco/temco/internal/core/seal"
	"github.com/temco/temco/internal/dev/gitserver"
)

// Config describes a local stack.
type Config struct {
	BinDir  string // built tools (.bin)
	DataDir string // all state (.data); reused by the next start
	Self    string // the temco binary, started as `temco api` and `temco worker`

	Clusters     int
	TemporalPort int
	UIPort       int
	MongoPort    int
	MongoBackend string // "sqlite" (default) or "postgresql" (faster; needs PostgreSQL installed)
	// TemporalBackend "postgresql" runs temporal-server on PostgreSQL with TemporalShards
	// history shards (0: DefaultShards), as production does; "" the CLI's dev server on SQLite.
	TemporalBackend string
	TemporalShards  int
	// Replicas of temco api and temco worker (0 or 1: one of each): the others listen on
	// free ports (APIs) and share the task queue.
	Replicas        int
	PostgresPort    int
	APIPort         int
	MetricsPort     int // the worker's /metrics and /healthz
	ClusterBasePort int // cluster i uses ClusterBasePort+10*i .. +2

	// GitOps adds cluster<Clusters+1>, which temco reaches only through git: Flux applies
	// what the stack's git server holds under clusters/<GitOpsProvider>+<cluster>. Its
	// range of ten ports also holds Flux's (+3 .. +7) and, by default, the git server's (+8).
	GitOps         bool
	GitOpsProvider string // default "local"
	GitPort        int    // the git server's port; 0: the GitOps cluster's base port + 8

	// CertManager runs cert-manager's controller against cluster1 (ca-certs' issuing
	// cluster in the tests), on port ClusterBasePort+3.
	CertManager bool

	// RegistryPort is the OCI registry's (CNCF distribution) and HelmRepoPort the Helm
	// repository's; 0: the last two of cluster1's range of ten, ClusterBasePort+8 and +9
	// (free ports without clusters).
	RegistryPort int
	HelmRepoPort int

	// Hub runs `temco hub` against cluster1, which then holds temco's declarative kinds.
	Hub bool

	// Traces runs Jaeger, the trace collector, and has temco's processes send it their
	// spans (OTEL_EXPORTER_OTLP_ENDPOINT); TracesPort is its query API's and UI's port,
	// OTLPPort its OTLP/HTTP receiver's (0: free ones); TracesUIAssets a built jaeger-ui
	// folder it serves as its UI ("": temco's trace viewer, traceview.go).
	Traces         bool
	TracesPort     int
	OTLPPort       int
	TracesUIAssets string

	// Agent adds one more cluster, after the plain ones and the GitOps one, which temco
	// reaches only through `temco agent` (docs/agent.md): the stack registers it as
	// agents+edge1 with spec.access "agent" and runs the agent with its kubeconfig.
	Agent bool

	// AuditApplies has the clusters temco applies to directly (not the GitOps one) audit
	// every patch of a ConfigMap (Cluster.AuditApplies).
	AuditApplies bool

	Namespace        string
	TaskQueue        string
	SearchAttributes map[string]string
	Out              io.Writer // progress and the summary
	Env              []string  // extra environment of temco api and worker
}

// nodeHardware sets the first clusters' nodes apart, so that hardware-aware placement
// (hpa) has a choice to make: cluster1 has AVX-512, cluster2 QuickAssist and two GPUs,
// the others nothing beyond CPU and memory.
var nodeHardware = []struct {
	labels    map[string]string
	resources corev1.ResourceList
}{
	{labels: map[string]string{"feature.node.kubernetes.io/cpu-cpuid.AVX512F": "true"}},
	{labels: map[string]string{"feature.node.kubernetes.io/intel_qat": "true"},
		resources: corev1.ResourceList{"example.com/gpu": resource.MustParse("2")}},
}

// Stack is a running local stack.
type Stack struct {
	// mu guards the processes a restart replaces (API, Worker, MoreAPIs, MoreWorkers,
	// HubProc, AgentProc) where the supervisor, Procs and Stop read them, and sv.
	mu       sync.Mutex
	cfg      Config
	Temporal *Temporal
	Postgres *Postgres // nil with the SQLite backend
	Mongo    *FerretDB
	Clusters []*Cluster
	Git      *gitserver.Server // with GitOps: the git server, run in this process
	GitOps   *GitOps           // with GitOps: the cluster temco reaches through Git
	API      *Proc
	Worker   *Proc
	// MoreAPIs and MoreWorkers are the replicas beyond the first (Config.Replicas); each
	// of MoreAPIs listens on the port in APIPorts of the same index.
	MoreAPIs, MoreWorkers []*Proc
	APIPorts              []int
	metricsPorts          []int // of MoreWorkers, by the same index
	KeyFile               string

	CertManager *CertManager // with CertManager: cert-manager's controller on cluster1

	Registry *Registry // the OCI registry (CNCF distribution): charts pushed as OCI artifacts
	HelmRepo *HelmRepo // the Helm chart repository (index.yaml and archives), run in this process

	Jaeger *Jaeger // with Traces: the trace collector

	HubProc *Proc // with Hub: temco hub
	hubPort int   // its /readyz

	AgentCluster *Cluster // with Agent: the cluster temco reaches only through its agent
	AgentProc    *Proc    // with Agent: temco agent, with AgentCluster's kubeconfig

	superviseOnce sync.Once
	sv            *Supervisor // once Supervise was called
}

// Start brings every component up in dependency order and waits for each to be ready.
// On failure everything already started is stopped again.
func Start(ctx context.Context, cfg Config) (*Stack, error) {
	s := &Stack{cfg: cfg, KeyFile: filepath.Join(cfg.DataDir, "encryption.keys")}
	s.Temporal = &Temporal{Bin: filepath.Join(cfg.BinDir, "temporal"), Dir: filepath.Join(cfg.DataDir, "temporal"),
		Port: cfg.TemporalPort, UIPort: cfg.UIPort, Namespace: cfg.Namespace, SearchAttributes: cfg.SearchAttributes,
		CodecEndpoint: fmt.Sprintf("http://127.0.0.1:%d/codec", cfg.APIPort)} // the UI decrypts payloads through temco api
	s.Mongo = &FerretDB{Bin: filepath.Join(cfg.BinDir, "ferretdb"), Dir: filepath.Join(cfg.DataDir, "ferretdb"), Port: cfg.MongoPort}
	switch cfg.MongoBackend {
	case "", "sqlite":
	case "postgresql":
		s.Postgres = &Postgres{Dir: filepath.Join(cfg.DataDir, "postgres"), Port: cfg.PostgresPort}
		s.Mongo.PostgresURL = s.Postgres.URL()
	default:
		return nil, fmt.Errorf("unknown MongoDB-wire backend %q: use sqlite or postgresql", cfg.MongoBackend)
	}
	switch cfg.TemporalBackend {
	case "":
	case "postgresql":
		if s.Postgres == nil {
			s.Postgres = &Postgres{Dir: filepath.Join(cfg.DataDir, "postgres"), Port: cfg.PostgresPort}
		}
		s.Temporal.Production = &productionServer{Server: filepath.Join(cfg.BinDir, "temporal-server"),
			SQLTool: filepath.Join(cfg.BinDir, "temporal-sql-tool"), Postgres: s.Postgres, Shards: cfg.TemporalShards}
	default:
		return nil, fmt.Errorf("unknown Temporal backend %q: use postgresql, or nothing for the dev server", cfg.TemporalBackend)
	}
	for i := range cfg.Clusters {
		name := "cluster" + strconv.Itoa(i+1)
		c := &Cluster{Name: name, BinDir: cfg.BinDir,
			Dir: filepath.Join(cfg.DataDir, "clusters", name), BasePort: cfg.ClusterBasePort + 10*i, AuditApplies: cfg.AuditApplies}
		if i < len(nodeHardware) {
			c.NodeLabels, c.NodeResources = nodeHardware[i].labels, nodeHardware[i].resources
		}
		s.Clusters = append(s.Clusters, c)
	}
	if cfg.GitOps {
		s.configureGitOps()
	}
	if cfg.Agent {
		s.configureAgent()
	}
	if cfg.CertManager && len(s.Clusters) > 0 {
		s.CertManager = &CertManager{Cluster: s.Clusters[0], BinDir: cfg.BinDir}
	}
	if err := s.configureArtifacts(); err != nil {
		return nil, err
	}
	if cfg.Traces {
		if err := s.configureTraces(); err != nil {
			return nil, err
		}
	}
	if err := s.checkPorts(); err != nil {
		return nil, err
	}
	if err := s.checkBinaries(); err != nil {
		return nil, err
	}
	if err := s.startInfrastructure(ctx); err != nil {
		s.Stop()
		return nil, err
	}
	if err := s.startTemco(ctx); err != nil {
		s.Stop()
		return nil, err
	}
	return s, nil
}

// plainClusters are the clusters started and stopped alike: Clusters and the agent
// cluster (the GitOps one starts with Flux and the git server).
func (s *Stack) plainClusters() []*Cluster {
	if s.AgentCluster == nil {
		return s.Clusters
	}
	return append(slices.Clone(s.Clusters), s.AgentCluster)
}

func (s *Stack) checkPorts() error {
	ports := map[string]int{"temporal": s.cfg.TemporalPort, "temporal web ui": s.cfg.UIPort,
		"ferretdb": s.cfg.MongoPort, "temco api": s.cfg.APIPort, "temco worker metrics": s.cfg.MetricsPort}
	if s.Postgres != nil {
		ports["postgres"] = s.Postgres.Port
	}
	for _, c := range s.plainClusters() {
		maps.Copy(ports, c.Ports())
	}
	if s.GitOps != nil {
		maps.Copy(ports, s.GitOps.ports())
		ports["git server"] = s.gitPort()
	}
	if s.CertManager != nil {
		maps.Copy(ports, s.CertManager.ports())
	}
	if s.Registry != nil {
		maps.Copy(ports, s.artifactPorts())
	}
	if s.Jaeger != nil {
		maps.Copy(ports, s.Jaeger.ports())
	}
	return CheckPortsFree(ports)
}

func (s *Stack) checkBinaries() error {
	bins := []string{"temporal", "ferretdb", "etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok"}
	if s.Temporal != nil && s.Temporal.Production != nil {
		bins = append(bins, "temporal-server", "temporal-sql-tool")
	}
	for _, f := range moduleCRDFolders { // the definitions every cluster applies
		bins = append(bins, filepath.Join("crds", f))
	}
	if s.GitOps != nil {
		bins = append(bins, gitOpsBinaries...)
	}
	if s.CertManager != nil {
		bins = append(bins, certManagerBinary)
	}
	if s.Registry != nil {
		bins = append(bins, registryBinary)
	}
	if s.Jaeger != nil {
		bins = append(bins, jaegerBinary)
	}
	for _, b := range bins {
		if _, err := os.Stat(filepath.Join(s.cfg.BinDir, b)); err != nil {
			return fmt.Errorf("%s is missing from %s: run `make tools`", b, s.cfg.BinDir)
		}
	}
	return nil
}

// startInfrastructure starts Temporal, FerretDB, the clusters, the OCI registry, the
// Helm repository and the trace collector concurrently.
func (s *Stack) startInfrastructure(ctx context.Context) error {
	if err := os.MkdirAll(s.cfg.DataDir, 0o755); err != nil { // 0755: PostgreSQL runs as its own user
		return err
	}
	temporal, mongo := s.Temporal.Start, s.Mongo.Start
	if s.Postgres != nil { // FerretDB's store, or the production Temporal's
		var pg sync.Once
		var pgErr error
		startPG := func(ctx context.Context) error { pg.Do(func() { pgErr = s.Postgres.Start(ctx) }); return pgErr }
		after := func(start func(context.Context) error) func(context.Context) error {
			return func(ctx context.Context) error {
				if err := startPG(ctx); err != nil {
					return err
				}
				return start(ctx)
			}
		}
		mongo = after(mongo)
		if s.Temporal.Production != nil {
			temporal = after(temporal)
		}
	}
	starters := []func(context.Context) error{temporal, mongo}
	for _, c := range s.plainClusters() {
		starters = append(starters, func(ctx context.Context) error {
			if err := c.Start(ctx); err != nil {
				return err
			}
			if err := c.WaitNodeReady(ctx, 60*time.Second); err != nil {
				return err
			}
			if s.CertManager != nil && s.CertManager.Cluster == c {
				return s.CertManager.Start(ctx)
			}
			return nil
		})
	}
	if s.GitOps != nil {
		starters = append(starters, s.startGitOps)
	}
	if s.Registry != nil {
		starters = append(starters, s.startArtifacts)
	}
	if s.Jaeger != nil {
		starters = append(starters, s.Jaeger.Start)
	}
	errs := make([]error, len(starters))
	var wg sync.WaitGroup
	for i, start := range starters {
		wg.Go(func() { errs[i] = start(ctx) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

func (s *Stack) startTemco(ctx context.Context) error {
	if err := seal.WriteNewKeyFile(s.KeyFile, "k1"); err != nil {
		return fmt.Errorf("encryption key: %w", err)
	}
	// The api first: it creates the collections' indexes the worker then finds in place.
	if err := s.StartAPI(ctx); err != nil {
		return err
	}
	if err := s.StartWorker(ctx); err != nil {
		return err
	}
	for i := 2; i <= s.cfg.Replicas; i++ {
		if err := s.startReplica(ctx, i); err != nil {
			return err
		}
	}
	if s.AgentCluster != nil {
		if err := s.startAgent(ctx); err != nil {
			return err
		}
	}
	if s.cfg.Hub && len(s.Clusters) > 0 {
		return s.StartHub(ctx)
	}
	return nil
}

// startReplica starts api and worker number i (2, 3, ...) beside the first ones: the api
// on a free port, the worker with its own metrics port and git cache.
func (s *Stack) startReplica(ctx context.Context, i int) error {
	apiPort, err := FreePort()
	if err != nil {
		return err
	}
	metricsPort, err := FreePort()
	if err != nil {
		return err
	}
	// The ports are kept, so that a restarted replica comes back where it was.
	s.mu.Lock()
	s.MoreAPIs, s.MoreWorkers = append(s.MoreAPIs, nil), append(s.MoreWorkers, nil)
	s.APIPorts, s.metricsPorts = append(s.APIPorts, apiPort), append(s.metricsPorts, metricsPort)
	s.mu.Unlock()
	if err := s.startReplicaAPI(ctx, i); err != nil {
		return err
	}
	return s.startReplicaWorker(ctx, i)
}

// startReplicaAPI (re)starts api number i (2, 3, ...) on its port and waits until it answers.
func (s *Stack) startReplicaAPI(ctx context.Context, i int) error {
	n := strconv.Itoa(i)
	s.mu.Lock()
	port := s.APIPorts[i-2]
	s.mu.Unlock()
	env := append(s.env(), "TEMCO_API_ADDR=127.0.0.1:"+strconv.Itoa(port))
	p, err := StartProc("temco api "+n, filepath.Join(s.cfg.DataDir, "logs", "api"+n+".log"), s.cfg.Self, []string{"api"}, env)
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.MoreAPIs[i-2] = p
	s.mu.Unlock()
	health := fmt.Sprintf("http://127.0.0.1:%d/healthz", port)
	return WaitReady(ctx, p, 60*time.Second, func(ctx context.Context) error { return temcoHealthy(ctx, health) })
}

// startReplicaWorker (re)starts worker number i (2, 3, ...) with its metrics port and git
// cache, and waits until it polls its task queue.
func (s *Stack) startReplicaWorker(ctx context.Context, i int) error {
	n := strconv.Itoa(i)
	s.mu.Lock()
	port := s.metricsPorts[i-2]
	s.mu.Unlock()
	env := append(s.env(), "TEMCO_METRICS_ADDR=127.0.0.1:"+strconv.Itoa(port),
		"TEMCO_GIT_CACHE="+filepath.Join(s.cfg.DataDir, "git", "cache"+n))
	p, err := StartProc("temco worker "+n, filepath.Join(s.cfg.DataDir, "logs", "worker"+n+".log"), s.cfg.Self, []string{"worker"}, env)
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.MoreWorkers[i-2] = p
	s.mu.Unlock()
	return WaitReady(ctx, p, 60*time.Second, func(ctx context.Context) error { return s.workerPolling(ctx, p.Cmd.Process.Pid) })
}

func (s *Stack) env() []string {
	env := append([]string{
		"TEMCO_MONGO_URI=" + s.Mongo.URI(), "TEMCO_MONGO_DB=temco", "TEMCO_KEY_FILE=" + s.KeyFile,
		"TEMCO_TEMPORAL_ADDRESS=" + s.Temporal.Address(), "TEMCO_TEMPORAL_NAMESPACE=" + s.namespace(),
		"TEMCO_TASK_QUEUE=" + s.cfg.TaskQueue,
		// The worker's clones of GitOps repositories outlive it, as its other data does.
		"TEMCO_GIT_CACHE=" + filepath.Join(s.cfg.DataDir, "git", "cache"),
		"TEMCO_API_ADDR=127.0.0.1:" + strconv.Itoa(s.cfg.APIPort),
		"TEMCO_METRICS_ADDR=127.0.0.1:" + strconv.Itoa(s.cfg.MetricsPort),
		"TEMCO_TEMPORAL_UI_URL=" + s.Temporal.UIURL(),
		fmt.Sprintf("TEMCO_CODEC_CORS_ORIGINS=http://127.0.0.1:%d,http://localhost:%d", s.cfg.UIPort, s.cfg.UIPort),
		// Notification receivers on this machine (a webhook an operator or a test runs):
		// a development stack's, never a shared temco's default.
		"TEMCO_NOTIFY_HOSTS_ALLOW=127.0.0.1,localhost",
	}, s.cfg.Env...)
	if s.Registry != nil { // charts by reference may come from the stack's registry and Helm repository
		env = append(env, ArtifactHostsAllowEnv+"="+s.artifactHostsAllow())
	}
	return append(env, s.tracesEnv()...)
}

// Env is the environment temco api and worker run with (a later entry overrides an earlier one).
func (s *Stack) Env() []string { return s.env() }

// StartAPI (re)starts temco api and waits until it answers.
func (s *Stack) StartAPI(ctx context.Context) error {
	health := fmt.Sprintf("http://127.0.0.1:%d/healthz", s.cfg.APIPort)
	return s.startTemcoProc(ctx, "temco api", "api", &s.API, func(ctx context.Context, _ *Proc) error { return temcoHealthy(ctx, health) })
}

// temcoHealthy succeeds when url, a temco process's /healthz, answers 200 "ok": not any
// server's 200. A port picked free can be taken by another stack's process before ours
// binds it (a Temporal UI answers every path), and ours then exits, which WaitReady sees.
func temcoHealthy(ctx context.Context, url string) error {
	resp, err := getURL(ctx, url)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64))
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK || string(body) != "ok" {
		return fmt.Errorf("%s: %s %.40q: not a temco process", url, resp.Status, body)
	}
	return nil
}

// StartWorker (re)starts temco worker and waits until it polls its task queue.
func (s *Stack) StartWorker(ctx context.Context) error {
	return s.startTemcoProc(ctx, "temco worker", "worker", &s.Worker, func(ctx context.Context, p *Proc) error {
		return s.workerPolling(ctx, p.Cmd.Process.Pid)
	})
}

// startTemcoProc starts `temco <cmd>` into *slot and waits until ready says so. One that
// exits before it is ready (its store or Temporal slow to answer on a loaded machine) is
// started again, twice at most, and the output says so.
func (s *Stack) startTemcoProc(ctx context.Context, name, cmd string, slot **Proc, ready func(context.Context, *Proc) error) error {
	for try := 1; ; try++ {
		p, err := StartProc(name, filepath.Join(s.cfg.DataDir, "logs", cmd+".log"), s.cfg.Self, []string{cmd}, s.env())
		if err != nil {
			return err
		}
		s.mu.Lock()
		*slot = p
		s.mu.Unlock()
		err = WaitReady(ctx, p, 60*time.Second, func(ctx context.Context) error { return ready(ctx, p) })
		if err == nil || p.Exited() == nil || try == 3 || ctx.Err() != nil {
			return err
		}
		if s.cfg.Out != nil {
			fmt.Fprintf(s.cfg.Out, "  %s exited while starting (%v); starting it again\n", name, err)
		}
	}
}

// workerPolling succeeds once the worker process pid polls the task queue (the SDK's
// default identity starts with "<pid>@").
func (s *Stack) workerPolling(ctx context.Context, pid int) error {
	c, err := client.DialContext(ctx, client.Options{HostPort: s.Temporal.Address(), Namespace: s.namespace(), Logger: quietLogger{}})
	if err != nil {
		return err
	}
	defer c.Close()
	resp, err := c.WorkflowService().DescribeTaskQueue(ctx, &workflowservice.DescribeTaskQueueRequest{
		Namespace: s.namespace(), TaskQueue: &taskqueuepb.TaskQueue{Name: s.cfg.TaskQueue},
		TaskQueueType: enumspb.TASK_QUEUE_TYPE_WORKFLOW,
	})
	if err != nil {
		return err
	}
	for _, p := range resp.GetPollers() {
		if strings.HasPrefix(p.GetIdentity(), strconv.Itoa(pid)+"@") {
			return nil
		}
	}
	return errNotReady
}

// CodecEndpoint is the api's codec (`temporal ... --codec-endpoint`): payloads are encrypted.
func (s *Stack) CodecEndpoint() string { return s.Temporal.CodecEndpoint }

// MetricsPort is the port of the worker's /metrics.
func (s *Stack) MetricsPort() int { return s.cfg.MetricsPort }

// MetricsPorts are the ports of every worker's /metrics, the first worker's first.
func (s *Stack) MetricsPorts() []int { return append([]int{s.cfg.MetricsPort}, s.metricsPorts...) }

// DataDir is where the stack keeps its state and logs.
func (s *Stack) DataDir() string { return s.cfg.DataDir }

// APIPort is the port of temco api.
func (s *Stack) APIPort() int { return s.cfg.APIPort }

func (s *Stack) namespace() string {
	if s.cfg.Namespace == "" {
		return "default"
	}
	return s.cfg.Namespace
}

// HTTPOK succeeds when url answers 200 OK.
func HTTPOK(ctx context.Context, url string) error { return httpAnswers(ctx, url, http.StatusOK) }

// httpAnswers succeeds when GET url answers one of codes.
func httpAnswers(ctx context.Context, url string, codes ...int) error {
	resp, err := getURL(ctx, url)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if !slices.Contains(codes, resp.StatusCode) {
		return fmt.Errorf("%s: %s", url, resp.Status)
	}
	return nil
}

// getURL sends GET url.
func getURL(ctx context.Context, url string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	return http.DefaultClient.Do(req)
}

// Procs lists every running process of the stack.
func (s *Stack) Procs() []*Proc {
	var out []*Proc
	s.mu.Lock()
	procs := append([]*Proc{s.API, s.Worker, s.HubProc, s.AgentProc}, s.MoreAPIs...)
	procs = append(procs, s.MoreWorkers...)
	s.mu.Unlock()
	procs = append(procs, s.Temporal.Proc(), s.Mongo.Proc())
	if s.Postgres != nil {
		procs = append(procs, s.Postgres.Proc())
	}
	for _, p := range procs {
		if p != nil {
			out = append(out, p)
		}
	}
	for _, c := range s.plainClusters() {
		out = append(out, c.Procs()...)
	}
	if s.CertManager != nil && s.CertManager.Proc() != nil {
		out = append(out, s.CertManager.Proc())
	}
	if s.GitOps != nil {
		out = append(out, s.GitOps.Procs()...)
	}
	if s.Registry != nil && s.Registry.Proc() != nil {
		out = append(out, s.Registry.Proc())
	}
	if s.Jaeger != nil && s.Jaeger.Proc() != nil {
		out = append(out, s.Jaeger.Proc())
	}
	return out
}

// Wait blocks until ctx ends or a process of the stack exits, and says which.
func (s *Stack) Wait(ctx context.Context) error {
	exited := make(chan *Proc, 1)
	for _, p := range s.Procs() {
		go func() {
			select {
			case <-p.Done():
				select {
				case exited <- p:
				default:
				}
			case <-ctx.Done():
			}
		}()
	}
	select {
	case <-ctx.Done():
		return nil
	case p := <-exited:
		return p.Exited()
	}
}

// Stop ends the supervisor first, so that nothing is restarted while the stack stops, then
// temco, then the clusters, the OCI registry and the Helm repository, FerretDB and Temporal.
func (s *Stack) Stop() {
	s.mu.Lock()
	sv := s.sv
	s.mu.Unlock()
	if sv != nil {
		sv.stop()
	}
	s.mu.Lock()
	hub, agent, api, worker := s.HubProc, s.AgentProc, s.API, s.Worker
	replicas := append(slices.Clone(s.MoreWorkers), s.MoreAPIs...)
	s.mu.Unlock()
	agent.Stop(15 * time.Second) // before the api it calls
	hub.Stop(15 * time.Second)
	for _, p := range replicas {
		p.Stop(15 * time.Second)
	}
	worker.Stop(15 * time.Second)
	api.Stop(15 * time.Second)
	if s.CertManager != nil && s.CertManager.Proc() != nil {
		s.CertManager.Stop() // before its cluster
	}
	var wg sync.WaitGroup
	for _, c := range s.plainClusters() {
		wg.Go(c.Stop)
	}
	if s.GitOps != nil {
		wg.Go(s.stopGitOps)
	}
	if s.Registry != nil {
		wg.Go(s.stopArtifacts)
	}
	if s.Jaeger != nil && s.Jaeger.Proc() != nil { // after temco, whose last spans it takes
		wg.Go(s.Jaeger.Stop)
	}
	wg.Go(func() {
		if s.Mongo.Proc() != nil {
			s.Mongo.Stop()
		}
		if s.Postgres != nil && s.Postgres.Proc() != nil {
			s.Postgres.Stop()
		}
	})
	if s.Temporal.Proc() != nil {
		wg.Go(s.Temporal.Stop)
	}
	wg.Wait()
}

// Summary prints where everything is.
func (s *Stack) Summary(w io.Writer) {
	fmt.Fprintf(w, "\ntemco is running\n")
	fmt.Fprintf(w, "  dashboard         http://127.0.0.1:%d/dashboard/\n", s.cfg.APIPort)
	fmt.Fprintf(w, "  REST API          http://127.0.0.1:%d/v2\n", s.cfg.APIPort)
	fmt.Fprintf(w, "  Temporal Web UI   %s\n", s.Temporal.UIURL())
	fmt.Fprintf(w, "  Temporal frontend %s (namespace %s, task queue %s)\n", s.Temporal.Address(), s.namespace(), s.cfg.TaskQueue)
	fmt.Fprintf(w, "  payload codec     %s (temporal --codec-endpoint; the Web UI uses it already)\n", s.CodecEndpoint())
	backend := "SQLite"
	if s.Postgres != nil {
		backend = "PostgreSQL on 127.0.0.1:" + strconv.Itoa(s.Postgres.Port)
	}
	fmt.Fprintf(w, "  MongoDB wire      %s (FerretDB, %s)\n", s.Mongo.URI(), backend)
	for _, c := range s.Clusters {
		fmt.Fprintf(w, "  cluster %-9s https://127.0.0.1:%d  kubeconfig %s\n", c.Name, c.APIPort(), c.Kubeconfig())
	}
	if s.CertManager != nil {
		s.CertManager.summary(w)
	}
	if s.GitOps != nil {
		s.gitOpsSummary(w)
	}
	if s.AgentCluster != nil {
		s.agentSummary(w)
	}
	if s.Registry != nil {
		s.artifactsSummary(w)
	}
	if s.Jaeger != nil {
		s.tracesSummary(w)
	}
	if s.HubProc != nil {
		fmt.Fprintf(w, "  temco hub         kubectl --kubeconfig %s get temco -A (temco.io objects; docs/hub.md)\n", s.Hub().Kubeconfig())
	}
	fmt.Fprintf(w, "  metrics           http://127.0.0.1:%d/metrics (api), http://127.0.0.1:%d/metrics (worker)\n", s.cfg.APIPort, s.cfg.MetricsPort)
	fmt.Fprintf(w, "  logs              %s\n", filepath.Join(s.cfg.DataDir, "logs"))
	fmt.Fprintf(w, "Stop with Ctrl-C.\n")
}
