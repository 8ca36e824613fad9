package devstack

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/crypto/bcrypt"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/repo"
	"sigs.k8s.io/yaml"
)

// Registry is CNCF distribution's registry (tools/build.sh builds it): the stack's OCI
// registry, holding charts pushed as OCI artifacts (oci://<Address>/<repo>/<chart>) in
// Dir/data. Every request needs basic auth as User (htpasswd); the password is kept in
// Dir/password, so that a restart on the same data keeps it.
type Registry struct {
	Bin      string // the registry binary
	Dir      string // config.yml, htpasswd, password and data/ (the storage)
	LogFile  string // where it logs; "": Dir/registry.log
	Port     int
	User     string
	Password string               // set by Start
	proc     atomic.Pointer[Proc] // replaced by a restart while others read it
}

const (
	registryBinary = "registry"
	registryUser   = "temco"
	// ArtifactHostsAllowEnv lists the hosts (host:port, comma-separated) temco's worker and
	// api may fetch charts from: the stack adds its registry and Helm repository.
	ArtifactHostsAllowEnv = "TEMCO_ARTIFACT_HOSTS_ALLOW"
)

// Address is the registry's host:port, as OCI references name it.
func (r *Registry) Address() string { return "127.0.0.1:" + strconv.Itoa(r.Port) }

// PasswordFile keeps User's password across restarts.
func (r *Registry) PasswordFile() string { return filepath.Join(r.Dir, "password") }

// Log is where the registry logs.
func (r *Registry) Log() string {
	if r.LogFile != "" {
		return r.LogFile
	}
	return filepath.Join(r.Dir, "registry.log")
}

// Start writes the registry's configuration, starts it and waits until /v2/ answers.
func (r *Registry) Start(ctx context.Context) error {
	if err := os.MkdirAll(filepath.Join(r.Dir, "data"), 0o700); err != nil {
		return err
	}
	password, err := gitPassword(r.PasswordFile())
	if err != nil {
		return fmt.Errorf("registry password: %w", err)
	}
	r.Password = password
	config, err := r.writeConfig()
	if err != nil {
		return fmt.Errorf("registry configuration: %w", err)
	}
	// Tracing exports to an OTLP collector on localhost:4318 unless told otherwise.
	p, err := StartProc("oci registry", r.Log(), r.Bin, []string{"serve", config}, []string{"OTEL_TRACES_EXPORTER=none"})
	if err != nil {
		return err
	}
	r.proc.Store(p)
	base := "http://" + r.Address() + "/v2/"
	if err := WaitReady(ctx, p, 60*time.Second, func(ctx context.Context) error { return registryAnswers(ctx, base) }); err != nil {
		p.Stop(5 * time.Second)
		r.proc.Store(nil)
		return err
	}
	return nil
}

// writeConfig writes the htpasswd file and config.yml, and returns the latter's path.
func (r *Registry) writeConfig() (string, error) {
	hash, err := bcrypt.GenerateFromPassword([]byte(r.Password), bcrypt.DefaultCost)
	if err != nil {
		return "", err
	}
	htpasswd := filepath.Join(r.Dir, "htpasswd")
	if err := os.WriteFile(htpasswd, []byte(r.User+":"+string(hash)+"\n"), 0o600); err != nil {
		return "", err
	}
	secret := make([]byte, 32) // signs upload state; one instance, so a new one each start
	if _, err := rand.Read(secret); err != nil {
		return "", err
	}
	config := map[string]any{
		"version": "0.1",
		"log":     map[string]any{"level": "warn", "formatter": "text", "accesslog": map[string]any{"disabled": true}},
		"storage": map[string]any{
			"filesystem":  map[string]any{"rootdirectory": filepath.Join(r.Dir, "data")},
			"delete":      map[string]any{"enabled": true},
			"maintenance": map[string]any{"uploadpurging": map[string]any{"enabled": false}},
		},
		"auth": map[string]any{"htpasswd": map[string]any{"realm": "temco", "path": htpasswd}},
		"http": map[string]any{"addr": r.Address(), "secret": hex.EncodeToString(secret),
			"headers": map[string]any{"X-Content-Type-Options": []string{"nosniff"}}},
	}
	data, err := yaml.Marshal(config)
	if err != nil {
		return "", err
	}
	path := filepath.Join(r.Dir, "config.yml")
	return path, os.WriteFile(path, data, 0o600)
}

// registryAnswers succeeds when GET url (the registry's /v2/) answers 200, or 401 (it
// asks for credentials).
func registryAnswers(ctx context.Context, url string) error {
	return httpAnswers(ctx, url, http.StatusOK, http.StatusUnauthorized)
}

// Proc is the running registry (nil before Start).
func (r *Registry) Proc() *Proc { return r.proc.Load() }

// Stop ends the registry.
func (r *Registry) Stop() {
	r.proc.Load().Stop(10 * time.Second)
	r.proc.Store(nil)
}

// HelmRepo is the stack's Helm chart repository: the chart archives in Dir and the
// index.yaml Helm's own repo package generates for them, served as static files over HTTP
// by this process, as a real repository is. Anyone may read; Publish adds a chart.
type HelmRepo struct {
	Dir  string
	Addr string // host:port; "127.0.0.1:0" picks a free port on Start

	mu  sync.Mutex
	srv *http.Server
}

// URL is the repository's URL (`helm repo add <name> <URL>`).
func (h *HelmRepo) URL() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return "http://" + h.Addr
}

// Host is the repository's host:port.
func (h *HelmRepo) Host() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.Addr
}

// Start indexes Dir and serves it until Stop.
func (h *HelmRepo) Start() error {
	if err := os.MkdirAll(h.Dir, 0o755); err != nil {
		return err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.srv != nil {
		return errors.New("helm repository: already started")
	}
	ln, err := net.Listen("tcp", h.Addr)
	if err != nil {
		return fmt.Errorf("helm repository: %w", err)
	}
	h.Addr = ln.Addr().String()
	// The index names the archives by URL: written again for this address.
	if err := h.reindex(); err != nil {
		ln.Close()
		return err
	}
	files := http.FileServer(http.Dir(h.Dir))
	h.srv = &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "read-only", http.StatusMethodNotAllowed)
			return
		}
		files.ServeHTTP(w, r)
	})}
	go func() { _ = h.srv.Serve(ln) }()
	return nil
}

// Stop closes the listener and every connection.
func (h *HelmRepo) Stop() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.srv == nil {
		return nil
	}
	err := h.srv.Close()
	h.srv = nil
	return err
}

// Publish writes chart archive tgz to Dir as filename (a .tgz name, no folder) and
// generates index.yaml again; an archive Helm cannot load as a chart is refused.
func (h *HelmRepo) Publish(tgz []byte, filename string) error {
	if filename != filepath.Base(filename) || !strings.HasSuffix(filename, ".tgz") || strings.HasPrefix(filename, ".") {
		return fmt.Errorf("helm repository: %q is not the file name of a chart archive (name.tgz)", filename)
	}
	if _, err := loader.LoadArchive(bytes.NewReader(tgz)); err != nil {
		return fmt.Errorf("helm repository: %s is not a chart: %w", filename, err)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if err := os.MkdirAll(h.Dir, 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(h.Dir, ".publish-")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := io.Copy(tmp, bytes.NewReader(tgz)); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), filepath.Join(h.Dir, filename)); err != nil {
		return err
	}
	return h.reindex()
}

// reindex writes Dir/index.yaml for the archives in Dir, as `helm repo index` does; h.mu held.
func (h *HelmRepo) reindex() error {
	index, err := repo.IndexDirectory(h.Dir, "http://"+h.Addr)
	if err != nil {
		return fmt.Errorf("helm repository: index %s: %w", h.Dir, err)
	}
	index.SortEntries()
	return index.WriteFile(filepath.Join(h.Dir, "index.yaml"), 0o644)
}

// configureArtifacts adds the registry, which logs beside temco (tests keep those logs
// when they fail), and the Helm repository. They take the last two ports of cluster1's
// range of ten (its own take +0 .. +2, cert-manager's +3), so stacks on other cluster
// ranges never collide; without a cluster, free ports.
func (s *Stack) configureArtifacts() error {
	ports := []int{s.cfg.RegistryPort, s.cfg.HelmRepoPort}
	for i := range ports {
		var err error
		switch {
		case ports[i] != 0:
		case s.cfg.Clusters > 0:
			ports[i] = s.cfg.ClusterBasePort + 8 + i
		default:
			if ports[i], err = FreePort(); err != nil {
				return err
			}
		}
	}
	s.Registry = &Registry{Bin: filepath.Join(s.cfg.BinDir, registryBinary), Dir: filepath.Join(s.cfg.DataDir, "registry"),
		LogFile: filepath.Join(s.cfg.DataDir, "logs", "registry.log"), Port: ports[0], User: registryUser}
	s.HelmRepo = &HelmRepo{Dir: filepath.Join(s.cfg.DataDir, "helmrepo"), Addr: "127.0.0.1:" + strconv.Itoa(ports[1])}
	return nil
}

func (s *Stack) artifactPorts() map[string]int {
	_, port, _ := net.SplitHostPort(s.HelmRepo.Host())
	helm, _ := strconv.Atoi(port)
	return map[string]int{"oci registry": s.Registry.Port, "helm repository": helm}
}

// startArtifacts starts the Helm repository, then the registry.
func (s *Stack) startArtifacts(ctx context.Context) error {
	if err := s.HelmRepo.Start(); err != nil {
		return err
	}
	return s.Registry.Start(ctx)
}

// stopArtifacts stops the registry and the Helm repository.
func (s *Stack) stopArtifacts() {
	if s.Registry.Proc() != nil {
		s.Registry.Stop()
	}
	_ = s.HelmRepo.Stop()
}

// artifactHostsAllow is TEMCO_ARTIFACT_HOSTS_ALLOW for temco api and worker: the value
// Config.Env (or else this process's environment) gives, with the registry and the Helm
// repository added.
func (s *Stack) artifactHostsAllow() string {
	value, set := os.LookupEnv(ArtifactHostsAllowEnv)
	for _, e := range s.cfg.Env {
		if v, ok := strings.CutPrefix(e, ArtifactHostsAllowEnv+"="); ok {
			value, set = v, true
		}
	}
	var hosts []string
	if set {
		for h := range strings.SplitSeq(value, ",") {
			if h = strings.TrimSpace(h); h != "" {
				hosts = append(hosts, h)
			}
		}
	}
	for _, h := range []string{s.Registry.Address(), s.HelmRepo.Host()} {
		if !slices.Contains(hosts, h) {
			hosts = append(hosts, h)
		}
	}
	return strings.Join(hosts, ",")
}

func (s *Stack) artifactsSummary(w io.Writer) {
	fmt.Fprintf(w, "  OCI registry      oci://%s (user %s, password in %s; no anonymous access)\n",
		s.Registry.Address(), s.Registry.User, s.Registry.PasswordFile())
	fmt.Fprintf(w, "  Helm repository   %s (the charts in %s and their index.yaml; anyone may read)\n", s.HelmRepo.URL(), s.HelmRepo.Dir)
}
