package devstack

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/temco/temco/internal/adapters/gitops/layout"
	"github.com/temco/temco/internal/dev/gitserver"
)

// GitOps is the stack's GitOps cluster: a local cluster temco reaches only through git.
// Flux's source-controller and kustomize-controller, run outside it like its other
// components, apply what branch Branch of repository Repo on the stack's git server
// holds under Path(), as a cluster bootstrapped with `flux bootstrap` does.
type GitOps struct {
	Cluster  *Cluster
	Provider string // the cluster provider the cluster is known under: its id is <Provider>+<cluster>
	Repo     string // the repository on the stack's git server
	Branch   string
	User     string // may push to Repo (anyone may read it)
	Password string
	BinDir   string // holds source-controller, kustomize-controller and crds/flux
	Self     string // the temco binary, for `temco gitops-monitor`; empty: no monitor
	// Monitor tells whether `temco gitops-monitor` runs (the binary may not have it).
	Monitor bool

	git   *gitserver.Server
	mu    sync.Mutex // procs: a restart replaces one while others read them
	procs map[string]*Proc
}

const (
	gitOpsRepo   = "gitops"
	gitOpsBranch = "main"
	gitOpsUser   = "temco"
	// fluxNamespace holds the bootstrap GitRepository and Kustomization, both "flux-system",
	// as `flux bootstrap` names them.
	fluxNamespace = "flux-system"
	fluxName      = "flux-system"
	fluxInterval  = "10s"
	// monitorInterval is how often gitops-monitor reports status (EMCO's reacts to events).
	monitorInterval = "3s"
)

// ClusterID is how EMCO names the cluster in git paths and branches: <provider>+<cluster>.
func (g *GitOps) ClusterID() string { return g.Provider + "+" + g.Cluster.Name }

// Path is the folder of the repository the bootstrap Kustomization applies.
func (g *GitOps) Path() string { return "clusters/" + g.ClusterID() }

// URL is the clone URL of the repository.
func (g *GitOps) URL() string { return g.git.URL(g.Repo) }

// The ports of Flux's controllers follow the cluster's own three in its range of ten.
func (g *GitOps) sourceMetricsPort() int    { return g.Cluster.BasePort + 3 }
func (g *GitOps) sourceHealthPort() int     { return g.Cluster.BasePort + 4 }
func (g *GitOps) storagePort() int          { return g.Cluster.BasePort + 5 }
func (g *GitOps) kustomizeMetricsPort() int { return g.Cluster.BasePort + 6 }
func (g *GitOps) kustomizeHealthPort() int  { return g.Cluster.BasePort + 7 }

// ports lists the ports the cluster and its Flux controllers bind, for conflict checks.
func (g *GitOps) ports() map[string]int {
	ports := g.Cluster.Ports()
	n := g.Cluster.Name
	ports[n+" source-controller metrics"] = g.sourceMetricsPort()
	ports[n+" source-controller health"] = g.sourceHealthPort()
	ports[n+" source-controller storage"] = g.storagePort()
	ports[n+" kustomize-controller metrics"] = g.kustomizeMetricsPort()
	ports[n+" kustomize-controller health"] = g.kustomizeHealthPort()
	return ports
}

// gitOpsBinaries are what the GitOps cluster needs in BinDir beyond a cluster's.
var gitOpsBinaries = []string{"source-controller", "kustomize-controller", "crds/flux"}

// gitPassword reads the git user's password from file, or writes a new random one there,
// so that a restart on the same data keeps the credentials temco and Flux were given.
func gitPassword(file string) (string, error) {
	if b, err := os.ReadFile(file); err == nil && len(strings.TrimSpace(string(b))) > 0 {
		return strings.TrimSpace(string(b)), nil
	} else if err != nil && !errors.Is(err, os.ErrNotExist) {
		return "", err
	}
	raw := make([]byte, 16)
	if _, err := rand.Read(raw); err != nil {
		return "", err
	}
	password := hex.EncodeToString(raw)
	if err := os.MkdirAll(filepath.Dir(file), 0o700); err != nil {
		return "", err
	}
	return password, os.WriteFile(file, []byte(password+"\n"), 0o600)
}

// Start brings the cluster up, seeds the repository, bootstraps Flux on the cluster,
// starts its controllers (and gitops-monitor, when temco has it) and returns once the
// bootstrap Kustomization has applied the repository's head. The git server must be up.
func (g *GitOps) Start(ctx context.Context, out io.Writer) error {
	g.mu.Lock()
	g.procs = map[string]*Proc{}
	g.mu.Unlock()
	if err := g.Cluster.Start(ctx); err != nil {
		return err
	}
	if err := g.Cluster.WaitNodeReady(ctx, 60*time.Second); err != nil {
		return err
	}
	if err := g.seed(ctx); err != nil {
		return fmt.Errorf("seed %s: %w", g.URL(), err)
	}
	if err := g.bootstrap(ctx); err != nil {
		return fmt.Errorf("bootstrap Flux on %s: %w", g.Cluster.Name, err)
	}
	if err := g.startFlux(ctx); err != nil {
		return err
	}
	if err := g.startMonitor(ctx, out); err != nil {
		return err
	}
	return g.WaitApplied(ctx, 2*time.Minute)
}

// seed commits clusters/<id>/context/kustomization.yaml to the branch once, as temco
// writes it: without it the bootstrap Kustomization, which builds every manifest below
// its path, would also apply the deployments under context/ (each has its own).
func (g *GitOps) seed(ctx context.Context) error {
	file, body := layout.ContextKustomization(g.ClusterID())
	if _, err := g.git.Git(ctx, g.Repo, "cat-file", "-e", g.Branch+":"+file); err == nil {
		return nil
	}
	return g.Commit(ctx, map[string]string{file: string(body)}, "Seed "+g.Path()+": deployments under context/ apply on their own")
}

// Commit pushes files (path in the repository -> content) to the branch as one commit,
// through the git server as User, with the git CLI in a temporary clone.
func (g *GitOps) Commit(ctx context.Context, files map[string]string, message string) error {
	return g.commit(ctx, files, nil, message)
}

// Remove deletes paths from the branch as one commit.
func (g *GitOps) Remove(ctx context.Context, paths []string, message string) error {
	return g.commit(ctx, nil, paths, message)
}

func (g *GitOps) commit(ctx context.Context, files map[string]string, remove []string, message string) error {
	tmp, err := os.MkdirTemp("", "temco-gitops-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	// The password travels in the environment, not on a command line.
	env := append(os.Environ(), "GIT_TERMINAL_PROMPT=0", "GIT_CONFIG_COUNT=1",
		"GIT_CONFIG_KEY_0=credential.helper",
		"GIT_CONFIG_VALUE_0=!f() { echo username="+g.User+"; echo password="+g.Password+"; }; f")
	run := func(args ...string) error {
		cmd := exec.CommandContext(ctx, "git", append([]string{"-c", "user.name=temco", "-c", "user.email=temco@localhost"}, args...)...)
		cmd.Dir, cmd.Env = tmp, env
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("git %s: %w: %s", args[0], err, strings.TrimSpace(string(out)))
		}
		return nil
	}
	if err := run("clone", "--quiet", "--branch", g.Branch, g.URL(), "."); err != nil {
		return err
	}
	for path, content := range files {
		if err := os.MkdirAll(filepath.Join(tmp, filepath.Dir(path)), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(tmp, path), []byte(content), 0o644); err != nil {
			return err
		}
		if err := run("add", "--", path); err != nil {
			return err
		}
	}
	for _, path := range remove {
		if err := run("rm", "--quiet", "--", path); err != nil {
			return err
		}
	}
	if err := run("commit", "--quiet", "-m", message); err != nil {
		return err
	}
	return run("push", "--quiet", "origin", g.Branch)
}

// fluxControllers are Flux's controllers, in start order: source-controller serves the
// artifacts kustomize-controller applies.
var fluxControllers = []string{"source-controller", "kustomize-controller"}

// startFlux starts source-controller, waits until it serves the repository's artifact,
// then starts kustomize-controller and waits until it answers its readiness probe.
func (g *GitOps) startFlux(ctx context.Context) error {
	for _, name := range fluxControllers {
		if err := g.startFluxController(ctx, name); err != nil {
			return err
		}
	}
	return nil
}

// startFluxController (re)starts one of fluxControllers and waits until it is ready.
func (g *GitOps) startFluxController(ctx context.Context, name string) error {
	addr := func(port int) string { return "127.0.0.1:" + strconv.Itoa(port) }
	storage := addr(g.storagePort())
	storageDir := filepath.Join(g.Cluster.Dir, "flux", "storage")
	health, args := g.kustomizeHealthPort(), []string{"--metrics-addr=" + addr(g.kustomizeMetricsPort())}
	if name == "source-controller" {
		if err := os.MkdirAll(storageDir, 0o755); err != nil { // source-controller does not create it
			return err
		}
		health, args = g.sourceHealthPort(), []string{"--metrics-addr=" + addr(g.sourceMetricsPort()),
			"--storage-path=" + storageDir, "--storage-addr=" + storage, "--storage-adv-addr=" + storage}
	}
	env := []string{"KUBECONFIG=" + g.Cluster.Kubeconfig(), "RUNTIME_NAMESPACE=" + fluxNamespace}
	// Flux backs a failing reconcile off up to 15 minutes by default: on a loaded machine
	// a few early failures (source not served yet) then outlast any start-up wait.
	args = append([]string{"-n", strconv.Itoa(clusterNice), filepath.Join(g.BinDir, name),
		"--health-addr=" + addr(health), "--events-addr=", "--log-encoding=console",
		"--max-retry-delay=10s", "--requeue-dependency=5s"}, args...)
	p, err := StartProc(g.Cluster.Name+"/"+name, filepath.Join(g.Cluster.Dir, name+".log"), "nice", args, env)
	if err != nil {
		return err
	}
	g.setProc(name, p)
	ready := fmt.Sprintf("http://%s/readyz", addr(health))
	if err := WaitReady(ctx, p, 60*time.Second, func(ctx context.Context) error { return HTTPOK(ctx, ready) }); err != nil {
		return err
	}
	// A restart on other ports leaves the stored artifact's URL on the old storage
	// address until source-controller rewrites it; kustomize-controller fetching it
	// first would spend minutes retrying a dead port.
	if name == "source-controller" {
		return g.waitArtifact(ctx, p, "http://"+storage+"/")
	}
	return nil
}

// proc is the process of Flux's controller or the monitor by name (nil: not running).
func (g *GitOps) proc(name string) *Proc {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.procs[name]
}

func (g *GitOps) setProc(name string, p *Proc) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.procs[name] = p
}

// startMonitor starts `temco gitops-monitor`, which commits the status of the cluster's
// deployments to branch <provider>+<cluster>, as EMCO's monitor does. A temco without the
// command gets a GitOps cluster without status reports, and a note says so.
func (g *GitOps) startMonitor(ctx context.Context, out io.Writer) error {
	if g.Self == "" {
		return nil
	}
	if err := exec.CommandContext(ctx, g.Self, "gitops-monitor", "--help").Run(); err != nil {
		if out != nil {
			fmt.Fprintf(out, "devstack: %s has no gitops-monitor command: %s runs without status reports\n", g.Self, g.ClusterID())
		}
		return nil
	}
	env := []string{"KUBECONFIG=" + g.Cluster.Kubeconfig(), "GIT_URL=" + g.URL(), "GIT_REPO=" + g.Repo,
		"GIT_USERNAME=" + g.User, "GIT_TOKEN=" + g.Password, "GIT_BRANCH=" + g.Branch,
		"GIT_CLUSTERNAME=" + g.ClusterID(), "TEMCO_MONITOR_INTERVAL=" + monitorInterval}
	p, err := StartProc(g.Cluster.Name+"/gitops-monitor", filepath.Join(g.Cluster.Dir, "gitops-monitor.log"),
		"nice", []string{"-n", strconv.Itoa(clusterNice), g.Self, "gitops-monitor"}, env)
	if err != nil {
		return err
	}
	g.setProc("gitops-monitor", p)
	g.Monitor = true
	return nil
}

// Procs lists the running processes of the cluster, Flux's and the monitor included.
func (g *GitOps) Procs() []*Proc {
	out := g.Cluster.Procs()
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, p := range g.procs {
		out = append(out, p)
	}
	return out
}

// Stop ends the monitor and Flux's controllers, then the cluster.
func (g *GitOps) Stop() {
	g.mu.Lock()
	procs := g.procs
	g.procs = map[string]*Proc{}
	g.mu.Unlock()
	done := make(chan struct{})
	for _, p := range procs {
		go func() { p.Stop(10 * time.Second); done <- struct{}{} }()
	}
	for range procs {
		<-done
	}
	g.Cluster.Stop()
}

// configureGitOps adds the GitOps cluster after the others, and the git server.
func (s *Stack) configureGitOps() {
	name := "cluster" + strconv.Itoa(s.cfg.Clusters+1)
	c := &Cluster{Name: name, BinDir: s.cfg.BinDir, Dir: filepath.Join(s.cfg.DataDir, "clusters", name),
		BasePort: s.cfg.ClusterBasePort + 10*s.cfg.Clusters}
	s.Git = &gitserver.Server{Root: filepath.Join(s.cfg.DataDir, "git", "repos"), AnonymousRead: true}
	s.GitOps = &GitOps{Cluster: c, Provider: cmp.Or(s.cfg.GitOpsProvider, "local"), Repo: gitOpsRepo, Branch: gitOpsBranch,
		User: gitOpsUser, BinDir: s.cfg.BinDir, Self: s.cfg.Self, git: s.Git}
	s.Git.Addr = "127.0.0.1:" + strconv.Itoa(s.gitPort())
}

func (s *Stack) gitPort() int {
	if s.cfg.GitPort != 0 {
		return s.cfg.GitPort
	}
	return s.GitOps.Cluster.BasePort + 8
}

// gitPasswordFile keeps the git user's password across restarts.
func (s *Stack) gitPasswordFile() string { return filepath.Join(s.cfg.DataDir, "git", "password") }

// startGitOps starts the git server, then the GitOps cluster.
func (s *Stack) startGitOps(ctx context.Context) error {
	if err := s.startGit(ctx); err != nil {
		return err
	}
	return s.GitOps.Start(ctx, s.cfg.Out)
}

// stopGitOps stops the GitOps cluster, then the git server.
func (s *Stack) stopGitOps() {
	s.GitOps.Stop()
	_ = s.Git.Stop()
}

// startGit starts the git server with the GitOps repository in place.
func (s *Stack) startGit(ctx context.Context) error {
	password, err := gitPassword(s.gitPasswordFile())
	if err != nil {
		return fmt.Errorf("git password: %w", err)
	}
	s.GitOps.Password = password
	s.Git.Users = map[string]string{s.GitOps.User: password}
	if err := s.Git.Start(); err != nil {
		return err
	}
	if err := s.Git.CreateRepo(ctx, s.GitOps.Repo, s.GitOps.Branch); err != nil {
		return fmt.Errorf("git server: create %s: %w", s.GitOps.Repo, err)
	}
	return nil
}

func (s *Stack) gitOpsSummary(w io.Writer) {
	g := s.GitOps
	fmt.Fprintf(w, "  git server        %s (branch %s; push as %s, password in %s; anyone may read)\n",
		g.URL(), g.Branch, g.User, s.gitPasswordFile())
	fmt.Fprintf(w, "  GitOps cluster    %s https://127.0.0.1:%d  kubeconfig %s\n", g.ClusterID(), g.Cluster.APIPort(), g.Cluster.Kubeconfig())
	fmt.Fprintf(w, "                    Flux applies %s of branch %s (logs in %s)\n", g.Path(), g.Branch, g.Cluster.Dir)
	if g.Monitor {
		fmt.Fprintf(w, "                    gitops-monitor reports status to branch %s\n", g.ClusterID())
	} else {
		fmt.Fprintf(w, "                    no gitops-monitor: deployments' status is not reported\n")
	}
}
